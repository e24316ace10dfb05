"""The state table: every action, from every status and step kind, either moves the debate
as stated or is refused with ``invalid_state`` and changes nothing."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.forms.models import model_to_dict

from arena.exceptions import InvalidState, NotFound
from debates.models import Ballot, Debate, Decision, Message
from debates.selectors import debate_state
from debates.services import (
    debate_advance,
    debate_cancel,
    debate_delete,
    debate_prepare,
    debate_retry,
    debate_retry_step,
    debate_start,
)
from debates.state import available_actions, debate_plan
from tests.debates.factories import (
    BallotFactory,
    DebateFactory,
    DecisionFactory,
    MessageFactory,
    ParticipantFactory,
)
from tests.traders.factories import TraderFactory
from traders.models import Execution
from traders.services import execution_request

pytestmark = pytest.mark.django_db

PREPARED = {"prepare": {"status": "done"}}
ROUND_FAILED = {"step": "round 1", "code": "round_failed", "message": "x"}
SNAPSHOT_FAILED = {"step": "snapshot", "code": "market_data", "message": "x"}


def _debate(status: str, *, pace: str = "auto", **fields) -> tuple[Debate, list]:
    """Return a 2-seat, 2-round debate in ``status`` and its seats."""
    debate = DebateFactory(
        status=status,
        pace=pace,
        max_rounds=2,
        as_of="2024-08-05T12:00Z",
        symbol="BTCUSDT",
        market_snapshot=None if status == "pending" else {"source": "dataset"},
    )
    seats = [
        ParticipantFactory(debate=debate, personality=personality, speak_order=order)
        for order, personality in enumerate(("bull", "bear"))
    ]
    phase = {"pending": "created", "voting": "voting", "completed": "done"}.get(status, "opening")
    Debate.objects.filter(pk=debate.pk).update(
        phase=phase, current_round=0 if status == "pending" else 1, **fields
    )
    return debate, seats


def _turns(seats, rounds=(1, 2), status="ok") -> None:
    for round_number in rounds:
        for seat in seats:
            MessageFactory(
                participant=seat,
                round=round_number,
                status=status,
                message_type="analysis" if round_number == 1 else "rebuttal",
            )


def pending():
    return _debate("pending")[0]


def running_at_prepare():
    return _debate("running", market_snapshot=None)[0]


def running_at_an_opening():
    debate, seats = _debate("running", step_outcomes=PREPARED)
    MessageFactory(participant=seats[0])
    return debate


def running_held_after_a_step():
    debate, seats = _debate("running", pace="manual", steps_released=2, step_outcomes=PREPARED)
    MessageFactory(participant=seats[0])
    return debate


def running_held_after_a_failed_turn():
    debate, seats = _debate("running", pace="manual", steps_released=2, step_outcomes=PREPARED)
    MessageFactory(participant=seats[0], status="error", parse_status="none")
    return debate


def voting():
    debate, seats = _debate("voting", step_outcomes=PREPARED)
    _turns(seats)
    return debate


def voting_held_before_the_votes():
    # prepare, 2 openings, 2 rebuttals: the first vote is step 5
    debate, seats = _debate("voting", pace="manual", steps_released=5, step_outcomes=PREPARED)
    _turns(seats)
    return debate


def _completed(**fields):
    debate, seats = _debate("completed", step_outcomes=PREPARED, **fields)
    _turns(seats)
    for seat in seats:
        BallotFactory(participant=seat)
    DecisionFactory(debate=debate, action="open_long")
    return debate


def completed():
    return _completed()


def completed_held_before_its_execution():
    # ..., 2 votes (5, 6), the consensus (7): the execution is step 8
    return _completed(pace="manual", auto_execute=True, steps_released=8)


def cancelled():
    debate, seats = _debate("cancelled", step_outcomes=PREPARED)
    MessageFactory(participant=seats[0])
    return debate


def failed_in_a_round():
    debate, seats = _debate("failed", step_outcomes=PREPARED, error=ROUND_FAILED)
    _turns(seats, rounds=(1,), status="error")
    return debate


def failed_at_prepare():
    outcomes = {"prepare": {"status": "failed"}}
    return _debate("failed", step_outcomes=outcomes, error=SNAPSHOT_FAILED, market_snapshot=None)[0]


SITUATIONS: dict[str, Callable[[], Debate]] = {
    fn.__name__: fn
    for fn in (
        pending,
        running_at_prepare,
        running_at_an_opening,
        running_held_after_a_step,
        running_held_after_a_failed_turn,
        voting,
        voting_held_before_the_votes,
        completed,
        completed_held_before_its_execution,
        cancelled,
        failed_in_a_round,
        failed_at_prepare,
    )
}


def _execute(*, debate_id: int) -> None:
    debate = Debate.objects.get(pk=debate_id)
    trader = TraderFactory(owner=debate.owner, market_source="dataset")
    execution_request(owner=debate.owner, debate_id=debate_id, trader_id=trader.pk)


SERVICES: dict[str, Callable[..., object]] = {
    "start": debate_start,
    "cancel": debate_cancel,
    "retry": debate_retry,
    "retry_step": debate_retry_step,
    "advance": debate_advance,
    "execute": _execute,
    "delete": debate_delete,
}
ACTIVE = ("running_at_prepare", "running_at_an_opening", "running_held_after_a_step")
ACTIVE += ("running_held_after_a_failed_turn", "voting", "voting_held_before_the_votes")
FAILED = ("failed_in_a_round", "failed_at_prepare")
FINISHED = ("completed", "completed_held_before_its_execution", "cancelled", *FAILED)

# (action, situation) -> (status, steps released) after it; None: the debate is gone.
# Every pair missing here is refused.
MOVES: dict[tuple[str, str], tuple[str, int | None] | None] = {
    ("start", "pending"): ("running", None),
    ("cancel", "pending"): ("cancelled", None),
    **{("cancel", name): ("cancelled", "same") for name in ACTIVE},
    ("retry", "failed_in_a_round"): ("running", None),
    ("retry", "failed_at_prepare"): ("running", None),
    # the step retried runs alone: the debate is held after it
    ("retry_step", "running_held_after_a_failed_turn"): ("running", 2),
    ("retry_step", "failed_in_a_round"): ("running", 2),
    ("retry_step", "failed_at_prepare"): ("running", 1),
    # the manual pace releases the next step
    ("advance", "running_held_after_a_step"): ("running", 3),
    ("advance", "running_held_after_a_failed_turn"): ("running", 3),
    ("advance", "voting_held_before_the_votes"): ("voting", 6),
    ("advance", "completed_held_before_its_execution"): ("completed", 9),
    ("execute", "completed"): ("completed", None),
    ("execute", "completed_held_before_its_execution"): ("completed", 8),
    ("delete", "pending"): None,
    **{("delete", name): None for name in FINISHED},
}


def _everything(debate_id: int) -> dict:
    """Return the debate's row and what it holds, to tell that nothing changed."""
    return {
        "debate": model_to_dict(Debate.objects.get(pk=debate_id)),
        "messages": sorted(Message.objects.filter(debate_id=debate_id).values_list("pk", "status")),
        "ballots": sorted(Ballot.objects.filter(debate_id=debate_id).values_list("pk", flat=True)),
        "decisions": Decision.objects.filter(debate_id=debate_id).count(),
        "executions": Execution.objects.filter(decision__debate_id=debate_id).count(),
    }


