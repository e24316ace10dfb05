"""Every change of a debate's state, each a compare-and-set that announces it.

Each transition is one ``UPDATE ... WHERE id = ... AND status IN (...)`` (plus whatever
else it expects, a round or a released step): when two requests race, the database lets
exactly one through, the function returns the new state to the winner (None to the
others), and only the winner publishes the debate's ``status`` event (on commit,
through ``debates.events``). The rules (which statuses an action starts from) are in
``debates.state``; the services read as claim, context, call, record, transition.

Call these inside ``transaction.atomic()``: the event goes out when the change commits.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from datetime import datetime, timedelta
from typing import Any

from celery import signature
from django.db.models import Q
from django.utils import timezone

from arena import metrics
from arena.worker import send_on_commit
from debates import events
from debates.engine.machine import State
from debates.engine.plan import DONE, FAILED, PREPARE, Plan, StepKey
from debates.locks import lock_debate
from debates.models import (
    ACTIVE_STATUSES,
    Ballot,
    Debate,
    DebatePhase,
    DebateStatus,
    Decision,
    Message,
    Pace,
    Participant,
    SeatKind,
)
from debates.selectors import debate_state
from debates.state import ACTION_SOURCES, DecisionFacts, debate_plan, outcome_name, plan_of

logger = logging.getLogger(__name__)

PREPARE_KEY = (PREPARE, None, None)


def _moved(
    debate_id: int, sources: tuple[str, ...], *, where: Q | None = None, **fields: Any
) -> bool:
    """Update debate ``debate_id`` if its status is one of ``sources`` (and ``where``
    holds); say whether it moved."""
    debates = Debate.objects.filter(pk=debate_id, status__in=sources)
    if where is not None:
        debates = debates.filter(where)
    return debates.update(progressed_at=timezone.now(), **fields) == 1


def announce(debate_id: int, *, recorded: bool = True) -> Debate:
    """Publish the debate's state (its plan of steps with it) on commit; return it.

    The state a debate is announced in is also where its wait for a person starts and
    ends (``person_deadline``), so every transition keeps the deadline in step.
    ``recorded=False``: the debate has stored no step yet (``debate_state``).
    """
    debate = debate_state(debate_id=debate_id, recorded=recorded)
    state_published(debate, debate_plan(debate), debate.participants.all())
    return debate


def state_published(
    debate: Debate,
    plan: Plan,
    seats: Iterable[Participant],
    decisions: Iterable[DecisionFacts] | None = None,
) -> None:
    """Publish ``debate``'s state with its ``plan`` on commit, and keep the debate's wait
    for the person in its human seat, if it has one among ``seats``, in step with it.
    ``decisions``: the debate's, as the caller holds them (else read when they count)."""
    if debate.human_due_at is not None or any(seat.kind == SeatKind.HUMAN for seat in seats):
        person_deadline(debate, plan)
    events.status_changed(debate, plan, decisions)


def person_deadline(debate: Debate, plan: Plan) -> None:
    """Start or end the debate's wait for the person in its human seat.

    When a step of the person's waits (their turn or vote), they have
    ``human_turn_timeout_minutes`` from now to write it (``human_due_at``), after which
    the beat skips it; when none waits, there is no deadline. ``debate`` is updated in
    memory too.
    """
    waiting = plan.user_action_required
    if waiting and debate.human_due_at is None:
        due = timezone.now() + timedelta(minutes=debate.human_turn_timeout_minutes)
    elif not waiting and debate.human_due_at is not None:
        due = None
    else:
        return
    Debate.objects.filter(pk=debate.pk, status__in=ACTIVE_STATUSES).update(human_due_at=due)
    debate.human_due_at = due


def _announced(moved: bool, debate_id: int) -> Debate | None:
    return announce(debate_id) if moved else None


def start(*, debate_id: int, pace: str, votes_at: int | None = None) -> Debate | None:
    """Start a pending debate: round 1 opens once its prepare step has run.

    In the manual pace only the prepare step is released; ``advance`` releases the rest.
    A debate whose votes await its book is held before them (``votes_at``, the index of
    its first vote); ``book_given`` releases them. A pending debate has stored no step
    (no turn, ballot or decision): its state is read with its seats alone.
    """
    now = timezone.now()
    moved = _moved(
        debate_id,
        ACTION_SOURCES["start"],
        status=DebateStatus.RUNNING,
        phase=DebatePhase.OPENING,
        current_round=1,
        started_at=now,
        steps_released=1 if pace == Pace.MANUAL else votes_at,
        step_outcomes={},
    )
    return announce(debate_id, recorded=False) if moved else None


