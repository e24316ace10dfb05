"""Each transition of a debate or a backtest is a compare-and-set: from a status it does not
start from, it moves nothing, writes nothing and announces nothing."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

import pytest
from django.db import transaction
from django.db.models import Q
from django.forms.models import model_to_dict
from django.utils import timezone

from backtests.models import Backtest
from backtests.services import transitions as backtest_transitions
from debates.engine.machine import State
from debates.models import Debate
from debates.services import transitions
from tests.backtests.factories import BacktestFactory
from tests.debates.factories import DebateFactory, ParticipantFactory

pytestmark = pytest.mark.django_db

PAST = timezone.now() - timedelta(hours=1)
VOTING = State("voting", "voting", 2)


def cases(table: list[tuple[str, str, Callable]]) -> list:
    """Return a table of transitions as the cases of a test, each named after its
    transition."""
    return [pytest.param(status, call, id=name) for name, status, call in table]


# Each debate transition, the status it is refused from, and how it is called.
DEBATE_TRANSITIONS: list[tuple[str, str, Callable[[Debate], object]]] = [
    ("start", "running", lambda d: transitions.start(debate_id=d.pk, pace="auto")),
    (
        "turn_taken",
        "voting",
        lambda d: transitions.turn_taken(
            debate=d, round_number=2, state=VOTING, seats=list(d.participants.all()), turns=()
        ),
    ),
    ("complete", "running", lambda d: transitions.complete(debate=d, decisions=())),
    (
        "fail",
        "completed",
        lambda d: transitions.fail(debate_id=d.pk, step="x", code="x", message="x"),
    ),
    ("cancel", "failed", lambda d: transitions.cancel(debate_id=d.pk)),
    ("retry", "cancelled", lambda d: transitions.retry(debate_id=d.pk, to="running")),
    (
        "retry_step",
        "completed",
        lambda d: transitions.retry_step(
            debate_id=d.pk, status="failed", to="running", released=None, index=1
        ),
    ),
    ("advance", "cancelled", lambda d: transitions.advance(debate_id=d.pk, released=1, to=2)),
    (
        "prepared",
        "cancelled",
        lambda d: transitions.prepared(debate_id=d.pk, fields={"market_snapshot": {}}),
    ),
    (
        "step_recorded",
        "running",
        lambda d: transitions.step_recorded(
            debate_id=d.pk, key=("prepare", None, None), status="done"
        ),
    ),
    (
        "step_forgotten",
        "running",
        lambda d: transitions.step_forgotten(debate_id=d.pk, key=("prepare", None, None)),
    ),
    ("progressed", "completed", lambda d: transitions.progressed(debate_id=d.pk)),
    (
        "resume_claimed",
        "completed",
        lambda d: transitions.resume_claimed(
            debate_id=d.pk, unfinished=Q(status="running"), cutoff=timezone.now()
        ),
    ),
    (
        "person_due_claimed",
        "completed",
        lambda d: transitions.person_due_claimed(debate_id=d.pk, now=timezone.now()),
    ),
]


@pytest.mark.parametrize(("status", "transition"), cases(DEBATE_TRANSITIONS))
def test_a_debate_transition_refuses_a_stale_status(
    status, transition, django_capture_on_commit_callbacks
):
    # given a debate in a status the transition does not start from, with a failed
    # prepare step, a held step, a person's passed deadline and no progress for an hour
    debate = DebateFactory(
        status=status,
        phase="rebuttal",
        current_round=2,
        steps_released=1,
        step_outcomes={"prepare": {"status": "failed"}},
        human_due_at=PAST,
        caller_task="backtests.debate_moved",
    )
    ParticipantFactory(debate=debate, speak_order=0)
    Debate.objects.filter(pk=debate.pk).update(progressed_at=PAST)
    before = model_to_dict(Debate.objects.get(pk=debate.pk))
    # when the transition is asked
    with django_capture_on_commit_callbacks(execute=False) as sent, transaction.atomic():
        moved = transition(Debate.objects.get(pk=debate.pk))
    # then it did not move, changed nothing, and announced and sent nothing
    assert not moved
    assert model_to_dict(Debate.objects.get(pk=debate.pk)) == before
    assert sent == []


# Each backtest transition, the status it is refused from, and how it is called.
BACKTEST_TRANSITIONS: list[tuple[str, str, Callable[[Backtest], object]]] = [
    ("started", "running", backtest_transitions.started),
    ("progressed", "pending", lambda b: backtest_transitions.progressed(b, steps_done=1)),
    (
        "completed",
        "cancelled",
        lambda b: backtest_transitions.completed(b, report={}, headline={}, now=timezone.now()),
    ),
    ("failed", "completed", lambda b: backtest_transitions.failed(b, code="x", message="x")),
    ("cancelled", "failed", backtest_transitions.cancelled),
    ("ticked", "completed", backtest_transitions.ticked),
    (
        "chain_replaced",
        "cancelled",
        lambda b: backtest_transitions.chain_replaced(b, token=b.tick_token, fresh="fresh"),
    ),
]


@pytest.mark.parametrize(("status", "transition"), cases(BACKTEST_TRANSITIONS))
def test_a_backtest_transition_refuses_a_stale_status(
    status, transition, django_capture_on_commit_callbacks
):
    # given a backtest in a status the transition does not start from
    backtest = BacktestFactory(status=status, tick_token="token")
    before = model_to_dict(Backtest.objects.get(pk=backtest.pk))
    stale = Backtest.objects.get(pk=backtest.pk)
    # when the transition is asked
    with django_capture_on_commit_callbacks(execute=False) as sent, transaction.atomic():
        moved = transition(stale)
    # then it did not move, changed nothing (in the row or in memory), and announced nothing
    assert not moved
    assert model_to_dict(Backtest.objects.get(pk=backtest.pk)) == before
    assert model_to_dict(stale) == before
    assert sent == []
