"""What a debate's start and steps cost the database, and when a step checks for a cancel.

Each step is on the critical path of a debate (rounds 2..N speak one after another),
so a statement added to it, or a column read lazily, shows here first.
"""

from __future__ import annotations

import re
import threading
import time
from dataclasses import replace

import pytest
import redis
from celery import chain, group
from django.conf import settings
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django_eventstream.models import EventCounter

from arena.sse import debate_channel
from debates.claims import StepDeferred
from debates.locks import lock_debate
from debates.models import (
    AIModel,
    Ballot,
    Debate,
    DebateStatus,
    Decision,
    JudgeCall,
    Message,
)
from debates.providers.slots import ANONYMOUS, STILL_AFTER_S
from debates.selectors import debate_state
from debates.serializers import DecisionSerializer
from debates.services import (
    calls,
    consensus_finalize,
    debate_cancel,
    debate_delete,
    debate_prepare,
    debate_start,
    judge_round_run,
    runs,
    turn_run,
    vote_run,
)
from debates.services.costs import prices_forget
from debates.services.steps import context
from debates.state import debate_plan
from debates.tasks import (
    consensus_finalize_task,
    prepare_run_task,
    turn_run_task,
    vote_run_task,
)
from strategies.models import Strategy
from tests.broker import queued
from tests.debates.events_helpers import published
from tests.threads import in_thread

pytestmark = pytest.mark.django_db(transaction=True)


def running(debate: Debate) -> list[int]:
    """Move a pending debate to its first round, as a start does; return its seats."""
    Debate.objects.filter(pk=debate.pk).update(status=DebateStatus.RUNNING, current_round=1)
    assert debate_prepare(debate_id=debate.pk)
    return list(debate.participants.order_by("speak_order").values_list("pk", flat=True))


def voting(debate: Debate) -> list[int]:
    """Run every turn of a pending debate, which then votes; return its seats."""
    seats = running(debate)
    for round_number in range(1, debate.max_rounds + 1):
        for seat in seats:
            turn_run(
                debate_id=debate.pk, round_number=round_number, participant_id=seat, holder="t"
            )
    return seats


def statements(step) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        step()
    return [query["sql"] for query in captured.captured_queries]


def test_a_turn_reads_its_context_and_stores_in_one_short_transaction(make_debate):
    debate = make_debate(rounds=2)
    seats = running(debate)
    prices_forget()
    opening = statements(
        lambda: turn_run(debate_id=debate.pk, round_number=1, participant_id=seats[0], holder="t")
    )
    # The context: the seats with their models (and their temperatures) read with their
    # debate, its strategy's texts and its call's limits (the output cap, the budgets),
    # then the earlier turns; and, as the process's first call, the price table. Then
    # one transaction under the debate's row lock: its stored turns, the message, the
    # state's compare-and-set, the events (the state and its plan are announced from
    # what the step holds).
    assert len(opening) == 2 + 1 + 7, "\n".join(opening)
    assert opening[3:4] + opening[-1:] == ["BEGIN", "COMMIT"]
    assert opening[4].endswith("FOR NO KEY UPDATE")
    # Only the simulated model reads the market snapshot itself; this one is sent its
    # rendering.
    assert not [sql for sql in opening[:2] if '"market_snapshot"' in sql]
    for seat in seats[1:-1]:
        turn_run(debate_id=debate.pk, round_number=1, participant_id=seat, holder="test")
    last_opening = statements(
        lambda: turn_run(debate_id=debate.pk, round_number=1, participant_id=seats[-1], holder="t")
    )
    # Closing round 1 adds one read, the debate's level settings (the gate), to the
    # transaction: the openings' answers are those its own read of the turns holds.
    assert len(last_opening) == 2 + 7 + 1, "\n".join(last_opening)

    rebuttal = statements(
        lambda: turn_run(debate_id=debate.pk, round_number=2, participant_id=seats[0], holder="t")
    )
    assert len(rebuttal) == 2 + 7, "\n".join(rebuttal)
    assert sum("FOR NO KEY UPDATE" in sql for sql in rebuttal) == 1

    for seat in seats[1:-1]:
        turn_run(debate_id=debate.pk, round_number=2, participant_id=seat, holder="test")
    closing = statements(
        lambda: turn_run(debate_id=debate.pk, round_number=2, participant_id=seats[-1], holder="t")
    )
    # The last turn of the last round moves the debate to voting with no extra statement.
    assert len(closing) == 2 + 7, "\n".join(closing)
    assert Debate.objects.get(pk=debate.pk).status == DebateStatus.VOTING
    assert Message.objects.filter(debate=debate).count() == 2 * len(seats)
    assert not [sql for sql in opening + rebuttal + closing if "cursor" in sql.lower()]


