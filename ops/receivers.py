"""Beat's heartbeat as beat sends it: the process that publishes ``ops.beat_heartbeat``
(beat) stores the time once the broker has the message.

So the heartbeat says that beat runs and reaches the broker even while every worker is
busy with long steps; the worker that later runs the task stores the time again.
"""

from __future__ import annotations

from typing import Any

from celery.signals import after_task_publish

from ops.services import beat_heartbeat_record
from ops.tasks import BEAT_HEARTBEAT_TASK


@after_task_publish.connect(sender=BEAT_HEARTBEAT_TASK)
def heartbeat_sent(sender: str | None = None, **kwargs: Any) -> None:
    beat_heartbeat_record()
