"""The Celery application; tasks are autodiscovered in every app's ``tasks.py``."""

import gc
import os

import redis
from celery import Celery
from celery.backends.redis import RedisBackend
from celery.signals import (
    task_failure,
    task_postrun,
    task_prerun,
    worker_process_init,
    worker_ready,
)
from django.db import close_old_connections
from kombu.transport import redis as kombu_redis

from arena import metrics

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena.settings.local")

app = Celery("arena")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@worker_process_init.connect
@worker_ready.connect
def _freeze_loaded_objects(**kwargs) -> None:
    """Keep what a worker process has loaded when it starts (Django, the models, Celery,
    the tasks: about 163,000 objects, alive as long as the process) out of the garbage
    collector's full passes, as the web processes do (``arena.asgi``).

    A full pass walked them all: 112 to 130 ms with the tasks loaded (under a
    millisecond once frozen), a pause of whatever step the process was running when the
    collector decided on one. A pool process freezes them once it has started, the
    worker's main process once it is ready.
    """
    gc.freeze()


@task_prerun.connect
@task_postrun.connect
def _drop_old_connections(sender=None, **kwargs) -> None:
    """Close database connections past CONN_MAX_AGE, or broken, around each task.

    Django does this at the start and end of each request; Celery's Django fixup would
    close them around every task instead, whatever CONN_MAX_AGE says, had it not been
    told to let a connection serve many tasks (``CELERY_DB_REUSE_MAX``). A task run
    eagerly (``apply``) runs in its caller's connection and transaction: left alone.
    """
    if not getattr(sender.request, "is_eager", False):
        close_old_connections()


@task_failure.connect
def _count_failure(sender=None, exception=None, **kwargs) -> None:
    """Count a task that ended with an error, by the error's kind (``arena.metrics``)."""
    metrics.record(metrics.ERRORS.inc(source="task", code=type(exception).__name__))


def _survive_broker_restarts() -> None:
    """Let a worker outlive a Redis restart instead of stopping with AttributeError.

    When the broker connection drops, the consumer closes its channel, and kombu's Redis
    channel tries to give back its unacknowledged messages through a client built from a
    connection that is already gone (``conninfo`` is None): an AttributeError, which the
    worker treats as unrecoverable, so it exits. Raising a connection error there instead
    lets the consumer reconnect as it does for any lost connection; the messages stay
    unacknowledged in Redis and are restored by kombu's visibility sweep, and the
    debates they belonged to by the stale-debate watchdog.
    """
    original = kombu_redis.Channel._connparams

    def connparams(self, asynchronous=False):
        if self.connection.client is None:
            raise redis.exceptions.ConnectionError("the broker connection is closed")
        return original(self, asynchronous=asynchronous)

    kombu_redis.Channel._connparams = connparams


_survive_broker_restarts()


class RedisResults(RedisBackend):
    """Celery's Redis result backend, tracking a result only while something waits for it.

    The stock backend tracks results from the moment a task is sent, in case the sender
    waits for it: it subscribes the sending process to each task's result channel, and
    each group it sends (a debate's openings) keeps its members' results for good
    (celery#4824). No process here waits where it sends, so each debate run left six
    subscriptions and six result objects in the process that started it, for the life of
    that process (60 subscriptions after 10 debates; none here). Here nothing is tracked
    until ``AsyncResult.get`` or a group's ``join_native`` waits: it subscribes then, and
    reads a result stored before it did from Redis (``on_wait_for_pending``).
    """

    def on_task_call(self, producer, task_id) -> dict:
        return {}

    def add_pending_result(self, result, weak=False, start_drainer=True):
        return result  # sending, or a group's barrier: nobody waits yet

    def wait_for_pending(self, result, **kwargs):
        super().add_pending_result(result, weak=True)
        return super().wait_for_pending(result, **kwargs)

    def iter_native(self, result, **kwargs):
        for member in result.results:
            super().add_pending_result(member, weak=True, start_drainer=False)
        return super().iter_native(result, **kwargs)
