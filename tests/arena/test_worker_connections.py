"""A worker process keeps its database connection from one task to the next."""

from __future__ import annotations

import pytest
from django.db import connection

from arena.celery import app
from tests.debates.conftest import kill_process_group, start_worker_process

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def sessions_opened() -> int:
    """Return how many sessions the test database has seen (PostgreSQL's own count)."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT sessions FROM pg_stat_database WHERE datname = current_database()")
        return cursor.fetchone()[0]


def test_tasks_on_a_worker_reuse_its_database_connection():
    # given a prefork worker with one process that has run a task (and connected)
    app.control.purge()
    worker = start_worker_process("connections", concurrency=1)
    try:
        app.send_task("debates.resume_stale").get(timeout=60)
        before = sessions_opened()
        # when it runs 20 more tasks that each query the database
        for _ in range(20):
            assert app.send_task("debates.resume_stale").get(timeout=30) == []
        # then they all ran on the connection it already had
        assert sessions_opened() - before <= 1
    finally:
        kill_process_group(worker)