def test_a_stored_turn_is_not_asked_again_and_costs_its_context_reads(make_debate, llm):
    debate = make_debate(rounds=2)
    seats = running(debate)
    turn_run(debate_id=debate.pk, round_number=1, participant_id=seats[0], holder="test")
    asked = len(llm.requests)

    again = statements(
        lambda: turn_run(debate_id=debate.pk, round_number=1, participant_id=seats[0], holder="t")
    )

    assert len(again) == 2, "\n".join(again)
    assert len(llm.requests) == asked


def test_a_step_asks_with_the_model_and_strategy_as_they_are_now(make_debate, llm):
    debate = make_debate(rounds=2)
    seats = running(debate)
    for seat in seats:
        turn_run(debate_id=debate.pk, round_number=1, participant_id=seat, holder="test")
    # Edited while the debate runs, after this process has read the debate's fixed part,
    # to another model the server serves.
    llm.local_models.add("renamed-model")
    AIModel.objects.filter(participants__pk=seats[0]).update(
        model_name="renamed-model", api_key="sk-rotated-key"
    )
    Strategy.objects.filter(debates=debate).update(role_text="Trade only the breakout.")

    turn_run(debate_id=debate.pk, round_number=2, participant_id=seats[0], holder="test")

    asked = llm.requests[-1]
    assert asked.body["model"] == "renamed-model"
    assert asked.headers["authorization"] == "Bearer sk-rotated-key"
    assert "Trade only the breakout." in asked.prompt


def test_a_model_disabled_while_its_debate_runs_is_not_called_again(make_debate, llm):
    # given a 3x2 debate past its openings, and the first seat's model then disabled
    debate = make_debate(rounds=2)
    seats = running(debate)
    for seat in seats:
        turn_run(debate_id=debate.pk, round_number=1, participant_id=seat, holder="test")
    asked = len(llm.requests)
    AIModel.objects.filter(participants__pk=seats[0]).update(enabled=False)
    # when the round-2 turns and the votes run
    for seat in seats:
        turn_run(debate_id=debate.pk, round_number=2, participant_id=seat, holder="test")
    for seat in seats:
        vote_run(debate_id=debate.pk, participant_id=seat, holder="test")
    # then the disabled model was asked nothing: its turn and its ballot are stored failed
    # saying why, the other seats answered, and the debate went on
    assert len(llm.requests) == asked + 4
    turn = Message.objects.get(debate=debate, round=2, participant_id=seats[0])
    ballot = Ballot.objects.get(debate=debate, participant_id=seats[0])
    for failed in (turn, ballot):
        assert failed.status == "error"
        assert failed.error["code"] == "model_unavailable"
        assert failed.error["message"].endswith("is disabled.")
    reasons = set(ballot.votes.values_list("abstain_reason", flat=True))
    assert reasons == {"the vote call failed: model_unavailable"}
    others = Message.objects.filter(debate=debate, round=2).exclude(participant_id=seats[0])
    assert [m.status for m in others] == ["ok", "ok"]
    assert Debate.objects.get(pk=debate.pk).status == DebateStatus.VOTING
    failures = [data for kind, data in published(debate.pk) if kind == "error"]
    assert [data["code"] for data in failures] == ["model_unavailable"] * 2


def test_a_judge_whose_model_was_disabled_is_not_called(make_debate, judge_model, llm):
    # given a 3x2 debate with a judge, past its openings, and the judge's model disabled
    debate = make_debate(rounds=2, judge={"ai_model": judge_model.pk})
    seats = running(debate)
    for seat in seats:
        turn_run(debate_id=debate.pk, round_number=1, participant_id=seat, holder="test")
    AIModel.objects.filter(pk=judge_model.pk).update(enabled=False)
    # when the judge's summary of round 1 runs
    judge_round_run(debate_id=debate.pk, round_number=1, holder="test")
    # then the judge was asked nothing, and its call is stored failed saying why
    assert [r.body["model"] for r in llm.requests] == ["fake-model"] * 3
    call = JudgeCall.objects.get(debate=debate)
    assert call.status == "error"
    assert call.error == {
        "code": "model_unavailable",
        "message": f"AI model {judge_model.name!r} is disabled.",
    }


