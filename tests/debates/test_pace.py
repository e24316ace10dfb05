"""The manual pace, advance and retry-step, through the real Celery canvas and the fake
model server."""

from __future__ import annotations

import pytest

from debates.models import Ballot, Debate, Decision, Message, Participant
from debates.selectors import debate_state
from debates.services import (
    consensus_finalize,
    debate_advance,
    debate_retry_step,
    debate_start,
    vote_run,
)
from debates.state import available_actions, debate_plan
from tests.debates.conftest import failed_in_round_two, wait_for, wait_until_finished
from tests.debates.events_helpers import published
from tests.threads import outcomes_at_once

pytestmark = pytest.mark.django_db(transaction=True)


def held(debate_id: int) -> bool:
    """Say whether the debate is held before its next step."""
    return debate_plan(debate_state(debate_id=debate_id)).can_advance


def done_steps(debate_id: int) -> list[int]:
    plan = debate_plan(debate_state(debate_id=debate_id))
    return [step.index for step in plan.steps if step.status == "done"]


def test_a_manual_debate_stops_after_each_step_until_advanced(celery_worker, llm, make_debate):
    # given a 2x2 debate in the manual pace: prepare, 2 openings, 2 rebuttals, 2 votes,
    # the consensus
    debate = make_debate(personalities=("bull", "bear"), rounds=2, pace="manual")
    debate_start(debate_id=debate.pk)
    # when it is advanced each time it stops
    pauses = []
    while True:
        wait_for(
            lambda: held(debate.pk) or Debate.objects.get(pk=debate.pk).status == "completed",
            timeout=30,
        )
        state = debate_state(debate_id=debate.pk)
        if state.status == "completed":
            break
        pauses.append((state.steps_released, done_steps(debate.pk), len(llm.requests)))
        assert "advance" in available_actions(state)
        debate_advance(debate_id=debate.pk)
    # then it stopped after every step but the last, each step run once, in order
    assert pauses == [(n, list(range(n)), max(0, n - 1)) for n in range(1, 8)]
    assert len(llm.requests) == 6
    assert done_steps(debate.pk) == list(range(8))
    # and each stop was announced: a status event saying it can advance
    holds = [
        data for kind, data in published(debate.pk) if kind == "status" and data["can_advance"]
    ]
    assert len(holds) == 7
    assert all(data["available_actions"] == ["advance", "cancel"] for data in holds)


def test_twenty_concurrent_advances_move_one_step(celery_worker, llm, make_debate):
    # given a manual debate held after its prepare step, whose model takes a second: the
    # step an advance releases cannot end (and hold the debate again, where a late
    # advance would rightly move it once more) while the 20 advances are under way
    llm.set_latency(1.0)
    debate = make_debate(pace="manual")
    debate_start(debate_id=debate.pk)
    wait_for(lambda: held(debate.pk), timeout=30)
    # when 20 clients advance it at once
    outcomes = outcomes_at_once(lambda: debate_advance(debate_id=debate.pk), 20)
    wait_for(lambda: held(debate.pk), timeout=30)
    # then one advance went through and the debate ran exactly one more step
    assert outcomes == ["done"] + ["invalid_state"] * 19
    assert Debate.objects.get(pk=debate.pk).steps_released == 2
    assert done_steps(debate.pk) == [0, 1]
    assert len(llm.requests) == 1
    assert Message.objects.filter(debate=debate).count() == 1


def test_retry_step_runs_the_failed_step_alone_reusing_every_stored_turn(
    celery_worker, llm, make_debate
):
    # given a debate whose round 2 fails entirely (every model refuses round 2 once)
    debate = failed_in_round_two(llm, make_debate)
    stored = dict(Message.objects.filter(debate=debate).values_list("pk", "status"))
    asked = len(llm.requests)
    plan = debate_plan(debate_state(debate_id=debate.pk))
    assert plan.current_step == 4  # P1's rebuttal: the first failed step of round 2
    # when its current step is retried
    debate_retry_step(debate_id=debate.pk)
    wait_for(lambda: held(debate.pk), timeout=30)
    # then that one turn was asked again, and every other stored turn kept: P1 answered,
    # round 2 closed with it, and the debate is held before its votes
    assert len(llm.requests) == asked + 1
    after = dict(Message.objects.filter(debate=debate).values_list("pk", "status"))
    p1_round2 = Message.objects.get(debate=debate, round=2, participant__speak_order=0)
    assert after.pop(p1_round2.pk) == "ok"
    assert {pk: status for pk, status in stored.items() if pk in after} == after
    assert len(after) == len(stored) - 1
    state = debate_state(debate_id=debate.pk)
    assert state.status == "voting"
    assert available_actions(state) == ["advance", "cancel"]
    # and when advanced (the automatic pace), it goes on to its end with the votes alone
    debate_advance(debate_id=debate.pk)
    finished = wait_until_finished(debate.pk)
    assert finished.status == "completed"
    assert len(llm.requests) == asked + 1 + 3


def test_the_steps_a_failure_left_queued_do_not_run_past_a_retried_step(
    celery_worker, llm, make_debate
):
    # given a debate failed in round 2 whose first failed turn was retried and answered:
    # it is voting, held before its votes
    debate = failed_in_round_two(llm, make_debate)
    debate_retry_step(debate_id=debate.pk)
    wait_for(lambda: held(debate.pk), timeout=30)
    asked = len(llm.requests)
    # when the rest of the canvas the failure cut short reaches a worker only now (the
    # votes and the consensus were queued behind round 2 when it failed)
    for seat in Participant.objects.filter(debate=debate):
        vote_run(debate_id=debate.pk, participant_id=seat.pk, holder="queued-before-the-hold")
    consensus_finalize(debate_id=debate.pk)
    # then they did nothing: no vote asked or stored, no decision, still held
    assert len(llm.requests) == asked
    assert not Ballot.objects.filter(debate=debate).exists()
    assert not Decision.objects.filter(debate=debate).exists()
    state = debate_state(debate_id=debate.pk)
    assert state.status == "voting"
    assert available_actions(state) == ["advance", "cancel"]
