"""Tasks that only wait: Celery's own share of a debate run's overhead.

``bench.orchestration`` sends the canvas of a debate run made of these instead of the
debate's steps, to the same worker: what it takes beyond the ideal critical path is
what Celery alone costs on this machine (publishing, delivering, dispatching to a pool
process, the chords), with nothing of the project's steps in it.
"""

from __future__ import annotations

import functools
import time

import redis
from celery import shared_task
from django.conf import settings

from debates.tasks import STEP_OPTIONS

FLOOR_CHANNEL = "bench-floor"


@shared_task(name="bench.floor_step", **STEP_OPTIONS)
def floor_step(self, seconds: float) -> None:
    """Wait ``seconds``, as a step waits for its model's answer."""
    time.sleep(seconds)


@shared_task(name="bench.floor_end", **STEP_OPTIONS)
def floor_end(self, run: str) -> None:
    """Announce that run ``run`` is over, as a debate's final ``status`` event does."""
    _client().publish(FLOOR_CHANNEL, run)


@functools.cache
def _client() -> redis.Redis:
    return redis.Redis(**settings.EVENTSTREAM_REDIS)  # as the events are delivered