def turn_taken(
    *,
    debate: Debate,
    round_number: int,
    state: State,
    seats: Iterable[Participant],
    turns: Iterable[tuple[int, int, str]],
    recorded: dict | None = None,
) -> bool:
    """Move a running debate to ``state`` (``debates.engine.machine.after_turn``) once a
    turn of ``round_number`` is stored: the next speaker, the next round, the votes, or
    its failure; with ``recorded``, the level and early-stop columns the round's close
    set. Say whether it moved.

    ``debate`` is the state read under the debate's row lock, updated here in memory;
    ``seats`` and ``turns`` (round, participant id, status) are what the step holds of
    the debate, so the state is announced, its plan with it, without reading it back.
    """
    if state.round_ended is not None:
        events.round_ended(debate.pk, state.round_ended)
    if state.failure is not None:
        return fail(debate_id=debate.pk, **vars(state.failure))
    fields = {
        "status": state.status,
        "phase": state.phase,
        "current_round": state.current_round,
        "current_speaker_id": state.current_speaker,
        **(recorded or {}),
    }
    moved = _moved(
        debate.pk, (DebateStatus.RUNNING,), where=Q(current_round__gte=round_number), **fields
    )
    if moved:
        for name, value in fields.items():
            setattr(debate, name, value)
        if state.round_started is not None:
            events.round_started(debate.pk, state.round_started)
        state_published(debate, plan_of(debate, seats=seats, turns=turns), seats)
        if debate.status == DebateStatus.VOTING and debate.awaits_book:
            _tell_caller(debate)  # its votes wait for the book its caller gives
    return moved


def complete(*, debate: Debate, decisions: Iterable[Decision]) -> bool:
    """Complete a voting debate whose consensus is stored; say whether it moved.

    ``debate`` is its state as read under its row lock, ``decisions`` the ones the
    consensus has just stored (none executed yet): the state is announced from them,
    its plan from the seats, turns and ballots (read here), without reading it back.
    """
    fields = {
        "status": DebateStatus.COMPLETED,
        "phase": DebatePhase.DONE,
        "current_speaker": None,
        "finished_at": timezone.now(),
    }
    moved = _moved(debate.pk, (DebateStatus.VOTING,), **fields)
    if moved:
        for name, value in fields.items():
            setattr(debate, name, value)
        seats = list(Participant.objects.filter(debate_id=debate.pk).order_by("speak_order"))
        turns = Message.objects.filter(debate_id=debate.pk).order_by()
        ballots = Ballot.objects.filter(debate_id=debate.pk).order_by()
        plan = plan_of(
            debate,
            seats=seats,
            turns=turns.values_list("round", "participant_id", "status"),
            ballots=ballots.values_list("participant_id", "status"),
        )
        made = [DecisionFacts(decision.action, executed=False) for decision in decisions]
        state_published(debate, plan, seats, made)
        _tell_caller(debate)
    return moved


def fail(*, debate_id: int, step: str, code: str, message: str) -> bool:
    """Fail an active debate with the step that failed and why; ``message`` must be free
    of secrets. A debate already finished stays as it is."""
    moved = _moved(
        debate_id,
        ACTIVE_STATUSES,
        status=DebateStatus.FAILED,
        error={"step": step, "code": code, "message": message},
        current_speaker=None,
        finished_at=timezone.now(),
    )
    if moved:
        logger.warning("debate %s failed at %s: %s", debate_id, step, message)
        metrics.record_on_commit(metrics.ERRORS.inc(source="debate", code=code))
        with events.together(debate_id):
            events.step_failed(debate_id, step=step, code=code, message=message)
            _tell_caller(announce(debate_id))
    return moved


def cancel(*, debate_id: int) -> Debate | None:
    """Cancel a pending or active debate: queued steps become no-ops."""
    moved = _moved(
        debate_id,
        ACTION_SOURCES["cancel"],
        status=DebateStatus.CANCELLED,
        current_speaker=None,
        finished_at=timezone.now(),
    )
    debate = _announced(moved, debate_id)
    if debate is not None:
        _tell_caller(debate)
    return debate


def _tell_caller(debate: Debate) -> None:
    """Send the task ``debate`` names to tell its caller it ended or its votes await
    their book (``Debate.caller_task``), with its id, when the change commits."""
    if debate.caller_task:
        send_on_commit(signature(debate.caller_task, args=(debate.pk,), immutable=True))


def book_given(
    *, debate_id: int, book: dict[str, Any], track_record: dict[str, Any] | None
) -> Debate | None:
    """Store the book (and track record) its caller gives an active debate whose votes
    await them, and release the votes; of concurrent gifts exactly one moves it."""
    return _announced(
        _moved(
            debate_id,
            ACTIVE_STATUSES,
            where=Q(awaits_book=True),
            awaits_book=False,
            book=book,
            track_record=track_record,
            steps_released=None,
        ),
        debate_id,
    )