@pytest.mark.django_db
def test_a_start_is_one_short_transaction_and_reads_no_market_data(
    make_debate, django_capture_on_commit_callbacks
):
    debate = make_debate()
    # The debate's stream was opened with the debate.
    assert EventCounter.objects.filter(name=debate_channel(debate.pk)).exists()

    with django_capture_on_commit_callbacks(execute=False) as sent:
        start = statements(lambda: debate_start(debate_id=debate.pk))

    # The debate with its judge's model and its seats with theirs (a model disabled
    # since the create is refused); then one transaction: the owner's quota (its row
    # locked, its starts of the hour counted, those older than a day deleted, this one
    # logged), the compare-and-set that starts it, the state with its plan (the debate
    # and its seats: a pending debate has stored no turn, ballot or decision), the
    # events; the canvas is built from that plan.
    assert len([sql for sql in start if "django_eventstream" in sql]) == 1, "\n".join(start)
    assert len(start) == 2 + 2 + 4 + 1 + 2 + 1 + 1, "\n".join(start)
    assert not [sql for sql in start if "debates_message" in sql or "debates_ballot" in sql]
    assert not [sql for sql in start if "strategies_" in sql]
    # The run's canvas is sent first, then the events are delivered.
    senders = [getattr(callback, "func", callback).__module__ for callback in sent]
    assert senders == ["arena.worker", "arena.sse"]
    debate.refresh_from_db()
    assert (debate.status, debate.current_round) == (DebateStatus.RUNNING, 1)
    # The market is the plan's first step, run by a worker.
    assert debate.market_snapshot is None


@pytest.mark.django_db
def test_a_run_is_sent_as_the_plain_chain_of_its_plan_would_be(make_debate):
    debate = make_debate()
    Debate.objects.filter(pk=debate.pk).update(status=DebateStatus.RUNNING, current_round=1)
    plan = runs.run_plan(debate=debate_state(debate_id=debate.pk))
    # The steps of that plan, chained the plain way: the prepare step, round 1 as a
    # group, the turns of rounds 2 and 3, the votes as a group, the consensus.
    seats = list(debate.participants.order_by("speak_order").values_list("pk", flat=True))
    steps = [prepare_run_task.si(debate.pk)]
    steps += [group([turn_run_task.si(debate.pk, 1, seat) for seat in seats])]
    for round_number in (2, 3):
        steps += [turn_run_task.si(debate.pk, round_number, seat) for seat in seats]
    steps += [group([vote_run_task.si(debate.pk, seat) for seat in seats])]
    steps += [consensus_finalize_task.si(debate.pk)]
    for step in steps[:1] + steps[2:8] + steps[-1:]:
        step.set(ignore_result=True)

    assert sent_messages(plan) == sent_messages(chain(*steps))


UUID = r"[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}"


def sent_messages(canvas) -> list[str]:
    """Send ``canvas`` to a queue no worker reads; return its messages, ids masked."""
    queue = "test-canvas"
    canvas.apply_async(queue=queue)
    try:
        texts = [f"{head['task']} {head['argsrepr']} {body}" for head, body in queued(queue)]
        return sorted(re.sub(UUID, "<id>", text) for text in texts)
    finally:
        redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(queue)


@pytest.mark.django_db
def test_a_prepare_step_without_market_data_fails_the_debate_with_the_reason(
    make_debate, django_capture_on_commit_callbacks
):
    debate = make_debate()
    Debate.objects.filter(pk=debate.pk).update(strategy=None)
    with django_capture_on_commit_callbacks(execute=False):
        debate_start(debate_id=debate.pk)

    assert debate_prepare(debate_id=debate.pk) is None

    failed = debate_state(debate_id=debate.pk)
    assert failed.status == DebateStatus.FAILED
    assert failed.error == {
        "step": "snapshot",
        "code": "market_data",
        "message": "the debate's strategy was deleted",
    }
    assert Debate.objects.get(pk=debate.pk).market_snapshot is None
    plan = debate_plan(failed)
    assert (plan.current_step, plan.steps[0].kind, plan.steps[0].status) == (0, "prepare", "failed")


