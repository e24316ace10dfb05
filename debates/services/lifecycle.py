"""Creating, starting, cancelling, retrying and deleting debates.

Every state change is a compare-and-set ``UPDATE ... WHERE status IN (...)``: when two
requests race, the database lets exactly one through and the other is refused with
``invalid_state``. Events go out through ``debates.events`` when the change commits.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from arena.exceptions import InvalidState, NotFound, ValidationError
from debates import events
from debates.engine.personalities import PERSONALITIES, VARIANTS
from debates.models import (
    ACTIVE_STATUSES,
    AIModel,
    CacheMode,
    Debate,
    DebatePhase,
    DebateStatus,
    Message,
    OIDuration,
    Participant,
    StepStatus,
    Weighting,
)
from debates.quotas import debate_create_check, debate_start_check
from debates.state import ACTION_SOURCES, STATE_COLUMNS
from strategies.market.exceptions import InvalidSymbolError, MarketDataError
from strategies.market.snapshot import MarketSnapshot
from strategies.market.symbols import normalize_symbol
from strategies.models import MarketSource, Strategy
from traders.models import Trader

logger = logging.getLogger(__name__)

MIN_PARTICIPANTS, MAX_PARTICIPANTS = 2, 6
MIN_ROUNDS, MAX_ROUNDS = 2, 5
KEYLESS_PROVIDERS = frozenset({"simulated", "openai_compatible"})


class NotEnoughParticipants(ValidationError):
    """Fewer than two participants were given; ``fields`` still names every bad field."""

    code = "not_enough_participants"


def input_refusal(data: DebateInput) -> ValidationError:
    """Return the error refusing ``data``, whose ``errors`` are not empty."""
    few = isinstance(data.participants, list) and len(data.participants) < MIN_PARTICIPANTS
    return (NotEnoughParticipants if few else ValidationError)(fields=data.errors)


@dataclass(frozen=True)
class Seat:
    """One requested participant: a model id and a personality id."""

    ai_model: Any
    personality: Any


@dataclass
class DebateInput:
    """The fields of SPEC 5.1, as given by a client (types are checked here too)."""

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
    weighting: Any = Weighting.CONFIDENCE
    schedule_id: int | None = None
    errors: dict[str, list[str]] = field(default_factory=dict)

    def refuse(self, name: str, message: str) -> None:
        self.errors.setdefault(name, []).append(message)


def _int_in(data: DebateInput, name: str, low: int, high: int | None) -> int | None:
    value = getattr(data, name)
    if isinstance(value, bool) or not isinstance(value, int):
        data.refuse(name, "Must be an integer.")
        return None
    if value < low or (high is not None and value > high):
        bound = f"between {low} and {high}" if high is not None else f"at least {low}"
        data.refuse(name, f"Must be {bound}; got {value}.")
        return None
    return value


def _owned(model: type, owner: Any, pk: Any, data: DebateInput, name: str) -> Any:
    if isinstance(pk, bool) or not isinstance(pk, int):
        data.refuse(name, "Must be the id of one of your objects.")
        return None
    obj = model.objects.filter(owner=owner, pk=pk).first()
    if obj is None:
        data.refuse(name, f"No such object: {pk}.")
    return obj


def _seats(owner: Any, data: DebateInput) -> list[tuple[AIModel, str]]:
    raw = data.participants
    if not isinstance(raw, list):
        data.refuse("participants", "Must be a list of {ai_model, personality}.")
        return []
    if not MIN_PARTICIPANTS <= len(raw) <= MAX_PARTICIPANTS:
        data.refuse(
            "participants",
            f"A debate needs {MIN_PARTICIPANTS} to {MAX_PARTICIPANTS} participants; "
            f"got {len(raw)}.",
        )
        return []
    ids = [seat.get("ai_model") if isinstance(seat, dict) else None for seat in raw]
    models = {
        m.pk: m
        for m in AIModel.objects.filter(owner=owner, pk__in=[i for i in ids if isinstance(i, int)])
    }
    seats: list[tuple[AIModel, str]] = []
    for index, seat in enumerate(raw):
        where = f"participants[{index}]"
        if not isinstance(seat, dict):
            data.refuse(where, "Must be an object {ai_model, personality}.")
            continue
        personality = seat.get("personality")
        if personality not in PERSONALITIES:
            data.refuse(
                f"{where}.personality",
                f"Unknown personality {personality!r}; one of {', '.join(PERSONALITIES)}.",
            )
        model = models.get(seat.get("ai_model")) if isinstance(seat.get("ai_model"), int) else None
        if model is None:
            data.refuse(f"{where}.ai_model", f"No such AI model: {seat.get('ai_model')!r}.")
        elif not model.enabled:
            data.refuse(f"{where}.ai_model", f"AI model {model.name!r} is disabled.")
        elif model.provider not in KEYLESS_PROVIDERS and not model.api_key:
            data.refuse(f"{where}.ai_model", f"AI model {model.name!r} has no API key.")
        if model is not None and personality in PERSONALITIES:
            seats.append((model, personality))
    return seats


def _as_of_in_window(strategy: Strategy, data: DebateInput) -> None:
    """Refuse an ``as_of`` outside the dataset window of a strategy on the dataset."""
    from strategies.snapshots import outside_replay_window

    if strategy.market_source == MarketSource.DATASET:
        refusal = outside_replay_window(strategy, data.as_of)
        if refusal is not None:
            data.refuse("as_of", refusal)


def debate_input_clean(owner: Any, data: DebateInput) -> dict[str, Any]:
    """Check every field; return the values to store (only used when nothing was refused)."""
    values: dict[str, Any] = {}
    if not isinstance(data.name, str) or not data.name.strip():
        data.refuse("name", "Required.")
    elif len(data.name.strip()) > 200:
        data.refuse("name", "At most 200 characters.")
    else:
        values["name"] = data.name.strip()

    values["strategy"] = _owned(Strategy, owner, data.strategy, data, "strategy")
    values["max_rounds"] = _int_in(data, "max_rounds", MIN_ROUNDS, MAX_ROUNDS)
    values["interval_minutes"] = _int_in(data, "interval_minutes", 1, None)
    values["oi_ranking_limit"] = _int_in(data, "oi_ranking_limit", 1, 10)

    symbol = data.symbol or ""
    if symbol:
        try:
            symbol = normalize_symbol(symbol)
        except InvalidSymbolError as exc:
            data.refuse("symbol", str(exc))
    values["symbol"] = symbol

    if data.prompt_variant not in VARIANTS:
        data.refuse("prompt_variant", f"One of {', '.join(VARIANTS)}.")
    values["prompt_variant"] = data.prompt_variant
    if data.oi_duration not in OIDuration.values:
        data.refuse("oi_duration", f"One of {', '.join(OIDuration.values)}.")
    values["oi_duration"] = data.oi_duration
    for flag in ("auto_execute", "enable_oi_ranking"):
        if not isinstance(getattr(data, flag), bool):
            data.refuse(flag, "Must be true or false.")
        values[flag] = getattr(data, flag)

    values["trader"] = None
    if data.trader is not None:
        values["trader"] = _owned(Trader, owner, data.trader, data, "trader")
    elif data.auto_execute is True:
        data.refuse("trader", "Required when auto_execute is true.")

    if data.as_of is not None and (
        not isinstance(data.as_of, datetime) or data.as_of.tzinfo is None
    ):
        data.refuse("as_of", "Must be a timezone-aware instant.")
    elif data.as_of is not None and values["strategy"] is not None:
        _as_of_in_window(values["strategy"], data)
    values["as_of"] = data.as_of
    if data.cache not in CacheMode.values:
        data.refuse("cache", f"One of {', '.join(CacheMode.values)}.")
    values["cache"] = data.cache
    if data.weighting not in Weighting.values:
        data.refuse("weighting", f"One of {', '.join(Weighting.values)}.")
    values["weighting"] = data.weighting
    values["seats"] = _seats(owner, data)
    return values


def debate_create(*, owner: Any, data: DebateInput) -> Debate:
    """Create a pending debate and its participants; refuse bad input, writing nothing."""
    values = debate_input_clean(owner, data)
    if data.errors:
        raise input_refusal(data)
    seats = values.pop("seats")
    with transaction.atomic():
        debate_create_check(owner_id=owner.pk)
        debate = Debate.objects.create(owner=owner, schedule_id=data.schedule_id, **values)
        Participant.objects.bulk_create(
            Participant(debate=debate, ai_model=model, personality=personality, speak_order=i)
            for i, (model, personality) in enumerate(seats)
        )
        events.stream_opened(debate.pk)
    return debate


def _transition(
    debate_id: int, *, action: str, to: str, sources: tuple[str, ...] | None = None, **fields: Any
) -> bool:
    """Move a debate to status ``to`` if its status is one of ``sources``; say if it moved."""
    allowed = sources if sources is not None else ACTION_SOURCES[action]
    moved = Debate.objects.filter(pk=debate_id, status__in=allowed).update(
        status=to, progressed_at=timezone.now(), **fields
    )
    return moved == 1


def _get_owned(debate_id: int, owner: Any | None, *related: str) -> Debate:
    """Return the debate ``debate_id`` of ``owner`` (anyone's when None), with the
    ``related`` objects read in the same query; raise ``NotFound``."""
    queryset = Debate.objects.all() if owner is None else Debate.objects.filter(owner=owner)
    if related:  # select_related() without names would follow every foreign key
        queryset = queryset.select_related(*related)
    debate = queryset.filter(pk=debate_id).first()
    if debate is None:
        raise NotFound("Debate not found.")
    return debate


def _refuse_state(debate: Debate, action: str) -> InvalidState:
    return InvalidState(
        f"Cannot {action} a debate that is {debate.status}.",
        fields={"status": [debate.status]},
    )


def debate_start(*, debate_id: int, owner: Any | None = None) -> Debate:
    """Start a pending debate: store its market snapshot once and enqueue its run.

    The snapshot is built first and stored by the compare-and-set that starts the
    debate, so a start is one short transaction; of two concurrent starts, the one
    that loses builds a snapshot for nothing and is refused.
    """
    from debates.services.runs import run_enqueue
    from strategies.snapshots import debate_snapshot

    debate = _get_owned(debate_id, owner, "strategy")
    if debate.status not in ACTION_SOURCES["start"]:
        raise _refuse_state(debate, "start")
    try:
        snapshot, failure = debate_snapshot(debate), None
    except MarketDataError as exc:
        snapshot, failure = None, str(exc)
    started = {
        "phase": DebatePhase.OPENING,
        "current_round": 1,
        "started_at": timezone.now(),
        **(_snapshot_fields(debate, snapshot) if snapshot is not None else {}),
    }
    with transaction.atomic():
        debate_start_check(owner_id=debate.owner_id)
        if not _transition(debate_id, action="start", to=DebateStatus.RUNNING, **started):
            debate.refresh_from_db()
            raise _refuse_state(debate, "start")
        if snapshot is None:
            debate_fail(debate_id=debate_id, step="snapshot", code="market_data", message=failure)
            return Debate.objects.get(pk=debate_id)
        debate.status = DebateStatus.RUNNING
        for name, value in started.items():
            setattr(debate, name, value)
        # The run is sent first when the transaction commits, then the events delivered:
        # the workers start on the openings a Redis round trip sooner.
        run_enqueue(debate=debate, fresh=True)
        with events.together(debate_id):
            events.status_changed(debate)
            events.round_started(debate_id, 1)
    return debate


def _snapshot_fields(debate: Debate, snapshot: MarketSnapshot) -> dict[str, Any]:
    """Return the fields that store ``snapshot`` on ``debate``."""
    return {
        "market_snapshot": snapshot.to_dict(),
        "symbols": snapshot.symbols,
        "symbol": debate.symbol or snapshot.symbols[0],
    }


def debate_prepare(*, debate_id: int) -> bool:
    """Build and store the market snapshot of a running debate unless it has one.

    Return False when the market data cannot be had: the debate is then failed with
    the reason. The snapshot is stored once and never rebuilt, so every turn of the
    debate, and any later audit, sees the same market.
    """
    from strategies.snapshots import debate_snapshot

    debate = Debate.objects.select_related("strategy").get(pk=debate_id)
    if debate.market_snapshot is not None:
        return True
    try:
        snapshot = debate_snapshot(debate)
    except MarketDataError as exc:
        debate_fail(debate_id=debate_id, step="snapshot", code="market_data", message=str(exc))
        return False
    Debate.objects.filter(
        pk=debate_id, status__in=ACTIVE_STATUSES, market_snapshot__isnull=True
    ).update(**_snapshot_fields(debate, snapshot))
    return True


def debate_fail(*, debate_id: int, step: str, code: str, message: str) -> bool:
    """Fail an active debate with the step that failed and why; terminal states stay."""
    with transaction.atomic():
        moved = _transition(
            debate_id,
            action="fail",
            to=DebateStatus.FAILED,
            sources=ACTIVE_STATUSES,
            error={"step": step, "code": code, "message": message},
            current_speaker=None,
            finished_at=timezone.now(),
        )
        if moved:
            logger.warning("debate %s failed at %s: %s", debate_id, step, message)
            with events.together(debate_id):
                events.step_failed(debate_id, step=step, code=code, message=message)
                events.status_changed(Debate.objects.only(*STATE_COLUMNS).get(pk=debate_id))
    return moved


def debate_cancel(*, debate_id: int, owner: Any | None = None) -> Debate:
    """Cancel a debate: queued steps become no-ops and no later model result is stored."""
    debate = _get_owned(debate_id, owner)
    with transaction.atomic():
        if not _transition(
            debate_id,
            action="cancel",
            to=DebateStatus.CANCELLED,
            current_speaker=None,
            finished_at=timezone.now(),
        ):
            debate.refresh_from_db()
            raise _refuse_state(debate, "cancel")
        debate.refresh_from_db()
        events.status_changed(debate)
    return debate


def debate_retry(*, debate_id: int, owner: Any | None = None) -> Debate:
    """Resume a failed debate from the step that failed, reusing every stored turn."""
    from debates.services.runs import run_enqueue

    debate = _get_owned(debate_id, owner)
    voting = debate.phase in (DebatePhase.VOTING, DebatePhase.CONSENSUS)
    with transaction.atomic():
        if not _transition(
            debate_id,
            action="retry",
            to=DebateStatus.VOTING if voting else DebateStatus.RUNNING,
            error=None,
            finished_at=None,
        ):
            debate.refresh_from_db()
            raise _refuse_state(debate, "retry")
        if not voting:
            # Failed turns are asked again; answered ones are kept.
            Message.objects.filter(
                debate_id=debate_id, status=StepStatus.ERROR, round__gte=debate.current_round
            ).delete()
    if not debate_prepare(debate_id=debate_id):
        return Debate.objects.get(pk=debate_id)
    with transaction.atomic():
        debate = Debate.objects.get(pk=debate_id)
        events.status_changed(debate)
        run_enqueue(debate=debate)
    return debate


def debate_delete(*, debate_id: int, owner: Any | None = None) -> None:
    """Delete a pending or finished debate and everything it holds."""
    debate = _get_owned(debate_id, owner)
    deleted, _ = Debate.objects.filter(pk=debate_id, status__in=ACTION_SOURCES["delete"]).delete()
    if not deleted:
        raise _refuse_state(debate, "delete")
