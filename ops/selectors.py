"""The reads behind ``/metrics`` that are measured when it is scraped: rows counted in
the database, the model slots, the broker's queues, beat's heartbeat."""

from __future__ import annotations

import time
from dataclasses import dataclass
from datetime import UTC, datetime

import redis
from django.conf import settings
from django.db.models import Count, Model
from kombu.transport import redis as kombu_redis

from arena import metrics
from arena.celery import app
from debates.models import Debate, DebateStatus
from debates.providers.slots import model_slots
from debates.selectors import Spend, spend_of
from ops.services import BEAT_HEARTBEAT
from traders.guards import COOLDOWN, DAILY_LOSS, DRAWDOWN, EXPOSURE
from traders.models import Execution, ExecutionStatus, Trader


def _counts(model: type[Model], column: str, every: list[str]) -> dict[str, int]:
    """Return how many rows of ``model`` have each value of ``column``: each value of
    ``every`` (0 when none has it) and any other value found."""
    found = model.objects.order_by().values_list(column).annotate(n=Count("pk"))
    return {value: 0 for value in every} | dict(found)


def debates_by_status() -> dict[str, int]:
    """Return how many debates are in each status."""
    return _counts(Debate, "status", DebateStatus.values)


def executions_by_status() -> dict[str, int]:
    """Return how many executions are in each status."""
    return _counts(Execution, "status", ExecutionStatus.values)


def traders_paused_by_guard() -> dict[str, int]:
    """Return how many traders each portfolio guard keeps paused now."""
    paused = _counts(Trader, "paused_guard", [DAILY_LOSS, DRAWDOWN, COOLDOWN, EXPOSURE])
    paused.pop("", None)  # not paused
    return paused


def spend_today() -> Spend:
    """Return what the model calls of the current UTC day used and cost, those of the
    debates deleted since included."""
    return spend_of(since=datetime.now(UTC).date())


@dataclass(frozen=True)
class SlotUse:
    """The model-call slots now: held, the cap, and the calls waiting for one."""

    in_use: int
    cap: int
    waiting: int


def slot_use() -> SlotUse:
    """Return how many model-call slots are held and waited for across the deployment."""
    slots = model_slots()
    return SlotUse(slots.in_use(), slots.cap, sum(slots.waiting().values()))


@dataclass(frozen=True)
class QueueDepth:
    """The broker's messages: waiting in each queue, and taken but not acknowledged."""

    queued: dict[str, int]
    unacked: int


# kombu's Redis transport: a queue's messages of priority p > 0 wait in a list of their
# own, ``<queue><sep><p>``, and those taken but not acknowledged in one hash.
PRIORITY_SEP = kombu_redis.Channel.sep
PRIORITY_STEPS = tuple(kombu_redis.Channel.priority_steps)
UNACKED_KEY = kombu_redis.Channel.unacked_key


def queue_depth() -> QueueDepth | None:
    """Return the depth of the Celery queues; None when the broker is not Redis (the
    embedded default's is in memory)."""
    url = settings.CELERY_BROKER_URL
    if not url.startswith(("redis://", "rediss://")):
        return None
    names = sorted({app.conf.task_default_queue, *app.amqp.queues})
    client = redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=5)
    try:
        pipe = client.pipeline(transaction=False)
        for name in names:
            for priority in PRIORITY_STEPS:
                pipe.llen(f"{name}{PRIORITY_SEP}{priority}" if priority else name)
        pipe.hlen(UNACKED_KEY)
        *lengths, unacked = pipe.execute()
    finally:
        client.close()
    steps = len(PRIORITY_STEPS)
    queued = {name: sum(lengths[i * steps : (i + 1) * steps]) for i, name in enumerate(names)}
    return QueueDepth(queued, unacked)


def beat_heartbeat_age(*, now: float | None = None) -> float | None:
    """Return the seconds since beat's latest heartbeat; None when there was none."""
    beat = metrics.store().get_value(BEAT_HEARTBEAT)
    if beat is None:
        return None
    return max(0.0, (time.time() if now is None else now) - beat)
