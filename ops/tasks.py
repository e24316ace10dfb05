"""Celery tasks of the ops app."""

from __future__ import annotations

from celery import shared_task

from ops.services import beat_heartbeat_record

BEAT_HEARTBEAT_TASK = "ops.beat_heartbeat"


@shared_task(name=BEAT_HEARTBEAT_TASK, soft_time_limit=10, time_limit=20)
def beat_heartbeat_task() -> float:
    """Record beat's heartbeat (sent by Celery beat every ``BEAT_HEARTBEAT_S``; beat
    records it too as it sends it, ``ops.receivers``)."""
    return beat_heartbeat_record()
