"""Live events of trading: each execution state change goes out on its debate's stream,
each line of a trader's history (``history``) on the trader's stream.

Only services call this, inside the transaction that made the change; the event is
published when it commits (``arena.sse``). The payload is the REST representation.
"""

from __future__ import annotations

from arena.sse import publish_on_commit
from debates import events as debate_events
from traders.models import Execution, HistoryEntry
from traders.serializers import ExecutionSerializer, HistoryEntrySerializer

EVENT_TYPES = ("initial", "history")


def trader_channel(trader_id: int) -> str:
    """Return the stream channel of a trader."""
    return f"trader-{trader_id}"


def history_added(entry: HistoryEntry) -> None:
    """Announce a new line of a trader's history on its stream."""
    publish_on_commit(
        trader_channel(entry.trader_id), "history", dict(HistoryEntrySerializer(entry).data)
    )


def execution_changed(execution: Execution) -> None:
    """Announce an execution's current state on its debate's stream."""
    debate_events.execution_changed(
        execution.decision.debate_id, dict(ExecutionSerializer(execution).data)
    )


def execution_refused(debate_id: int, *, code: str, message: str) -> None:
    """Announce that an automatic execution was refused (nothing was recorded or sent)."""
    debate_events.step_failed(debate_id, step="execution", code=code, message=message)
