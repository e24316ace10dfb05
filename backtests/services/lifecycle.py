"""Creating, cancelling and deleting backtests.

A backtest is checked by the rules of a debate (SPEC 5.1: an owned strategy, 2 to 6
seats of the owner's enabled models, rounds 2..5, a prompt variant, the cache mode),
through the debate services' own check, and by its own: a strategy on the dataset, a
window inside that strategy's dataset window, a step of at least 15 minutes in
multiples of 15, at most ``MAX_STEPS`` steps, a scoring horizon likewise, paper
settings in range. Every bad field is named; nothing is written.

State changes are compare-and-set updates; events go out when they commit.
"""

from __future__ import annotations

import contextlib
import math
import secrets
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from decimal import Decimal, InvalidOperation
from typing import Any

from django.db import transaction

from arena.exceptions import InvalidState, NotFound, ValidationError
from arena.inputs import validate
from arena.worker import send_on_commit
from backtests import events
from backtests.engine.baseline import OFF, ROTATE, SEAT_CHOICES
from backtests.models import (
    ACTIVE_STATUSES,
    TERMINAL_STATUSES,
    Backtest,
    BookMode,
    CoinScope,
)
from backtests.services import transitions
from debates.models import ACTIVE_STATUSES as DEBATE_ACTIVE
from debates.models import CacheMode, Debate, DebateLevel, DebateStatus, Weighting
from debates.quotas import backtest_start_check
from debates.services import debate_cancel, debates_delete
from debates.services.inputs import (
    MIN_PARTICIPANTS,
    NotEnoughParticipants,
    TemplateInputSerializer,
)
from strategies.models import MarketSource
from strategies.snapshots import outside_replay_window

# What a backtest's debates are made of, checked as a debate's (``TemplateInputSerializer``).
TEMPLATE_FIELDS = (
    "name",
    "strategy",
    "participants",
    "symbol",
    "max_rounds",
    "prompt_variant",
    "cache",
    "level",
    "weighting",
)
MAX_STEPS = 2000
STEP_QUANTUM_MINUTES = 15
MIN_BALANCE = Decimal("12")
MAX_BALANCE = Decimal("1000000000")
MAX_FEE_RATE = Decimal("0.1")
MAX_SLIPPAGE_BPS = Decimal("1000")


@dataclass
class BacktestInput:
    """The fields of a backtest, as given by a client (types are checked here too)."""

    name: Any
    strategy: Any
    participants: Any
    start: Any
    end: Any
    interval_minutes: Any
    symbol: Any = ""
    max_rounds: Any = 2
    prompt_variant: Any = "balanced"
    horizon_minutes: Any = None
    starting_balance: Any = Decimal("1000")
    fee_rate: Any = Decimal("0.0004")
    slippage_bps: Any = Decimal("0")
    coins: Any = CoinScope.PRIMARY
    book: Any = BookMode.AWARE
    cache: Any = CacheMode.USE
    level: Any = DebateLevel.L2
    weighting: Any = Weighting.CONFIDENCE
    baseline: Any = OFF
    errors: dict[str, list[str]] = field(default_factory=dict)

    def refuse(self, name: str, message: str) -> None:
        self.errors.setdefault(name, []).append(message)


def step_instants(start: datetime, end: datetime, interval_minutes: int) -> list[datetime]:
    """Return the instants of the steps of a window: from ``start``, every interval,
    before ``end``."""
    count = math.ceil((end - start) / timedelta(minutes=interval_minutes))
    return [start + timedelta(minutes=interval_minutes * n) for n in range(count)]


def _minutes(data: BacktestInput, name: str) -> int | None:
    value = getattr(data, name)
    if isinstance(value, bool) or not isinstance(value, int):
        data.refuse(name, "Must be an integer number of minutes.")
        return None
    if value < STEP_QUANTUM_MINUTES or value % STEP_QUANTUM_MINUTES:
        data.refuse(
            name,
            f"Must be at least {STEP_QUANTUM_MINUTES} minutes and a multiple of "
            f"{STEP_QUANTUM_MINUTES}; got {value}.",
        )
        return None
    return value


