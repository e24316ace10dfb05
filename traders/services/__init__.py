"""Every write to traders goes through these services."""

from traders.services.execution_state import ExecutionBusy
from traders.services.executions import (
    client_order_id,
    execution_abandon,
    execution_request,
    execution_resubmit,
    execution_submit,
    executions_resume_stale,
)
from traders.services.paper import (
    PaperClockAhead,
    candles_between,
    paper_check_stops,
    paper_clock_advance,
    paper_clock_meet,
)

__all__ = [
    "ExecutionBusy",
    "PaperClockAhead",
    "candles_between",
    "client_order_id",
    "execution_abandon",
    "execution_request",
    "execution_resubmit",
    "execution_submit",
    "executions_resume_stale",
    "paper_check_stops",
    "paper_clock_advance",
    "paper_clock_meet",
]
