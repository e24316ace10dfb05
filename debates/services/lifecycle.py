"""Creating, starting, cancelling, retrying and deleting debates.

Every state change is a compare-and-set ``UPDATE ... WHERE status IN (...)``: when two
requests race, the database lets exactly one through and the other is refused with
``invalid_state``. Events go out through ``debates.events`` when the change commits.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.db.models import QuerySet
from django.utils.dateparse import parse_datetime

from arena.exceptions import Conflict, InvalidState, NotFound
from arena.inputs import validate
from arena.queries import one_or_none
from debates import events
from debates.engine import machine
from debates.engine.book import BookUnavailable
from debates.engine.plan import DONE, FAILED, OPENING, PREPARE, REBUTTAL, VOTING
from debates.locks import lock_debate, lock_debates_for_delete
from debates.models import (
    ACTIVE_STATUSES,
    DEFAULT_HUMAN_TURN_TIMEOUT_MINUTES,
    Ballot,
    CacheMode,
    Debate,
    DebateLevel,
    DebateMode,
    DebateOrigin,
    DebateStatus,
    DeletedSpend,
    Message,
    Pace,
    Participant,
    StepStatus,
    Weighting,
)
from debates.quotas import debate_create_check, debate_start_take, owner_lock
from debates.selectors import debate_state, spend_to_keep
from debates.services import books, transitions
from debates.services.inputs import DebateInputSerializer
from debates.services.modes import model_refusal
from debates.services.transitions import PREPARE_KEY
from debates.state import ACTION_SOURCES, can_advance, debate_plan, retry_step_target
from strategies.market.exceptions import MarketDataError
from strategies.market.snapshot import MarketSnapshot
from strategies.snapshots import market_summary, market_text

logger = logging.getLogger(__name__)

KEYLESS_PROVIDERS = frozenset({"simulated", "openai_compatible"})
# Whether each field of a debate's input is required (DebateInputSerializer's).
_REQUIRED = {name: field.required for name, field in DebateInputSerializer().fields.items()}


@dataclass
class DebateInput:
    """The fields of SPEC 5.1, as given by a client; ``debate_create`` checks them with
    ``DebateInputSerializer``, as it checks a client's JSON."""

    name: Any
    strategy: Any
    participants: list[Any]
    symbol: Any = ""
    max_rounds: Any = 3
    interval_minutes: Any = 5
    prompt_variant: Any = "balanced"
    auto_execute: Any = False
    trader: Any = None
    enable_oi_ranking: Any = False
    oi_ranking_limit: Any = 10
    oi_duration: Any = "4h"
    as_of: datetime | None = None
    cache: Any = CacheMode.OFF
    level: Any = DebateLevel.L2
    judge: Any = None
    weighting: Any = Weighting.CONFIDENCE
    mode: Any = DebateMode.CUSTOM
    mode_models: Any = None
    temperature_range: Any = None
    role_model_map: Any = None
    max_output_tokens: Any = None
    human_turn_timeout_minutes: Any = DEFAULT_HUMAN_TURN_TIMEOUT_MINUTES
    pace: Any = Pace.AUTO
    schedule_id: int | None = None
    backtest_id: int | None = None


def _origin(data: DebateInput | Mapping[str, Any]) -> dict[str, Any]:
    """Return where a debate of ``data`` comes from: the schedule or backtest its input
    names, else (a client's JSON, or neither named) a person."""
    if not isinstance(data, DebateInput):
        return {"origin": DebateOrigin.MANUAL}
    if data.schedule_id is not None:
        return {"origin": DebateOrigin.SCHEDULE, "schedule_id": data.schedule_id}
    if data.backtest_id is not None:
        return {"origin": DebateOrigin.BACKTEST, "backtest_id": data.backtest_id}
    return {"origin": DebateOrigin.MANUAL}


def debate_input_validate(*, owner: Any, data: DebateInput | Mapping[str, Any]) -> dict[str, Any]:
    """Return the values to store of the debate ``data`` describes, its checked ``seats``
    among them; raise ``ValidationError`` naming every bad field (``NotEnoughParticipants``
    when fewer than two seats are given)."""
    if isinstance(data, DebateInput):
        # None is a field left unset, as a client's JSON leaves it out.
        data = {
            name: value
            for name, value in vars(data).items()
            if name in _REQUIRED and (value is not None or _REQUIRED[name])
        }
    return validate(DebateInputSerializer, data, context={"owner": owner})