def _decimal(data: BacktestInput, name: str, low: Decimal, high: Decimal, *, open_low=False):
    value = getattr(data, name)
    try:
        number = Decimal(str(value)) if not isinstance(value, bool) else None
    except InvalidOperation:
        number = None
    if number is None or not number.is_finite():
        data.refuse(name, "Must be a number.")
        return None
    if number < low or number > high or (open_low and number == low):
        side = "above" if open_low else "at least"
        shown = format(number.normalize(), "f")
        data.refuse(name, f"Must be {side} {low} and at most {high}; got {shown}.")
        return None
    return number


def _instant(data: BacktestInput, name: str) -> datetime | None:
    value = getattr(data, name)
    if not isinstance(value, datetime) or value.tzinfo is None:
        data.refuse(name, "Must be a timezone-aware instant.")
        return None
    return value


def _window(data: BacktestInput, strategy: Any, values: dict[str, Any]) -> None:
    start, end = _instant(data, "start"), _instant(data, "end")
    interval = _minutes(data, "interval_minutes")
    values.update(start=start, end=end, interval_minutes=interval)
    if start is None or end is None:
        return
    if end <= start:
        data.refuse("end", "Must be after start.")
        return
    if strategy is not None and strategy.market_source == MarketSource.DATASET:
        for name, instant in (("start", start), ("end", end)):
            outside = outside_replay_window(strategy, instant)
            if outside:
                data.refuse(name, outside)
    if interval is not None:
        steps = len(step_instants(start, end, interval))
        if steps > MAX_STEPS:
            data.refuse(
                "end",
                f"The window holds {steps} steps of {interval} minutes; at most {MAX_STEPS}.",
            )
        values["steps_total"] = steps


def _template(owner: Any, data: BacktestInput) -> dict[str, Any]:
    """Return the checked settings of the backtest's debates; refused (recorded in
    ``data``), none."""
    given = {name: getattr(data, name) for name in TEMPLATE_FIELDS}
    try:
        return validate(TemplateInputSerializer, given, context={"owner": owner})
    except ValidationError as exc:
        for name, messages in exc.fields.items():
            for message in messages:
                data.refuse(name, message)
        return {}


def backtest_input_clean(owner: Any, data: BacktestInput) -> dict[str, Any]:
    """Check every field; return the columns to store (only used when nothing was refused)."""
    template = _template(owner, data)
    values = {name: template.get(name) for name in TEMPLATE_FIELDS}
    values["participants"] = [seat.as_template() for seat in template.get("seats", [])]
    strategy = values["strategy"]
    if strategy is not None and strategy.market_source != MarketSource.DATASET:
        data.refuse(
            "strategy",
            f"A backtest needs a strategy on the dataset; {strategy.name} reads live prices.",
        )
    _window(data, strategy, values)
    if data.horizon_minutes is None:
        values["horizon_minutes"] = values["interval_minutes"]
    else:
        values["horizon_minutes"] = _minutes(data, "horizon_minutes")
    values["starting_balance"] = _decimal(data, "starting_balance", MIN_BALANCE, MAX_BALANCE)
    values["fee_rate"] = _decimal(data, "fee_rate", Decimal("0"), MAX_FEE_RATE)
    values["slippage_bps"] = _decimal(data, "slippage_bps", Decimal("0"), MAX_SLIPPAGE_BPS)
    if data.coins not in CoinScope.values:
        data.refuse("coins", f"One of {', '.join(CoinScope.values)}.")
    values["coins"] = data.coins
    if data.book not in BookMode.values:
        data.refuse("book", f"One of {', '.join(BookMode.values)}.")
    values["book"] = data.book
    values["baseline"] = _baseline(data, len(values["participants"]))
    return values


