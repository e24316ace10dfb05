"""Live events of trading: each execution state change goes out on its debate's stream.

Only services call this, inside the transaction that made the change; the event is
published when it commits (``arena.sse``). The payload is the REST representation.
"""

from __future__ import annotations

from debates import events as debate_events
from traders.models import Execution
from traders.serializers import ExecutionSerializer


def execution_changed(execution: Execution) -> None:
    """Announce an execution's current state on its debate's stream."""
    debate_events.execution_changed(
        execution.decision.debate_id, dict(ExecutionSerializer(execution).data)
    )


def execution_refused(debate_id: int, *, code: str, message: str) -> None:
    """Announce that an automatic execution was refused (nothing was recorded or sent)."""
    debate_events.step_failed(debate_id, step="execution", code=code, message=message)
