"""The figures of one rule's run: returns, risk, trades.

- ``total_return``: final equity / starting balance - 1.
- ``max_drawdown``: the largest fall of the equity curve from a peak before it, as a
  fraction of that peak.
- ``sharpe`` and ``sortino``: from the per-step returns of the curve (one a step, from
  each step's instant to the next's, the last to the window's end), annualised by the
  steps in a year (365 days: crypto trades every day). Sharpe divides the mean return by
  the returns' sample standard deviation, Sortino by their downside deviation (the root
  mean square of the negative returns, over every step); ``None`` when that is 0.
- ``win_rate``: the share of closed trades with a positive result after fees and
  funding; ``profit_factor``: the wins' sum over the losses' (``None`` without a loss).
- ``exposure``: the share of steps after which a position was open.
- ``hit_rate``: the share of opening decisions whose direction the price followed over
  the scoring horizon (from the fill price at the decision's instant to the fill price
  a horizon later); ``None`` without an opening decision. ``decisions`` counts the
  opening decisions scored, ``correct`` those the price followed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from decimal import Decimal
from itertools import pairwise

from backtests.engine.portfolio import Trade

MINUTES_PER_YEAR = 365 * 24 * 60


@dataclass(frozen=True)
class Metrics:
    """The metrics of one rule (SPEC 15); money in USDT, fractions as fractions."""

    final_equity: float
    total_return: float
    max_drawdown: float
    sharpe: float | None
    sortino: float | None
    win_rate: float | None
    profit_factor: float | None
    trades: int
    exposure: float
    fees: float
    funding: float
    hit_rate: float | None
    decisions: int
    correct: int

    def to_dict(self) -> dict:
        """Return the JSON form stored in the report."""
        return asdict(self)


def step_returns(curve: Sequence[Decimal]) -> list[float]:
    """Return each step's return along the equity ``curve`` (a point per step, then the end)."""
    return [float(b / a - 1) if a else 0.0 for a, b in pairwise(curve)]


def max_drawdown(curve: Sequence[Decimal]) -> float:
    """Return the largest fall from a peak along ``curve``, as a fraction of the peak."""
    peak, worst = None, Decimal("0")
    for value in curve:
        peak = value if peak is None or value > peak else peak
        if peak > 0:
            worst = max(worst, (peak - value) / peak)
    return float(worst)


def annualised_ratios(returns: Sequence[float], step_minutes: int) -> tuple[float | None, ...]:
    """Return (Sharpe, Sortino) of per-step ``returns`` of ``step_minutes`` each."""
    if len(returns) < 2:
        return None, None
    scale = math.sqrt(MINUTES_PER_YEAR / step_minutes)
    mean = sum(returns) / len(returns)
    variance = sum((r - mean) ** 2 for r in returns) / (len(returns) - 1)
    downside = math.sqrt(sum(min(r, 0.0) ** 2 for r in returns) / len(returns))
    sharpe = mean / math.sqrt(variance) * scale if variance > 0 else None
    sortino = mean / downside * scale if downside > 0 else None
    return sharpe, sortino


def measure(
    *,
    curve: Sequence[Decimal],
    trades: Sequence[Trade],
    balance: Decimal,
    step_minutes: int,
    exposed_steps: int,
    fees: Decimal,
    funding: Decimal,
    hits: Sequence[bool],
) -> Metrics:
    """Return the metrics of a run whose equity went along ``curve``."""
    final = curve[-1] if curve else balance
    steps = max(len(curve) - 1, 1)
    sharpe, sortino = annualised_ratios(step_returns(curve), step_minutes)
    results = [trade.pnl for trade in trades]
    wins = [pnl for pnl in results if pnl > 0]
    losses = [-pnl for pnl in results if pnl < 0]
    return Metrics(
        final_equity=_money(final),
        total_return=_ratio(final / balance - 1),
        max_drawdown=_ratio(max_drawdown(curve)),
        sharpe=_maybe(sharpe),
        sortino=_maybe(sortino),
        win_rate=_ratio(len(wins) / len(results)) if results else None,
        profit_factor=_ratio(sum(wins) / sum(losses)) if losses else None,
        trades=len(trades),
        exposure=_ratio(exposed_steps / steps),
        fees=_money(fees),
        funding=_money(funding),
        hit_rate=_ratio(sum(hits) / len(hits)) if hits else None,
        decisions=len(hits),
        correct=sum(hits),
    )


def _money(value: Decimal) -> float:
    return float(value)


def _ratio(value: Decimal | float) -> float:
    return round(float(value), 6)


def _maybe(value: float | None) -> float | None:
    return None if value is None else round(value, 4)
