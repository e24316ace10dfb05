"""Every write to backtests goes through these services."""

from backtests.services.lifecycle import (
    BacktestInput,
    backtest_cancel,
    backtest_create,
    backtest_delete,
)
from backtests.services.runs import (
    backtest_debate_moved,
    backtest_tick,
    backtests_resume_stale,
)

__all__ = [
    "BacktestInput",
    "backtest_cancel",
    "backtest_create",
    "backtest_debate_moved",
    "backtest_delete",
    "backtest_tick",
    "backtests_resume_stale",
]