def _baseline(data: BacktestInput, seats: int) -> str:
    """Return the budget-matched baseline asked for: off, rotate (each seat's model in
    turn) or one seat (``P1``...) of the debate."""
    allowed = [OFF, ROTATE, *SEAT_CHOICES[: max(seats, 1)]]
    if data.baseline not in allowed:
        seat = "P1" if seats <= 1 else f"P1..P{seats}"
        data.refuse("baseline", f"One of off, rotate or a seat of the debate ({seat}).")
    return data.baseline


def _check_quota(owner: Any) -> None:
    """Refuse a backtest past the owner's quota of running ones (``debates.quotas``)."""
    running = Backtest.objects.filter(owner=owner, status__in=ACTIVE_STATUSES).count()
    backtest_start_check(owner_id=owner.pk, running=running)


def backtest_create(*, owner: Any, data: BacktestInput) -> Backtest:
    """Create a pending backtest and start its run; refuse bad input, writing nothing."""
    from backtests.tasks import backtest_tick_task

    values = backtest_input_clean(owner, data)
    if data.errors:
        # The same code as for a debate: not_enough_participants when seats are missing.
        few = isinstance(data.participants, list) and len(data.participants) < MIN_PARTICIPANTS
        raise (NotEnoughParticipants if few else ValidationError)(fields=data.errors)
    with transaction.atomic():
        _check_quota(owner)
        backtest = Backtest.objects.create(owner=owner, tick_token=secrets.token_hex(8), **values)
        events.stream_opened(backtest.pk)
        send_on_commit(backtest_tick_task.si(backtest.pk, backtest.tick_token))
    return backtest


def _get_owned(backtest_id: int, owner: Any | None) -> Backtest:
    queryset = Backtest.objects.all() if owner is None else Backtest.objects.filter(owner=owner)
    backtest = queryset.filter(pk=backtest_id).first()
    if backtest is None:
        raise NotFound("Backtest not found.")
    return backtest


def backtest_cancel(*, backtest_id: int, owner: Any | None = None) -> Backtest:
    """Cancel a pending or running backtest: no debate starts after the cancel commits,
    and the debates it has running are cancelled."""
    backtest = _get_owned(backtest_id, owner)
    with transaction.atomic():
        # Waits for a tick holding the row: debates it started are in the list below.
        if not transitions.cancelled(backtest):
            backtest.refresh_from_db()
            raise InvalidState(
                f"Cannot cancel a backtest that is {backtest.status}.",
                fields={"status": [backtest.status]},
            )
    debates_cancel(backtest)
    return backtest


def debates_cancel(backtest: Backtest) -> None:
    """Cancel every debate of ``backtest`` that has not ended."""
    unfinished = Debate.objects.filter(
        backtest_step__backtest=backtest, status__in=(DebateStatus.PENDING, *DEBATE_ACTIVE)
    )
    for debate_id in unfinished.values_list("pk", flat=True):
        with contextlib.suppress(InvalidState):  # it ended meanwhile
            debate_cancel(debate_id=debate_id)


def backtest_delete(*, backtest_id: int, owner: Any | None = None) -> None:
    """Delete a finished backtest, its steps and their debates (409 while it runs)."""
    backtest = _get_owned(backtest_id, owner)
    with transaction.atomic():
        locked = (
            Backtest.objects.select_for_update()
            .filter(pk=backtest_id, status__in=TERMINAL_STATUSES)
            .first()
        )
        if locked is None:
            raise InvalidState(
                f"Cannot delete a backtest that is {backtest.status}; cancel it first.",
                fields={"status": [backtest.status]},
            )
        debates = Debate.objects.filter(backtest_step__backtest=locked)
        active = debates.filter(status__in=DEBATE_ACTIVE).exists()
        if active:
            raise InvalidState("Its cancelled debates are still stopping; try again shortly.")
        debates_delete(debates=debates)
        locked.delete()