def debate_create(
    *,
    owner: Any,
    data: DebateInput | Mapping[str, Any],
    quota: bool = True,
    caller_task: str = "",
    awaits_book: bool = False,
) -> Debate:
    """Create a pending debate and its participants; refuse bad input, writing nothing.

    ``data``: a ``DebateInput`` (whose ``schedule_id`` or ``backtest_id`` names where the
    debate comes from), or the fields as a client's JSON gives them. ``quota``
    False: the debate is admitted by its caller's own quota instead of the owner's
    debate quotas (a backtest's step, under ``QUOTA_RUNNING_BACKTESTS``), and is not
    counted in them, at its start either. ``caller_task``: the name of a Celery task
    sent with the debate's id once it ends, and once its votes await their book (a
    backtest's step names the one that advances its backtest). ``awaits_book``: its
    votes wait for the book its caller gives (``debates.services.books``).
    """
    values = debate_input_validate(owner=owner, data=data)
    seats = values.pop("seats")
    with transaction.atomic():
        if quota:
            debate_create_check(owner_id=owner.pk)
        debate = Debate.objects.create(
            owner=owner,
            **_origin(data),
            quota_counted=quota,
            caller_task=caller_task,
            awaits_book=awaits_book,
            **values,
        )
        Participant.objects.bulk_create(
            Participant(
                debate=debate,
                kind=seat.kind,
                ai_model=seat.ai_model,
                personality=seat.personality,
                speak_order=i,
                temperature=seat.temperature,
            )
            for i, seat in enumerate(seats)
        )
        events.stream_opened(debate.pk)
    return debate


def _get_owned(debate_id: int, owner: Any | None, *related: str) -> Debate:
    """Return the debate ``debate_id`` of ``owner`` (anyone's when None), with the
    ``related`` objects read in the same query; raise ``NotFound``."""
    queryset = Debate.objects.all() if owner is None else Debate.objects.filter(owner=owner)
    if related:  # select_related() without names would follow every foreign key
        queryset = queryset.select_related(*related)
    debate = one_or_none(queryset, pk=debate_id)
    if debate is None:
        raise NotFound("Debate not found.")
    return debate


def _refuse_state(debate: Debate, action: str) -> InvalidState:
    return InvalidState(
        f"Cannot {action} a debate that is {debate.status}.",
        fields={"status": [debate.status]},
    )


def _go_on(debate: Debate, state: Debate | None, action: str) -> None:
    """Send the run of ``debate`` once a transition moved it to ``state``; refuse
    ``action`` when the transition did not move it (None)."""
    from debates.services.runs import run_enqueue

    if state is None:
        debate.refresh_from_db()
        raise _refuse_state(debate, action)
    run_enqueue(debate_id=debate.pk, state=state)


def debate_start(*, debate_id: int, owner: Any | None = None) -> Debate:
    """Start a pending debate and send its plan of steps to the workers.

    The start is one short transaction: the market snapshot is the plan's first step
    (``prepare``), built by a worker, so a web request never waits on market data. The
    start is counted in its owner's starts per hour; a debate created outside its
    owner's quotas (``debate_create``) starts outside them. A debate one of whose models
    was disabled since its create (or lost its key) is refused with ``conflict``, naming
    each such seat as the create would.
    """
    debate = _get_owned(debate_id, owner, "judge_model")
    if debate.status not in ACTION_SOURCES["start"]:
        raise _refuse_state(debate, "start")
    _refuse_unusable_models(debate)
    with transaction.atomic():
        if debate.quota_counted:
            debate_start_take(owner_id=debate.owner_id)
        # The run is sent first when the transaction commits, then the events delivered:
        # the workers start on the plan a Redis round trip sooner.
        with events.together(debate_id):
            started = transitions.start(
                debate_id=debate_id, pace=debate.pace, votes_at=_votes_at(debate)
            )
            _go_on(debate, started, "start")
    return Debate.objects.get(pk=debate_id)


def _votes_at(debate: Debate) -> int | None:
    """Return the index of the first vote of a debate whose votes await its book (where
    it is held until the book is given), else None."""
    if not debate.awaits_book:
        return None
    plan = debate_plan(debate)
    return next(step.index for step in plan.steps if step.kind == VOTING)


def _refuse_unusable_models(debate: Debate) -> None:
    """Refuse with ``conflict`` to run a debate (start, retry) one of whose AI models was
    disabled, or lost its key, since its create, naming each seat as the create would."""
    refusals = _model_refusals(debate)
    if refusals:
        reasons = dict.fromkeys(reason for messages in refusals.values() for reason in messages)
        raise Conflict(" ".join(reasons), fields=refusals)


def _model_refusals(debate: Debate) -> dict[str, list[str]]:
    """Return why each AI model the debate would call cannot be called any more (one
    disabled, or its key removed, since the create checked it), named as the create's
    fields are."""
    refusals = {}
    seats = Participant.objects.filter(debate_id=debate.pk).select_related("ai_model")
    for index, seat in enumerate(seats.order_by("speak_order")):
        if seat.ai_model is not None:
            refusal = model_refusal(seat.ai_model, seat.ai_model_id)
            if refusal:
                refusals[f"participants[{index}].ai_model"] = [refusal]
    if debate.judge_model is not None:
        refusal = model_refusal(debate.judge_model, debate.judge_model_id)
        if refusal:
            refusals["judge.ai_model"] = [refusal]
    return refusals


