"""Reading back what a debate (or a backtest) published on its stream."""

from __future__ import annotations

import json
from typing import Any

from django_eventstream.models import Event

from arena.sse import debate_channel

# What a debate of two participants over two rounds publishes, in order, its status
# changes aside.
TWO_BY_TWO_EVENTS = [
    "round_start",
    "message",
    "message",
    "round_end",
    "round_start",
    "message",
    "message",
    "round_end",
    *["vote"] * 6,
    "consensus",
]


def published(debate_id: int) -> list[tuple[str, Any]]:
    """Return every stored event of a debate's channel, oldest first, as (type, data)."""
    return stored_events(debate_channel(debate_id))


def stored_events(channel: str) -> list[tuple[str, Any]]:
    """Return every stored event of ``channel``, oldest first, as (type, data)."""
    # eid 0 is the storage's placeholder row, not an event.
    rows = Event.objects.filter(channel=channel, eid__gt=0).order_by("eid")
    out = []
    for row in rows:
        data = json.loads(row.data)
        # send_event encodes the payload once and the model storage once more.
        out.append((row.type, json.loads(data) if isinstance(data, str) else data))
    return out


def published_types(debate_id: int) -> list[str]:
    """Return the types of every stored event of a debate's channel, oldest first."""
    return [event_type for event_type, _ in published(debate_id)]


def last_status(debate_id: int) -> str | None:
    """Return the status carried by the latest ``status`` event of a debate, if any."""
    statuses = [
        data["status"] for event_type, data in published(debate_id) if event_type == "status"
    ]
    return statuses[-1] if statuses else None
