"""Fixtures shared by the whole suite."""

from collections.abc import Iterator

import pytest
from celery.contrib.testing.worker import start_worker
from rest_framework.test import APIClient
from schemathesis.pytest.plugin import SchemathesisFunction

from arena.celery import app
from tests.factories import UserFactory


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Give every test a node id of its own, and start the long tests first.

    pytest-xdist sends tests to its workers by node id and requires each worker to have
    collected the same ones; schemathesis (4.32 under pytest 9.2) names all the tests of
    ``@schema.parametrize()`` alike, so the operation is added as their parameter. The
    tests marked ``long`` run for minutes: started first, each on a worker of its own,
    they do not end the run alone.
    """
    for item in items:
        label = getattr(item, "operation_label", None)
        if isinstance(item, SchemathesisFunction) and label and item.id.params is None:
            item._id = item.id.with_params(label)
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


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
