"""Every write to traders goes through these services."""

from traders.services.executions import (
    ExecutionBusy,
    client_order_id,
    execution_abandon,
    execution_request,
    execution_resubmit,
    execution_submit,
    executions_resume_stale,
)
from traders.services.paper import candles_between, paper_check_stops, paper_clock_advance

__all__ = [
    "ExecutionBusy",
    "candles_between",
    "client_order_id",
    "execution_abandon",
    "execution_request",
    "execution_resubmit",
    "execution_submit",
    "executions_resume_stale",
    "paper_check_stops",
    "paper_clock_advance",
]
