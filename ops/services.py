"""The writes of the ops app: beat's heartbeat."""

from __future__ import annotations

import time

from arena import metrics

# The name of the heartbeat's value in the metrics store (``arena.metrics``).
BEAT_HEARTBEAT = "beat-heartbeat"


def beat_heartbeat_record(*, now: float | None = None) -> float:
    """Store the instant (Unix time) of beat's latest heartbeat, now unless told; return it.

    Beat sends the heartbeat task every ``BEAT_HEARTBEAT_S`` and records it once the
    broker has it (``ops.receivers``); the worker that runs it records it again.
    """
    instant = time.time() if now is None else now
    metrics.store().set_value(BEAT_HEARTBEAT, instant)
    return instant
