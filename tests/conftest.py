"""Fixtures shared by the whole suite."""

import time
from collections.abc import Iterator

import psycopg
import pytest
from celery.contrib.testing.worker import start_worker
from django.db import connection
from django.test import Client
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
    tests marked ``long`` run for minutes: started first, they do not end the run alone,
    and the other workers take the rest of the tests of the one that runs them.
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
def operator(staff_user) -> Client:
    """A browser client logged in as ``staff_user``: an operator of the admin pages, which
    the admin tests of every app read."""
    client = Client()
    client.force_login(staff_user)
    return client


@pytest.fixture
def api_client(user):
    """An API client authenticated as ``user``."""
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """The test database, with no session left on it when pytest-django drops it.

    PostgreSQL refuses to drop a database any session still uses, such as the backend of
    a worker process killed a moment before (the kill tests). After this process's own
    connections are closed, the others are given five seconds to go, then ended: the
    database is being dropped.
    """
    yield
    with django_db_blocker.unblock():
        connection.close()
        connection.close_pool()
        end_sessions(connection.settings_dict)


def end_sessions(database: dict, wait_s: float = 5.0) -> None:
    """Wait up to ``wait_s`` for the sessions on ``database`` to end, then end them."""
    server = {"host": database["HOST"], "port": database["PORT"], "user": database["USER"]}
    others = "FROM pg_stat_activity WHERE datname = %s AND pid <> pg_backend_pid()"
    name = [database["NAME"]]
    with psycopg.connect(**server, dbname="postgres", autocommit=True) as admin:
        deadline = time.monotonic() + wait_s
        while admin.execute("SELECT pid " + others, name).fetchone():
            if time.monotonic() > deadline:
                admin.execute("SELECT pg_terminate_backend(pid, 5000) " + others, name)
                return
            time.sleep(0.1)


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
