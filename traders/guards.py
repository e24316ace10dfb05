"""Portfolio guards: when a trader must stop opening positions (no Django here).

A strategy's risk settings set four guards, each off when unset:

- the daily loss limit: equity down ``daily_loss_pct`` % from the day's starting equity
  (the day is the UTC day of the account's clock); it lifts itself at the next UTC day;
- the maximum drawdown: equity down ``max_drawdown_pct`` % from the highest equity the
  account was seen at;
- the cooldown: the last ``stop_outs`` closed positions were all stopped out; it lifts
  itself ``cooldown_minutes`` later;
- the maximum gross exposure: the open positions' value at least ``max_exposure`` times
  the equity.

Each trips exactly at its threshold. A tripped guard pauses the trader: no new position
opens, closes and stops still work, and only the owner's resume lifts it, but for the
two that lift themselves.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

DAILY_LOSS, DRAWDOWN, COOLDOWN, EXPOSURE = "daily_loss", "drawdown", "cooldown", "exposure"
STOP_LOSS = "stop_loss"


@dataclass(frozen=True)
class GuardLimits:
    """A strategy's guards; None turns one off."""

    daily_loss_pct: Decimal | None = None
    max_drawdown_pct: Decimal | None = None
    stop_outs: int | None = None
    cooldown_minutes: int = 240
    max_exposure: Decimal | None = None


@dataclass(frozen=True)
class AccountFacts:
    """What the guards read of an account at instant ``now``: its equity, the day's
    starting equity, the highest equity seen, the open positions' value, and why its
    positions closed, the newest first."""

    now: datetime
    equity: Decimal
    day_start_equity: Decimal
    peak_equity: Decimal
    exposure: Decimal
    closes: Sequence[str] = ()


@dataclass(frozen=True)
class Trip:
    """A tripped guard: which, why in words, and when it lifts itself (None: at the
    owner's resume only)."""

    guard: str
    reason: str
    lifts_at: datetime | None = None


def tripped(limits: GuardLimits, facts: AccountFacts) -> Trip | None:
    """Return the first guard ``facts`` trip, in the order of the module docstring, or
    None."""
    for check in (_daily_loss, _drawdown, _cooldown, _exposure):
        trip = check(limits, facts)
        if trip is not None:
            return trip
    return None


def _pct_down(start: Decimal, now: Decimal) -> Decimal:
    return (start - now) / start * 100 if start > 0 else Decimal("0")


def _daily_loss(limits: GuardLimits, facts: AccountFacts) -> Trip | None:
    limit = limits.daily_loss_pct
    if limit is None:
        return None
    down = _pct_down(facts.day_start_equity, facts.equity)
    if down < limit:
        return None
    day = facts.now.replace(hour=0, minute=0, second=0, microsecond=0)
    return Trip(
        DAILY_LOSS,
        f"daily loss limit: equity {facts.equity:.2f} is {down:.2f}% below the day's start "
        f"{facts.day_start_equity:.2f} (limit {limit}%)",
        lifts_at=day + timedelta(days=1),
    )


def _drawdown(limits: GuardLimits, facts: AccountFacts) -> Trip | None:
    limit = limits.max_drawdown_pct
    if limit is None:
        return None
    down = _pct_down(facts.peak_equity, facts.equity)
    if down < limit:
        return None
    return Trip(
        DRAWDOWN,
        f"maximum drawdown: equity {facts.equity:.2f} is {down:.2f}% below its peak "
        f"{facts.peak_equity:.2f} (limit {limit}%)",
    )


def _cooldown(limits: GuardLimits, facts: AccountFacts) -> Trip | None:
    count = limits.stop_outs
    if not count:
        return None
    last = list(facts.closes[:count])
    if len(last) < count or any(reason != STOP_LOSS for reason in last):
        return None
    return Trip(
        COOLDOWN,
        f"cooldown: the last {count} positions were stopped out; "
        f"{limits.cooldown_minutes} minutes without opening",
        lifts_at=facts.now + timedelta(minutes=limits.cooldown_minutes),
    )


def _exposure(limits: GuardLimits, facts: AccountFacts) -> Trip | None:
    limit = limits.max_exposure
    if limit is None or facts.equity <= 0:
        return None
    exposure = facts.exposure / facts.equity
    if exposure < limit:
        return None
    return Trip(
        EXPOSURE,
        f"maximum gross exposure: open positions worth {exposure:.2f}x equity (limit {limit}x)",
    )