@pytest.mark.parametrize("situation", SITUATIONS)
@pytest.mark.parametrize("action", SERVICES)
def test_action_from_state(action, situation, django_capture_on_commit_callbacks):
    # given a debate in ``situation``
    debate = SITUATIONS[situation]()
    before = _everything(debate.pk)
    expected = MOVES.get((action, situation), "refused")
    # when the action is taken (tasks are captured, not sent)
    with django_capture_on_commit_callbacks(execute=False):
        if expected == "refused":
            with pytest.raises(InvalidState) as refusal:
                SERVICES[action](debate_id=debate.pk)
            # then it is refused and nothing changed
            assert refusal.value.code == "invalid_state"
            assert _everything(debate.pk) == before
            return
        SERVICES[action](debate_id=debate.pk)
    # then it moved as stated
    if expected is None:
        assert not Debate.objects.filter(pk=debate.pk).exists()
        return
    after = Debate.objects.get(pk=debate.pk)
    status, released = expected
    if released == "same":
        released = before["debate"]["steps_released"]
    assert (after.status, after.steps_released) == (status, released)
    if action == "execute":
        assert _everything(debate.pk)["executions"] == 1


def test_a_retried_step_forgets_its_failed_record_and_keeps_every_other():
    # given a debate failed in round 1, one opening answered and one failed
    debate, seats = _debate("failed", step_outcomes=PREPARED, error=ROUND_FAILED)
    answered = MessageFactory(participant=seats[0], status="ok")
    MessageFactory(participant=seats[1], status="error", parse_status="none")
    # when its current step is retried
    plan = debate_plan(debate_state(debate_id=debate.pk))
    assert plan.current_step == 2
    debate_retry_step(debate_id=debate.pk)
    # then only the failed turn is gone; the step runs alone, the rest waits
    assert list(Message.objects.filter(debate=debate).values_list("pk", flat=True)) == [answered.pk]
    plan = debate_plan(debate_state(debate_id=debate.pk))
    assert [s.status for s in plan.steps[:4]] == ["done", "done", "running", "pending"]
    assert available_actions(debate_state(debate_id=debate.pk)) == ["cancel"]


