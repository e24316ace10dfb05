"""Which steps of a backtest at ``level: auto`` are quiet (L0): no debate, no model call."""

from __future__ import annotations

from backtests.models import Backtest, BacktestStep
from debates.services.levels import market_move, quiet_reason


class QuietSteps:
    """Which steps of a backtest at ``level: auto`` are quiet, planned in time order.

    A step is quiet by the schedule's L0 rule (``quiet_reason``): the primary coin's price
    at the step, against its price at the backtest's last debated step before it and its
    1h ATR14 at the step; prices only of candles closed by the step (no look-ahead).
    The first step, and every step of a backtest without a known primary coin (no
    symbol and a strategy that does not name its coins), is debated.
    """

    def __init__(self, backtest: Backtest, first: int) -> None:
        strategy = backtest.strategy
        self.strategy = strategy
        self.primary = backtest.symbol or (
            strategy.static_coins[0]
            if strategy is not None and strategy.coin_source == "static" and strategy.static_coins
            else ""
        )
        last = (
            BacktestStep.objects.filter(backtest=backtest, index__lt=first, skipped="")
            .order_by("-index")
            .values_list("as_of", flat=True)
            .first()
        )
        move = self._move(last) if last is not None else None
        self.before: float | None = move[0] if move else None

    def _move(self, as_of) -> tuple[float, float | None] | None:
        if not self.primary:
            return None
        return market_move(strategy=self.strategy, primary=self.primary, as_of=as_of)

    def skip(self, as_of) -> str | None:
        """Return why the step at ``as_of`` needs no debate (L0), or None: then the step
        is debated, and later steps compare with its price."""
        move = self._move(as_of)
        if move is not None and self.before is not None:
            reason = quiet_reason(self.strategy, self.primary, self.before, *move)
            if reason is not None:
                return reason
        self.before = move[0] if move else None
        return None