def _snapshot_fields(debate: Debate, snapshot: MarketSnapshot) -> dict[str, Any]:
    """Return the fields that store ``snapshot`` on ``debate``, with its two prompt
    renderings (made here once, not at every step)."""
    stored = snapshot.to_dict()
    return {
        "market_snapshot": stored,
        "market_text": market_text(stored),
        "market_summary": market_summary(stored),
        "symbols": snapshot.symbols,
        "symbol": debate.symbol or snapshot.symbols[0],
    }


def _prepared_fields(
    debate: Debate,
) -> tuple[dict[str, Any] | None, tuple[str, str, str] | None]:
    """Return the fields the prepare step stores (the snapshot, its renderings, the
    trader's book and with it the track record), or None and the failed step's (step,
    code, message)."""
    from strategies.snapshots import debate_snapshot

    try:
        snapshot = debate_snapshot(debate)
    except MarketDataError as exc:
        return None, ("snapshot", "market_data", str(exc))
    fields = _snapshot_fields(debate, snapshot)
    try:
        fields["book"] = books.trader_book(debate)
    except BookUnavailable as exc:
        return None, ("book", "book_unavailable", str(exc))
    if fields["book"] is not None:
        fields["track_record"] = books.track_record(
            debate, instant=debate.as_of or parse_datetime(snapshot.as_of), symbols=snapshot.symbols
        )
    return fields, None


def debate_prepare(*, debate_id: int) -> Debate | None:
    """Run the prepare step of an active debate: build and store its market snapshot,
    and its trader's book, unless it has them. Return the debate as read before the step
    when it may go on, None when it may not.

    When the market data or the book cannot be had the debate is failed with the reason.
    Both are stored once and never rebuilt, so every turn of the debate, and any later
    audit, sees the same market and account.
    """
    debate = one_or_none(
        Debate.objects.select_related("strategy"), pk=debate_id, status__in=ACTIVE_STATUSES
    )
    if debate is None:
        return None
    if debate.market_snapshot is not None:
        with transaction.atomic():
            transitions.step_recorded(debate_id=debate_id, key=PREPARE_KEY, status=DONE)
        return debate
    fields, failure = _prepared_fields(debate)
    with transaction.atomic():
        if fields is None:
            step, code, message = failure
            with events.together(debate_id):
                transitions.step_recorded(debate_id=debate_id, key=PREPARE_KEY, status=FAILED)
                debate_fail(debate_id=debate_id, step=step, code=code, message=message)
            return None
        with events.together(debate_id):
            stored = transitions.prepared(debate_id=debate_id, fields=fields)
            if stored and debate.current_round == 1:
                events.round_started(debate_id, 1)
    return debate


def debate_step_record(
    *, debate_id: int, key: tuple, status: str, detail: dict[str, Any] | None = None
) -> bool:
    """Record the outcome of a step of the plan that no other row records (the
    execution step, say), once, and announce the state; say whether it was recorded."""
    with transaction.atomic():
        return transitions.step_recorded(debate_id=debate_id, key=key, status=status, detail=detail)


def debate_fail(*, debate_id: int, step: str, code: str, message: str) -> bool:
    """Fail an active debate with the step that failed and why; terminal states stay."""
    with transaction.atomic():
        return transitions.fail(debate_id=debate_id, step=step, code=code, message=message)


def debate_cancel(*, debate_id: int, owner: Any | None = None) -> Debate:
    """Cancel a debate: queued steps become no-ops and no later model result is stored."""
    debate = _get_owned(debate_id, owner)
    with transaction.atomic():
        if not transitions.cancel(debate_id=debate_id):
            debate.refresh_from_db()
            raise _refuse_state(debate, "cancel")
    debate.refresh_from_db()
    return debate


def debate_retry(*, debate_id: int, owner: Any | None = None) -> Debate:
    """Resume a failed debate from the step that failed, reusing every stored turn; not
    with a model disabled since (``conflict``). Active again, the debate counts in its
    owner's quotas as a start does, and as one more active debate."""
    debate = _get_owned(debate_id, owner, "judge_model")
    _refuse_unusable_models(debate)
    to = machine.retry_status(debate.phase)
    with transaction.atomic():
        if debate.quota_counted:
            debate_start_take(owner_id=debate.owner_id, activates=True)
        if to == DebateStatus.RUNNING:
            # Failed turns are asked again; answered ones are kept. Deleted first, so
            # that the state announced by the retry already shows them to run.
            Message.objects.filter(
                debate_id=debate_id,
                status=StepStatus.ERROR,
                round__gte=debate.current_round,
                debate__status=DebateStatus.FAILED,
            ).delete()
        _forget_prepare_failure(debate)
        _go_on(debate, transitions.retry(debate_id=debate_id, to=to), "retry")
    debate.refresh_from_db()
    return debate