def retry(*, debate_id: int, to: str) -> Debate | None:
    """Take a failed debate back to ``to`` (running or voting) to go on from its stored
    steps; a held step stays held."""
    return _announced(
        _moved(debate_id, ACTION_SOURCES["retry"], status=to, error=None, finished_at=None),
        debate_id,
    )


def retry_step(
    *, debate_id: int, status: str, to: str, released: int | None, index: int
) -> Debate | None:
    """Release step ``index`` alone to run again: a failed debate goes back to ``to``, a
    held one stays ``status``; either is held after the step (``released``)."""
    fields: dict[str, Any] = {"status": to, "steps_released": index + 1}
    if status == DebateStatus.FAILED:
        fields.update(error=None, finished_at=None)
    released_now = (
        Q(steps_released__isnull=True) if released is None else Q(steps_released=released)
    )
    return _announced(_moved(debate_id, (status,), where=released_now, **fields), debate_id)


def advance(*, debate_id: int, released: int, to: int | None) -> Debate | None:
    """Release the steps of a held debate up to ``to`` (None: every step), if it is
    still held at ``released``; of concurrent advances exactly one moves it."""
    return _announced(
        _moved(
            debate_id,
            ACTION_SOURCES["advance"],
            where=Q(steps_released=released),
            steps_released=to,
        ),
        debate_id,
    )


def prepared(*, debate_id: int, fields: dict[str, Any]) -> bool:
    """Store the market snapshot ``fields`` of an active debate that has none, with its
    prepare step recorded done, and announce the state; say whether it was stored now.
    Takes the debate's row lock; the state is announced from it, without reading it back
    (the debate has no turn before its snapshot)."""
    locked = lock_debate(debate_id=debate_id)
    if locked is None or locked.status not in ACTIVE_STATUSES:
        return False
    outcomes = {**(locked.step_outcomes or {}), outcome_name(PREPARE_KEY): {"status": DONE}}
    moved = _moved(
        debate_id,
        ACTIVE_STATUSES,
        where=Q(market_snapshot__isnull=True),
        step_outcomes=outcomes,
        **fields,
    )
    if moved:
        locked.step_outcomes = outcomes
        seats = list(Participant.objects.filter(debate_id=debate_id).order_by("speak_order"))
        state_published(locked, plan_of(locked, seats=seats, turns=()), seats)
    return moved


def step_recorded(
    *, debate_id: int, key: tuple, status: str, detail: dict[str, Any] | None = None
) -> bool:
    """Record the outcome of a step no other row records (prepare, execution, ...), once;
    say whether it was recorded now. Takes the debate's row lock."""
    locked = lock_debate(debate_id=debate_id)
    name = outcome_name(key)
    if locked is None or name in (locked.step_outcomes or {}):
        return False
    outcomes = {**(locked.step_outcomes or {}), name: {"status": status, **(detail or {})}}
    if not _moved(debate_id, (locked.status,), step_outcomes=outcomes):
        return False
    announce(debate_id)
    return True


def step_forgotten(*, debate_id: int, key: StepKey) -> bool:
    """Drop the failed outcome of step ``key`` of a failed debate (its prepare step), so
    that the step runs again once the debate is retried; say whether it was dropped.
    Takes the debate's row lock."""
    locked = lock_debate(debate_id=debate_id, status=DebateStatus.FAILED)
    name = outcome_name(key)
    outcomes = dict((locked.step_outcomes or {}) if locked is not None else {})
    if outcomes.get(name, {}).get("status") != FAILED:
        return False
    del outcomes[name]
    return (
        Debate.objects.filter(pk=debate_id, status=DebateStatus.FAILED).update(
            step_outcomes=outcomes
        )
        == 1
    )


def progressed(*, debate_id: int) -> None:
    """Mark an active debate alive: a step of it is running (its claim's heartbeat), so
    the watchdog leaves it alone."""
    Debate.objects.filter(pk=debate_id, status__in=ACTIVE_STATUSES).update(
        progressed_at=timezone.now()
    )


def resume_claimed(*, debate_id: int, unfinished: Q, cutoff: datetime) -> bool:
    """Claim the resume of a debate with steps still to run (``unfinished``) that made no
    progress since ``cutoff``, so two watchdogs never resume it at once; say whether
    this call claimed it."""
    stale = Debate.objects.filter(unfinished, pk=debate_id, progressed_at__lt=cutoff)
    return stale.update(progressed_at=timezone.now()) == 1


def person_due_claimed(*, debate_id: int, now: datetime) -> bool:
    """Clear the deadline of the person's step of an active debate if it passed by
    ``now``: the compare-and-set that claims the step's skip; say whether it did."""
    due = Debate.objects.filter(pk=debate_id, status__in=ACTIVE_STATUSES, human_due_at__lte=now)
    return due.update(human_due_at=None) == 1