def test_the_consensus_is_one_short_transaction(make_debate):
    debate = make_debate(rounds=2)
    seats = voting(debate)
    for seat in seats:
        vote_run(debate_id=debate.pk, participant_id=seat, holder="test")

    finalize = statements(lambda: consensus_finalize(debate_id=debate.pk))

    # Under the debate's lock, read with its coins, its weighting and its strategy's
    # limits: the votes, the decisions (not read back: just made, they have no
    # execution), the state's compare-and-set, the seats, turns and ballots of its plan,
    # the events.
    assert len(finalize) == 2 + 1 + 2 + 1 + 3 + 1, "\n".join(finalize)
    assert finalize[1].endswith('FOR NO KEY UPDATE OF "debates_debate"'), finalize[1]
    assert Debate.objects.get(pk=debate.pk).status == DebateStatus.COMPLETED
    # What the events say of the decisions, without reading them back, is what is stored.
    (consensus_type, consensus), (status_type, status) = published(debate.pk)[-2:]
    assert (consensus_type, status_type) == ("consensus", "status")
    decisions = Decision.objects.filter(debate=debate).order_by("-is_primary", "symbol")
    assert [d["id"] for d in consensus["decisions"]] == [d.pk for d in decisions]
    assert consensus["decisions"] == DecisionSerializer(decisions, many=True).data
    assert all(d["execution"] is None for d in consensus["decisions"])
    assert status["available_actions"] == ["execute", "delete"]


def test_a_debate_cancelled_while_a_step_waits_for_its_slot_gets_no_call(
    make_debate, llm, monkeypatch
):
    debate = make_debate()
    seats = running(debate)
    slots = calls.model_slots()

    class CancelledWhileWaiting:
        cap, lease_s = slots.cap, slots.lease_s

        def acquire(self, wait_s, *, lease_s=None, owner=ANONYMOUS):
            debate_cancel(debate_id=debate.pk)
            return replace(slots.acquire(wait_s, lease_s=lease_s, owner=owner), waited=True)

        def release(self, lease):
            slots.release(lease)

    monkeypatch.setattr(calls, "model_slots", CancelledWhileWaiting)

    turn_run(debate_id=debate.pk, round_number=1, participant_id=seats[0], holder="test")

    assert llm.requests == []
    assert not Message.objects.filter(debate=debate).exists()
    assert slots.in_use() == 0


def test_a_turn_leases_its_model_slot_for_the_claim_ttl_and_renews_it_during_the_call(
    make_debate, llm, monkeypatch, settings
):
    # A worker killed during a call frees its slot within STEP_CLAIM_TTL_S, not within
    # the call's deadline (60 s here).
    settings.STEP_CLAIM_TTL_S = 1
    llm.set_latency(1.2)
    debate = make_debate(timeout=60)
    seats = running(debate)
    slots = calls.model_slots()
    leased: list[float] = []
    renewed: list[float] = []

    class Watched:
        cap, lease_s = slots.cap, slots.lease_s

        def acquire(self, wait_s, *, lease_s=None, owner=ANONYMOUS):
            leased.append((lease_s, owner))
            return slots.acquire(wait_s, lease_s=lease_s, owner=owner)

        def renew(self, lease, lease_s):
            renewed.append(lease_s)
            return slots.renew(lease, lease_s)

        def release(self, lease):
            slots.release(lease)

    monkeypatch.setattr(calls, "model_slots", Watched)

    turn_run(debate_id=debate.pk, round_number=1, participant_id=seats[0], holder="test")

    # leased for the claim's TTL, as a call of the debate's owner (its fair share)
    assert leased == [(1.0, f"user:{debate.owner_id}")]
    assert len(renewed) >= 2 and set(renewed) == {1.0}  # every third of a second
    assert Message.objects.get(debate=debate).status == "ok"
    assert slots.in_use() == 0


def test_a_model_call_holds_no_database_connection_while_it_waits(make_debate, llm, monkeypatch):
    # given a running debate, and the model call watched
    debate = make_debate()
    seats = running(debate)
    complete, connected = calls.complete, []

    def watched(config, request, **kwargs):
        connected.append(connection.connection is not None)
        return complete(config, request, **kwargs)

    monkeypatch.setattr(calls, "complete", watched)
    # when a turn asks its model
    turn_run(debate_id=debate.pk, round_number=1, participant_id=seats[0], holder="test")
    # then the thread had given its connection back while the model answered
    assert connected == [False]
    assert Message.objects.get(debate=debate).status == "ok"


