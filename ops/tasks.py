"""Celery tasks of the ops app."""

from __future__ import annotations

from celery import shared_task

from ops.services import beat_heartbeat_record


@shared_task(name="ops.beat_heartbeat", soft_time_limit=10, time_limit=20)
def beat_heartbeat_task() -> float:
    """Record beat's heartbeat (sent by Celery beat every ``BEAT_HEARTBEAT_S``)."""
    return beat_heartbeat_record()