def _forget_prepare_failure(debate: Debate) -> None:
    """Drop the failed outcome of a prepare step, so that the step runs again."""
    transitions.step_forgotten(debate_id=debate.pk, key=PREPARE_KEY)


def debate_retry_step(*, debate_id: int, owner: Any | None = None) -> Debate:
    """Run the current failed step of a debate again, alone, reusing everything stored.

    A failed debate goes back to the step that failed it; a held debate (the manual
    pace) to the failed step it stopped after. Either way the debate is held after the
    step, whatever its pace: ``advance`` goes on from there. Not with a model disabled
    since (``conflict``). A failed debate active again counts in its owner's quotas as
    ``debate_retry``'s does.
    """
    debate = _get_owned(debate_id, owner, "judge_model")
    _refuse_unusable_models(debate)
    with transaction.atomic():
        if debate.quota_counted:
            owner_lock(owner_id=debate.owner_id)  # the owner's row before the debate's
        locked = lock_debate(debate_id=debate_id)
        if locked is None:
            raise NotFound("Debate not found.")
        state = debate_state(debate_id=debate_id)
        target = retry_step_target(state, debate_plan(state))
        if target is None:
            raise _refuse_state(state, "retry_step")
        if state.status == DebateStatus.FAILED and debate.quota_counted:
            debate_start_take(owner_id=debate.owner_id, activates=True)
        _forget_step(debate_id, target.kind, target.round, target.speaker)
        if target.kind == PREPARE:
            _forget_prepare_failure(state)
        to = machine.retry_step_status(state.status, target.kind)
        moved = transitions.retry_step(
            debate_id=debate_id,
            status=state.status,
            to=to,
            released=state.steps_released,
            index=target.index,
        )
        _go_on(debate, moved, "retry_step")
    debate.refresh_from_db()
    return debate


def _forget_step(debate_id: int, kind: str, round_number: int | None, speaker: int | None) -> None:
    """Delete the failed record of a step, so that the step runs again."""
    if kind in (OPENING, REBUTTAL):
        Message.objects.filter(
            debate_id=debate_id, round=round_number, participant_id=speaker, status=StepStatus.ERROR
        ).delete()
    elif kind == VOTING:
        Ballot.objects.filter(
            debate_id=debate_id, participant_id=speaker, status=StepStatus.ERROR
        ).delete()


def debate_advance(*, debate_id: int, owner: Any | None = None) -> Debate:
    """Go on with a debate held before its next step.

    In the manual pace the next step is released (the next one not run yet); in the
    automatic pace, a debate held after a retried step goes on to its end. Of concurrent
    advances exactly one moves the debate; the others are refused.
    """
    debate = _get_owned(debate_id, owner)
    state = debate_state(debate_id=debate_id)
    plan = debate_plan(state)
    if not can_advance(state, plan) or state.status not in ACTION_SOURCES["advance"]:
        raise _refuse_state(state, "advance")
    released = state.steps_released
    upto = None
    if state.pace == Pace.MANUAL:
        following = plan.next_unrecorded(released)
        upto = following.index + 1 if following is not None else len(plan.steps)
    with transaction.atomic():
        moved = transitions.advance(debate_id=debate_id, released=released, to=upto)
        _go_on(debate, moved, "advance")
    debate.refresh_from_db()
    return debate


def debate_delete(*, debate_id: int, owner: Any | None = None) -> None:
    """Delete a pending or finished debate and everything it holds but its spend."""
    debate = _get_owned(debate_id, owner)
    deletable = Debate.objects.filter(pk=debate_id, status__in=ACTION_SOURCES["delete"])
    if not debates_delete(debates=deletable):
        raise _refuse_state(debate, "delete")
    events.debate_deleted(debate_id)


def debates_delete(*, debates: QuerySet[Debate]) -> int:
    """Delete ``debates`` and everything they hold; return how many were deleted.

    What their model calls used and cost is kept first (``DeletedSpend``), by owner,
    schedule and UTC day: the calls were paid for, and the spend and the daily token
    budgets go on counting them.
    """
    with transaction.atomic():
        ids = lock_debates_for_delete(debates)
        doomed = Debate.objects.filter(pk__in=ids)
        DeletedSpend.objects.bulk_create(
            DeletedSpend(
                owner_id=owner_id,
                schedule_id=schedule_id,
                day=day,
                **{f.name: getattr(spend, f.name) for f in dataclasses.fields(spend)},
            )
            for (owner_id, schedule_id, day), spend in spend_to_keep(doomed).items()
        )
        doomed.delete()
    return len(ids)
