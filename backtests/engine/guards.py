"""The portfolio guards of a simulated account (``traders.guards``, applied as live).

A backtest's account is measured against the strategy's guards at each step, before
that step's decisions, as a live account is before it executes: its equity at the step,
the equity the UTC day started at, the highest equity it was measured at, the open
positions' value, and why its positions closed since the last pause lifted. A tripped
guard pauses the openings and is recorded with its instant; the daily limit lifts at
the next UTC day and the cooldown after its minutes, the others stay for the rest of the
run (no owner resumes a backtest).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Protocol

from traders.guards import AccountFacts, GuardLimits, Trip, tripped

# A trade's close reason as a live position's is named (the guards count stop-outs by it).
LIVE_REASONS = {"stop": "stop_loss", "target": "take_profit"}


class Closed(Protocol):
    """A closed trade as the guards read it: when it closed, and why."""

    exit_ms: int
    reason: str


@dataclass(frozen=True)
class GuardTrip:
    """A guard that paused the account's openings at ``at_ms``, and why."""

    at_ms: int
    guard: str
    reason: str


@dataclass
class GuardWatch:
    """What the guards of ``limits`` have seen of one account, and its pause."""

    limits: GuardLimits
    paused: Trip | None = None
    trips: list[GuardTrip] = field(default_factory=list)
    _day: date | None = None
    _day_start: Decimal = Decimal("0")
    _peak: Decimal | None = None
    _since_ms: int = -1

    @property
    def off(self) -> bool:
        """Say whether no guard is set: nothing to measure."""
        limits = self.limits
        return (limits.daily_loss_pct, limits.max_drawdown_pct, limits.max_exposure) == (
            None,
            None,
            None,
        ) and not limits.stop_outs

    def measure(
        self,
        at_ms: int,
        *,
        equity: Decimal,
        exposure: Decimal,
        closed: Sequence[Closed],
    ) -> None:
        """Measure the account at ``at_ms``: its ``equity``, its open positions' value
        ``exposure`` and its ``closed`` trades, oldest first.
        Start a new UTC day's equity, raise the peak, lift a pause whose time came, and
        pause the openings when a guard trips."""
        now = datetime.fromtimestamp(at_ms / 1000, tz=UTC)
        if self._day != now.date():
            self._day, self._day_start = now.date(), equity
        self._peak = equity if self._peak is None else max(self._peak, equity)
        if self.paused is not None and self.paused.lifts_at and self.paused.lifts_at <= now:
            self.paused, self._since_ms = None, at_ms
        if self.paused is not None:
            return
        facts = AccountFacts(
            now=now,
            equity=equity,
            day_start_equity=self._day_start,
            peak_equity=self._peak,
            exposure=exposure,
            closes=self._last_closes(closed),
        )
        self.paused = tripped(self.limits, facts)
        if self.paused is not None:
            self.trips.append(GuardTrip(at_ms, self.paused.guard, self.paused.reason))

    def _last_closes(self, closed: Sequence[Closed]) -> list[str]:
        """Return why the last ``stop_outs`` trades closed since the last pause lifted,
        newest first (all the cooldown reads; none when it is off)."""
        count = self.limits.stop_outs or 0
        recent = closed[max(0, len(closed) - count) :] if count else ()
        return [
            LIVE_REASONS.get(trade.reason, trade.reason)
            for trade in reversed(recent)
            if trade.exit_ms > self._since_ms
        ]