def test_a_turn_whose_owner_has_still_calls_filling_its_slots_and_room_goes_back(
    make_debate, llm, settings
):
    # given an owner who may make one call, making it, with one more call waiting, and
    # none of its calls begun or ended for longer than STILL_AFTER_S (a hanging model)
    settings.MODEL_CALL_CAP, settings.MODEL_CALLS_PER_USER = 2, 1
    debate = make_debate()
    seats = running(debate)
    slots, owner = calls.model_slots(), f"user:{debate.owner_id}"
    held = slots.acquire(0, owner=owner)
    waiting = threading.Thread(target=lambda: slots.acquire(STILL_AFTER_S + 1, owner=owner))
    waiting.start()
    try:
        time.sleep(STILL_AFTER_S + 0.1)
        assert slots.waiting() == {owner: 1}
        # when one of its turns is asked
        with pytest.raises(StepDeferred) as deferred:
            turn_run(debate_id=debate.pk, round_number=1, participant_id=seats[0], holder="t")
    finally:
        waiting.join(timeout=10)
        slots.release(held)
    # then it goes back to the queue for SLOT_WAIT_S to twice that, its model not called,
    # nothing stored
    assert calls.SLOT_WAIT_S <= deferred.value.retry_after <= 2 * calls.SLOT_WAIT_S
    assert llm.requests == []
    assert not Message.objects.filter(debate=debate).exists()


def test_a_turn_of_a_debate_deleted_during_its_call_is_dropped(
    make_debate, llm, monkeypatch, caplog
):
    caplog.set_level("INFO", logger="debates.services.steps")
    debate = make_debate()
    seats = running(debate)
    call_model = context.call_model

    def deleted_during_the_call(*args, **kwargs):
        outcome = call_model(*args, **kwargs)
        debate_cancel(debate_id=debate.pk)
        debate_delete(debate_id=debate.pk)
        return outcome

    monkeypatch.setattr(context, "call_model", deleted_during_the_call)

    turn_run(debate_id=debate.pk, round_number=1, participant_id=seats[0], holder="test")

    assert len(llm.requests) == 1
    assert not Debate.objects.filter(pk=debate.pk).exists()
    assert f"debate {debate.pk} is gone: turn result dropped" in caplog.messages


def test_a_ballot_is_stored_in_one_short_transaction(make_debate):
    debate = make_debate(rounds=2)
    seats = voting(debate)

    ballot = statements(lambda: vote_run(debate_id=debate.pk, participant_id=seats[0], holder="t"))

    # The context: the seats read with their debate (the cancel check), whether this
    # ballot is stored and the call's limits; the turns. Then, under the debate's row
    # lock: the ballot,
    # its votes, the events (in the automatic pace the vote events say it; a held debate's
    # ballot, or one beside a person's seat, reads the ballots and turns stored too, to
    # announce its state).
    assert len(ballot) == 2 + 6, "\n".join(ballot)
    assert ballot[2] == "BEGIN"
    assert ballot[3].endswith("FOR NO KEY UPDATE")


def test_a_stored_ballot_is_not_asked_again_and_costs_one_read(make_debate, llm):
    debate = make_debate(rounds=2)
    seats = voting(debate)
    vote_run(debate_id=debate.pk, participant_id=seats[0], holder="test")
    asked = len(llm.requests)

    again = statements(lambda: vote_run(debate_id=debate.pk, participant_id=seats[0], holder="t"))

    assert len(again) == 1, "\n".join(again)
    assert len(llm.requests) == asked
    assert Ballot.objects.filter(debate=debate).count() == 1


def test_a_cancel_waits_for_a_ballot_being_stored(make_debate):
    debate = make_debate(rounds=2)
    voting(debate)
    locked, release = threading.Event(), threading.Event()

    def ballot_being_stored() -> None:
        with transaction.atomic():
            assert lock_debate(debate_id=debate.pk, status=DebateStatus.VOTING) is not None
            locked.set()
            release.wait(10)

    holder = in_thread(ballot_being_stored)
    try:
        assert locked.wait(10)
        # a cancel waits for the ballot still being stored
        cancel = in_thread(lambda: debate_cancel(debate_id=debate.pk))
        cancel.join(0.5)
        assert cancel.is_alive()
        assert Debate.objects.get(pk=debate.pk).status == DebateStatus.VOTING
    finally:
        release.set()
        holder.join(10)
    cancel.join(10)
    assert Debate.objects.get(pk=debate.pk).status == DebateStatus.CANCELLED
