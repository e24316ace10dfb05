"""Every write to backtests goes through these services."""

from backtests.services.lifecycle import (
    BacktestInput,
    backtest_cancel,
    backtest_create,
    backtest_delete,
)
from backtests.services.runs import (
    backtest_step_ended,
    backtest_tick,
    backtests_resume_stale,
    debate_ended,
)

__all__ = [
    "BacktestInput",
    "backtest_cancel",
    "backtest_create",
    "backtest_delete",
    "backtest_step_ended",
    "backtest_tick",
    "backtests_resume_stale",
    "debate_ended",
]
