"""The Celery application; tasks are autodiscovered in every app's ``tasks.py``."""

import os

import redis
from celery import Celery
from kombu.transport import redis as kombu_redis

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "arena.settings.local")

app = Celery("arena")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


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
