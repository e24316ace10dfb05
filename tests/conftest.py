"""Fixtures shared by the whole suite."""

from collections.abc import Iterator

import pytest
from celery.contrib.testing.worker import start_worker
from rest_framework.test import APIClient

from arena.celery import app
from tests.factories import UserFactory


@pytest.fixture
def user(db):
    """A plain user: the owner of the objects under test."""
    return UserFactory()


@pytest.fixture
def other_user(db):
    """A second user, whose objects must stay invisible to ``user``."""
    return UserFactory()


@pytest.fixture
def staff_user(db):
    """A staff superuser, for the admin."""
    return UserFactory(is_staff=True, is_superuser=True)


@pytest.fixture
def api_client(user):
    """An API client authenticated as ``user``."""
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture(scope="session", autouse=True)
def clean_redis():
    """Start from an empty test Redis database: no queued tasks, claims or slot leases
    left behind by an earlier run."""
    import redis
    from django.conf import settings

    redis.Redis.from_url(settings.REDIS_URL).flushdb()


@pytest.fixture
def celery_worker(transactional_db) -> Iterator[object]:
    """A real Celery worker (3 threads) on the test broker, started on an empty queue.

    The tasks go through Redis exactly as in production; only the pool is threads, so the
    worker shares this process's test database settings.
    """
    app.control.purge()
    with start_worker(
        app, pool="threads", concurrency=3, perform_ping_check=False, shutdown_timeout=30
    ) as worker:
        pool = worker.pool
        yield worker
    # Leaving start_worker is a cold shutdown, which does not wait for the pool's threads:
    # a task still running would meet the database being emptied for the next test. Wait
    # for those; the tasks not begun yet stay unacknowledged in Redis and are purged.
    pool.executor.shutdown(wait=True, cancel_futures=True)
    app.control.purge()