EXPECTED_ACTIONS = {
    "pending": ["start", "cancel", "delete"],
    "running_at_prepare": ["cancel"],
    "running_at_an_opening": ["cancel"],
    "running_held_after_a_step": ["advance", "cancel"],
    "running_held_after_a_failed_turn": ["advance", "retry_step", "cancel"],
    "voting": ["cancel"],
    "voting_held_before_the_votes": ["advance", "cancel"],
    "completed": ["execute", "delete"],
    "completed_held_before_its_execution": ["advance", "execute", "delete"],
    "cancelled": ["delete"],
    "failed_in_a_round": ["retry_step", "retry", "delete"],
    "failed_at_prepare": ["retry_step", "retry", "delete"],
}


@pytest.mark.parametrize(("situation", "actions"), EXPECTED_ACTIONS.items())
def test_available_actions_follow_the_state_and_the_plan(situation, actions):
    debate = SITUATIONS[situation]()
    assert available_actions(debate_state(debate_id=debate.pk)) == actions


def test_execute_is_offered_for_an_executable_unexecuted_decision():
    decision = DecisionFactory(action="open_long")
    assert available_actions(decision.debate) == ["execute", "delete"]
    DecisionFactory(debate=decision.debate, symbol="ETHUSDT", action="wait", is_primary=False)
    assert available_actions(decision.debate) == ["execute", "delete"]


def test_the_prepare_step_stores_the_snapshot_once_with_the_candidate_coins(
    django_capture_on_commit_callbacks,
):
    # given a started debate (the start itself reads no market data)
    debate = pending()
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        debate_start(debate_id=debate.pk)
    assert Debate.objects.get(pk=debate.pk).market_snapshot is None
    assert len(callbacks) >= 1
    # when its prepare step runs, twice
    assert debate_prepare(debate_id=debate.pk)
    stored = Debate.objects.get(pk=debate.pk).market_snapshot
    assert debate_prepare(debate_id=debate.pk)
    # then the snapshot was stored once, with the candidate coins, and the step is done
    debate.refresh_from_db()
    assert debate.market_snapshot == stored
    assert debate.symbols == ["BTCUSDT", "ETHUSDT", "SOLUSDT"]
    assert debate.market_snapshot["as_of"] == "2024-08-05T12:00:00Z"
    assert [c["symbol"] for c in debate.market_snapshot["coins"]] == debate.symbols
    assert debate.step_outcomes == {"prepare": {"status": "done"}}


def test_another_users_debate_is_not_found(other_user):
    debate = pending()
    for name, service in SERVICES.items():
        if name == "execute":
            continue
        with pytest.raises(NotFound):
            service(debate_id=debate.pk, owner=other_user)
    assert Debate.objects.get(pk=debate.pk).status == "pending"
