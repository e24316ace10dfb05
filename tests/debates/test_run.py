"""Whole debates run through the real Celery canvas against the fake model server."""

from __future__ import annotations

import json
import time

import pytest

from debates.models import Ballot, Decision, Message, Vote
from debates.services import debate_cancel, debate_retry, debate_start
from tests.debates.conftest import failed_in_round_two, wait_for, wait_until_finished
from tests.debates.events_helpers import (
    TWO_BY_TWO_EVENTS,
    last_status,
    published,
    published_types,
)
from tests.fakes.llm_server import Reply
from tests.threads import outcomes_at_once

pytestmark = pytest.mark.django_db(transaction=True)

COINS = ("BTCUSDT", "ETHUSDT", "SOLUSDT")


def vote_text(actions: dict[str, tuple[str, int]]) -> str:
    """Return a contract answer voting ``action`` with ``confidence`` per coin."""
    decisions = [
        {
            "symbol": symbol,
            "action": action,
            "confidence": confidence,
            "leverage": 4,
            "position_pct": 0.2,
            "stop_loss": 0.02,
            "take_profit": 0.05,
            "reasoning": f"{action} {symbol}",
        }
        for symbol, (action, confidence) in actions.items()
    ]
    return f"<reasoning>Final view.</reasoning>\n<decision>{json.dumps(decisions)}</decision>"


def script_votes(llm, votes: dict[str, dict[str, tuple[str, int]]]) -> None:
    """Answer the vote of each participant label (P1, P2, ...) with the given actions."""
    for label, actions in votes.items():
        llm.add_rule(Reply.answer(vote_text(actions), match=f"final vote. You are {label},"))


def test_three_by_three_debate_completes_with_the_scripted_consensus(
    celery_worker, llm, make_debate
):
    # given a 3-participant, 3-round debate and scripted votes
    debate = make_debate()
    script_votes(
        llm,
        {
            "P1": {"BTCUSDT": ("open_long", 80), "ETHUSDT": ("wait", 60), "SOLUSDT": ("hold", 50)},
            "P2": {"BTCUSDT": ("open_short", 60), "ETHUSDT": ("wait", 70), "SOLUSDT": ("hold", 40)},
            "P3": {
                "BTCUSDT": ("open_long", 70),
                "ETHUSDT": ("open_long", 90),
                "SOLUSDT": ("wait", 30),
            },
        },
    )
    # when it is started and the worker runs it
    debate_start(debate_id=debate.pk)
    finished = wait_until_finished(debate.pk)
    # then it completed with every turn, every vote and the scripted consensus
    assert finished.status == "completed"
    assert finished.phase == "done"
    assert Message.objects.filter(debate=debate, status="ok").count() == 9
    assert Vote.objects.filter(debate=debate, abstained=False).count() == 9
    decisions = {d.symbol: d for d in Decision.objects.filter(debate=debate)}
    assert {s: (d.action, d.confidence) for s, d in decisions.items()} == {
        "BTCUSDT": ("open_long", 75.0),
        "ETHUSDT": ("wait", 65.0),
        "SOLUSDT": ("hold", 45.0),
    }
    assert decisions["BTCUSDT"].scores == {"open_long": 1.5, "open_short": 0.6}
    assert decisions["BTCUSDT"].is_primary
    assert len(llm.requests) == 12


def test_events_are_published_in_order(celery_worker, llm, make_debate):
    # given a 2x2 debate
    debate = make_debate(personalities=("bull", "bear"), rounds=2)
    # when it runs
    debate_start(debate_id=debate.pk)
    wait_until_finished(debate.pk)
    # (events go out just after the commit they announce)
    wait_for(lambda: last_status(debate.pk) == "completed")
    # then the stream tells the run in order (status changes between speakers omitted)
    kinds = [t for t in published_types(debate.pk) if t != "status"]
    assert kinds == TWO_BY_TWO_EVENTS
    statuses = [data["status"] for t, data in published(debate.pk) if t == "status"]
    assert statuses[0] == "running"
    assert statuses[-1] == "completed"
    assert statuses.index("voting") > statuses.index("running")
    consensus = next(data for t, data in published(debate.pk) if t == "consensus")
    assert [d["symbol"] for d in consensus["decisions"]] == ["BTCUSDT", "ETHUSDT", "SOLUSDT"]
    assert consensus["decisions"][0]["is_primary"] is True


def test_later_rounds_see_every_earlier_message(celery_worker, llm, make_debate):
    debate = make_debate(rounds=3)
    debate_start(debate_id=debate.pk)
    wait_until_finished(debate.pk)
    turns = [r for r in llm.requests if "final vote" not in r.prompt]
    round3 = [r for r in turns if "round 3/3" in r.prompt]
    assert len(round3) == 3
    # the last speaker of round 3 sees rounds 1 and 2 of everyone and round 3 of P1 and P2
    last = round3[-1].prompt
    for label in ("P1", "P2", "P3"):
        assert f"{label} " in last


