"""A debate at ``cache: use`` runs in its prepare task the steps the cache answers, and
sends the rest to the workers as any run does."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import replace

import pytest
from celery.signals import task_prerun

from debates.claims import step_claim
from debates.models import (
    Ballot,
    JudgeCall,
    JudgeScore,
    Message,
    ModelAnswer,
    Participant,
    Vote,
)
from debates.services import calls, debate_prepare, debate_start, turn_run
from debates.services.calls import NotCached, call_model
from tests.debates.conftest import wait_for, wait_until_finished
from tests.debates.events_helpers import published, published_types
from tests.debates.test_cache import CONFIG, REQUEST, decisions_of
from tests.debates.test_judge import script_judge
from tests.fakes.llm_server import Reply, default_answer

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def tasks_run() -> Iterator[list[tuple[str, tuple]]]:
    """The (name, arguments) of every debate task the worker starts during the test."""
    started: list[tuple[str, tuple]] = []

    def record(task=None, args=(), **_) -> None:
        if task is not None and task.name.startswith("debates."):
            started.append((task.name, tuple(args or ())))

    task_prerun.connect(record, weak=False)
    yield started
    task_prerun.disconnect(record)


def of_debate(tasks: list[tuple[str, tuple]], debate_id: int) -> list[str]:
    """Return the names of the distinct tasks of ``debate_id`` (a retried one once)."""
    return sorted(name for name, args in set(tasks) if args[:1] == (debate_id,))


def run(make_debate) -> int:
    debate = make_debate(rounds=2, cache="use")
    debate_start(debate_id=debate.pk)
    assert wait_until_finished(debate.pk).status == "completed"
    return debate.pk


def said(debate_id: int) -> list[tuple]:
    """Return what each turn of a debate stored, by round and speaking order."""
    fields = ("round", "participant__speak_order", "status", "content", "decisions")
    turns = Message.objects.filter(debate_id=debate_id).order_by(*fields[:2])
    return list(turns.values_list(*fields, "reasoning", "parse_status"))


def voted(debate_id: int) -> list[tuple]:
    """Return each stored vote of a debate, by speaking order and coin."""
    fields = ("participant__speak_order", "symbol", "action", "confidence", "leverage")
    votes = Vote.objects.filter(debate_id=debate_id).order_by(*fields[:2])
    return list(votes.values_list(*fields, "position_pct", "abstained", "ballot__content"))


def states(debate_id: int) -> list[tuple]:
    """Return the states a debate's ``status`` events announced, in order, with the
    speaker by speaking order."""
    order = dict(Participant.objects.filter(debate_id=debate_id).values_list("pk", "speak_order"))
    return [
        (data["status"], data["phase"], data["current_round"], order.get(data["current_speaker"]))
        for kind, data in published(debate_id)
        if kind == "status"
    ]


def test_a_debate_the_cache_answers_runs_in_its_prepare_task(
    celery_worker, llm, make_debate, tasks_run, caplog
):
    # given a 3x2 debate run at cache: use, every answer from the model
    caplog.set_level(logging.INFO, logger="debates.step_log")
    first = run(make_debate)
    assert len(llm.requests) == 9
    # when the same debate runs again
    again = run(make_debate)
    # then its steps ran in its prepare task, where the first's each had a task, and
    # no model was called
    assert of_debate(tasks_run, first) == sorted(
        ["debates.prepare_run", "debates.consensus_finalize"]
        + ["debates.turn_run"] * 6
        + ["debates.vote_run"] * 3
    )
    assert of_debate(tasks_run, again) == ["debates.prepare_run"]
    assert len(llm.requests) == 9
    # with every turn and ballot stored as the first's, cached: the same messages, votes
    # and decisions, and the same events and states on its stream
    assert Message.objects.filter(debate_id=again, cached=True).count() == 6
    assert Ballot.objects.filter(debate_id=again, cached=True).count() == 3
    assert decisions_of(again) == decisions_of(first)
    assert said(again) == said(first)
    assert voted(again) == voted(first)
    assert published_types(again) == published_types(first)
    assert states(again) == states(first)
    # and each step left its line, naming the task that ran it (the consensus's once it
    # has returned, a moment after it completed the debate)

    def in_place() -> list[str]:
        lines = [r.getMessage() for r in caplog.records if r.name == "debates.step_log"]
        return [line for line in lines if f"debate={again} " in line]

    wait_for(lambda: len(in_place()) == 10, timeout=10)
    lines = in_place()
    assert all(" in_task=" in line for line in lines)
    assert all(" model_ms=cached" in line for line in lines if " step=consensus " not in line)


def test_a_debate_half_in_the_cache_asks_the_models_only_for_the_rest(
    celery_worker, llm, make_debate, tasks_run
):
    # given a 3x2 debate run at cache: use, and the answer of its second speaker's
    # round-2 turn (an answer of its own) gone from the cache
    turn = default_answer("BTCUSDT", action="open_short")
    llm.add_rule(Reply(text=turn, match="round 2/2. You are P2,"))
    first = run(make_debate)
    assert ModelAnswer.objects.filter(text=turn).delete()[0] == 1
    # when the same debate runs again
    again = run(make_debate)
    # then the model was asked that turn alone: the steps before it ran in the prepare
    # task, and that turn and every step after it as tasks (from the cache)
    assert len(llm.requests) == 10
    assert of_debate(tasks_run, again) == sorted(
        ["debates.prepare_run", "debates.consensus_finalize"]
        + ["debates.turn_run"] * 2
        + ["debates.vote_run"] * 3
    )
    cached = dict(
        Message.objects.filter(debate_id=again, round=2).values_list(
            "participant__speak_order", "cached"
        )
    )
    assert cached == {0: True, 1: False, 2: True}
    assert Message.objects.filter(debate_id=again, round=1, cached=True).count() == 3
    assert decisions_of(again) == decisions_of(first)


@pytest.mark.django_db
def test_only_cached_answers_refuses_a_call_before_taking_a_slot(llm, monkeypatch):
    # given a call made once with the cache in use, and one never made
    config = replace(CONFIG, base_url=f"{llm.url}/v1", timeout_s=10.0)
    made = call_model(config, REQUEST, still_wanted=lambda: True, cache="use")
    assert made.response is not None and len(llm.requests) == 1
    other = replace(REQUEST, user=REQUEST.user + " ")
    # when both are asked with only the cache's answers, where taking a model slot fails
    # the test
    with monkeypatch.context() as patched:
        patched.setattr(calls, "hold", lambda *a, **k: pytest.fail("a model slot was taken"))
        only = {"still_wanted": lambda: True, "cache": "use", "cached_only": True}
        again = call_model(config, REQUEST, **only)
        with pytest.raises(NotCached):
            call_model(config, other, **only)
    # then the first is answered from the cache and the second refused, neither called
    assert again.response.cached and again.response.text == made.response.text
    assert len(llm.requests) == 1
    # and asked without ``cached_only``, the second is a call again
    call_model(config, other, still_wanted=lambda: True, cache="use")
    assert len(llm.requests) == 2


def test_a_step_the_cache_cannot_answer_gives_its_claim_back(make_debate):
    # given a started, prepared debate at cache: use with nothing in the cache
    debate = make_debate(rounds=2, cache="use")
    debate_start(debate_id=debate.pk)
    assert debate_prepare(debate_id=debate.pk)
    seat = debate.participants.order_by("speak_order").first()
    # when its first opening is run in place, with only the cache's answers
    with pytest.raises(NotCached):
        turn_run(
            debate_id=debate.pk,
            round_number=1,
            participant_id=seat.pk,
            holder="in-place",
            cached_only=True,
        )
    # then nothing is stored, and the task sent for the turn can claim it at once
    assert not Message.objects.filter(debate=debate).exists()
    assert step_claim(step=f"{debate.pk}:turn:1:{seat.pk}", holder="its task")


def test_a_judged_debate_the_cache_answers_runs_its_judge_in_place(
    celery_worker, llm, make_debate, judge_model, tasks_run
):
    # given a 3x2 debate with a judge, run at cache: use
    script_judge(llm, {"P1": (8, 8, 8), "P2": (6, 6, 6), "P3": (4, 4, 4)}, rounds=2)
    judge = {"ai_model": judge_model.pk}
    first = make_debate(rounds=2, cache="use", judge=judge)
    debate_start(debate_id=first.pk)
    assert wait_until_finished(first.pk).status == "completed"
    assert len(llm.requests) == 11
    # when the same debate runs again
    again = make_debate(rounds=2, cache="use", judge=judge)
    debate_start(debate_id=again.pk)
    assert wait_until_finished(again.pk).status == "completed"
    # then its judge's summary and scores came from the cache in its prepare task, as
    # every other step
    assert of_debate(tasks_run, again.pk) == ["debates.prepare_run"]
    assert len(llm.requests) == 11
    assert list(JudgeCall.objects.filter(debate=again).values_list("kind", "cached")) == [
        ("round_summary", True),
        ("scores", True),
    ]
    assert [s.score for s in JudgeScore.objects.filter(debate=again).order_by("-score")] == [
        0.8,
        0.6,
        0.4,
    ]
