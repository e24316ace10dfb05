"""A step whose database connection drops is retried on a fresh one and completes."""

from __future__ import annotations

import pytest
from django.db import connection

from debates.models import Message
from debates.services import debate_start
from tests.debates.conftest import wait_for, wait_until_finished

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def terminate_other_connections() -> int:
    """Terminate every other connection to the test database; return how many.

    Among them are the connections idle in this process's own pool, which is made to
    replace them at once: a later test in this process would otherwise be handed them
    one after another, and psycopg_pool waits longer after each dead one it checks (1,
    2, 4, 8, 16 s: seven of them outlast its 30 s).
    """
    with connection.cursor() as cursor:
        cursor.execute(
            # Each wait (up to 5 s) for the backend to exit, so the pool finds it gone.
            "SELECT count(pg_terminate_backend(pid, 5000)) FROM pg_stat_activity "
            "WHERE datname = current_database() AND pid <> pg_backend_pid()"
        )
        terminated = cursor.fetchone()[0]
    if connection.pool is not None:
        connection.pool.check()
    return terminated


def test_connections_dropped_during_a_turn_are_retried(celery_worker, llm, make_debate, caplog):
    # given a debate whose model calls take a while
    llm.set_latency(0.4)
    debate = make_debate(rounds=2)
    debate_start(debate_id=debate.pk)
    wait_for(lambda: Message.objects.filter(debate=debate, round=2).exists(), timeout=30)
    wait_for(lambda: llm.stats()["in_flight"] == 1, timeout=10)
    # when every worker connection is terminated while a turn waits for its model
    assert terminate_other_connections() >= 1
    # then the turn is stored on a fresh connection and the debate completes, by the
    # step's own retry rather than by the stale-debate watchdog
    finished = wait_until_finished(debate.pk, timeout=90)
    assert finished.status == "completed"
    assert Message.objects.filter(debate=debate, status="ok").count() == 6
    assert "resuming debate" not in caplog.text