def test_twenty_concurrent_starts_launch_one_run(celery_worker, llm, make_debate):
    # given a pending debate
    debate = make_debate()
    # when 20 threads start it at once
    outcomes = outcomes_at_once(lambda: debate_start(debate_id=debate.pk), 20)
    wait_until_finished(debate.pk)
    # then one start went through, 19 were refused, and the model was asked 12 times
    assert outcomes == ["done"] + ["invalid_state"] * 19
    assert len(llm.requests) == 12
    assert Message.objects.filter(debate=debate).count() == 9


def test_cancel_mid_round_stops_every_later_call(celery_worker, llm, make_debate):
    # given a running debate in round 2 with a model call in flight
    llm.set_latency(0.5)
    debate = make_debate()
    debate_start(debate_id=debate.pk)
    wait_for(lambda: Message.objects.filter(debate=debate, round=2).exists(), timeout=30)
    wait_for(lambda: llm.stats()["in_flight"] == 1, timeout=10)
    # when it is cancelled
    debate_cancel(debate_id=debate.pk)
    asked = len(llm.requests)
    stored = Message.objects.filter(debate=debate).count()
    # then the call in flight is abandoned and no later call starts
    wait_for(lambda: llm.stats()["in_flight"] == 0, timeout=10)
    time.sleep(1.5)
    assert len(llm.requests) == asked
    debate.refresh_from_db()
    assert debate.status == "cancelled"
    assert Message.objects.filter(debate=debate).count() == stored
    assert not Ballot.objects.filter(debate=debate).exists()


def test_a_participant_that_always_fails_is_recorded_and_the_debate_completes(
    celery_worker, llm, make_debate
):
    # given the bear's model always answers 400 (terminal: not retried)
    llm.add_rule(Reply.error(400, "bad request", match="You are P2, the"))
    debate = make_debate()
    # when the debate runs
    debate_start(debate_id=debate.pk)
    finished = wait_until_finished(debate.pk)
    # then its three turns are stored as errors, its vote abstains, the debate completes
    assert finished.status == "completed"
    failed = Message.objects.filter(debate=debate, status="error")
    assert failed.count() == 3
    assert {m.participant.speak_order for m in failed} == {1}
    assert {m.error["code"] for m in failed} == {"bad_request"}
    assert Vote.objects.filter(debate=debate, abstained=True).count() == 3
    assert "error" in published_types(debate.pk)


def test_every_participant_failing_fails_the_debate_with_a_reason(celery_worker, llm, make_debate):
    llm.add_rule(Reply.error(401, "invalid key", match="You are"))
    debate = make_debate(rounds=2)
    debate_start(debate_id=debate.pk)
    finished = wait_until_finished(debate.pk)
    assert finished.status == "failed"
    assert finished.error == {
        "step": "round 1",
        "code": "round_failed",
        "message": "Every turn of round 1 failed.",
    }
    statuses = [data for kind, data in published(debate.pk) if kind == "status"]
    last = statuses[-1]
    steps = last.pop("steps")
    assert last == {
        "status": "failed",
        "phase": "opening",
        "pace": "auto",
        "current_round": 1,
        "current_speaker": None,
        "level_used": "",
        "current_step": 1,
        "user_action_required": False,
        "can_advance": False,
        "available_actions": ["retry_step", "retry", "delete"],
        "human_due_at": None,
        "error": finished.error,
    }
    # the plan: prepared, every opening failed, the rest still to run after a retry
    assert [step["status"] for step in steps] == ["done", *["failed"] * 3, *["pending"] * 7]
    assert Message.objects.filter(debate=debate).count() == 3
    assert not Message.objects.filter(debate=debate, round=2).exists()


def test_a_voter_answering_garbage_abstains_and_the_others_decide(celery_worker, llm, make_debate):
    llm.add_rule(Reply.answer("I think it will go up, probably.", match="final vote. You are P3,"))
    debate = make_debate(rounds=2)
    debate_start(debate_id=debate.pk)
    finished = wait_until_finished(debate.pk)
    assert finished.status == "completed"
    ballot = Ballot.objects.get(debate=debate, participant__speak_order=2)
    assert (ballot.status, ballot.parse_status) == ("ok", "failed")
    assert list(
        Vote.objects.filter(ballot=ballot).values_list("symbol", "abstained", "action")
    ) == [(coin, True, "") for coin in COINS]
    for decision in Decision.objects.filter(debate=debate):
        assert decision.voters == 2


def test_retry_resumes_from_the_failed_round_reusing_stored_turns(celery_worker, llm, make_debate):
    # given a debate whose round 2 fails entirely (every model refuses round 2 once)
    debate = failed_in_round_two(llm, make_debate)
    round1 = set(Message.objects.filter(debate=debate, round=1).values_list("pk", flat=True))
    asked = len(llm.requests)
    # when it is retried
    debate_retry(debate_id=debate.pk)
    finished = wait_until_finished(debate.pk)
    # then round 1 was reused, round 2 asked again, and the debate completed
    assert finished.status == "completed"
    assert (
        set(Message.objects.filter(debate=debate, round=1).values_list("pk", flat=True)) == round1
    )
    assert Message.objects.filter(debate=debate, round=2, status="ok").count() == 3
    assert len(llm.requests) == asked + 3 + 3
