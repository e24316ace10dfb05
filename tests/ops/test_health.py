"""``/healthz`` answers while the process runs; ``/readyz`` answers 200 listing each check
when the database, its migrations, Redis, the broker and beat are all up, else 503
naming each one down."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
import time_machine
from django.db import connection
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder
from django.test import Client

from arena.celery import app
from ops.services import beat_heartbeat_record
from ops.tasks import beat_heartbeat_task
from tests.ports import free_port

READY = {
    "database": {"ok": True, "detail": "answers"},
    "migrations": {"ok": True, "detail": "all applied"},
    "redis": {"ok": True, "detail": "answers"},
    "broker": {"ok": True, "detail": "answers"},
    "beat": {"ok": True, "detail": "last heartbeat 0 s ago"},
}


NOW = datetime(2026, 11, 2, 12, tzinfo=UTC)


@pytest.fixture
def clock() -> Iterator[time_machine.Coordinates]:
    """The wall clock stopped at ``NOW``, so the age of a heartbeat is exact."""
    with time_machine.travel(NOW, tick=False) as traveller:
        yield traveller


@pytest.fixture
def beat_alive(clock) -> None:
    """Beat's heartbeat, just now."""
    beat_heartbeat_record()


def test_healthz_answers_without_a_database_or_redis(settings):
    # given no database access (this test has none) and Redis and the broker gone
    dead = f"redis://127.0.0.1:{free_port()}/0"
    settings.REDIS_URL = settings.CELERY_BROKER_URL = dead
    # when the process is asked whether it lives
    answer = Client().get("/healthz")
    # then it says so, having touched neither
    assert (answer.status_code, answer.json()) == (200, {"status": "ok"})
    assert answer["Cache-Control"].startswith("max-age=0")


@pytest.mark.django_db
def test_readyz_lists_every_check_when_all_pass(beat_alive):
    answer = Client().get("/readyz")
    assert answer.status_code == 200
    assert answer.json() == {"status": "ready", "down": [], "checks": READY}


@pytest.mark.django_db
def test_readyz_names_the_database_when_it_does_not_answer(beat_alive, monkeypatch):
    # given the database's address moved to a port nothing listens on
    monkeypatch.setitem(connection.settings_dict, "PORT", free_port())
    # when readiness is asked
    answer = Client().get("/readyz")
    # then the database is down, and its migrations are not checked
    assert answer.status_code == 503
    assert answer.json() == {
        "status": "not ready",
        "down": ["database"],
        "checks": READY
        | {
            "database": {"ok": False, "detail": "unreachable (OperationalError)"},
            "migrations": {"ok": None, "detail": "not checked: the database is down"},
        },
    }


@pytest.mark.django_db
def test_readyz_names_redis_the_broker_and_beat_when_redis_stops(private_redis, settings, clock):
    # given Redis, the broker and the metrics store on a Redis of this test, beat alive
    settings.REDIS_URL = settings.CELERY_BROKER_URL = private_redis.url
    beat_heartbeat_record()
    assert Client().get("/readyz").status_code == 200
    # when that Redis stops
    private_redis.stop()
    answer = Client().get("/readyz")
    # then Redis, the broker and beat (whose heartbeat cannot be read) are down
    assert answer.status_code == 503
    body = answer.json()
    assert body["down"] == ["redis", "broker", "beat"]
    assert body["checks"]["redis"] == {"ok": False, "detail": "unreachable (ConnectionError)"}
    assert body["checks"]["broker"] == {"ok": False, "detail": "unreachable (OperationalError)"}
    assert body["checks"]["beat"] == {"ok": False, "detail": "unreachable (ConnectionError)"}
    assert {name: check["ok"] for name, check in body["checks"].items()} == {
        "database": True,
        "migrations": True,
        "redis": False,
        "broker": False,
        "beat": False,
    }


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("beat_ago_s", "detail"),
    [(None, "no heartbeat yet"), (30, "last heartbeat 30 s ago")],
    ids=["never", "two-intervals-missed"],
)
def test_readyz_names_beat_when_its_heartbeat_is_stale(
    settings, clock, empty_counts, beat_ago_s, detail
):
    # given beat's heartbeat every 15 s, and none for two of them (or none ever)
    settings.BEAT_HEARTBEAT_S = 15
    if beat_ago_s is not None:
        beat_heartbeat_record(now=NOW.timestamp() - beat_ago_s)
    # when readiness is asked
    answer = Client().get("/readyz")
    # then beat alone is down
    assert answer.status_code == 503
    assert answer.json()["down"] == ["beat"]
    assert answer.json()["checks"]["beat"] == {"ok": False, "detail": detail}


@pytest.mark.django_db
def test_readyz_holds_beat_up_within_two_intervals(settings, clock):
    settings.BEAT_HEARTBEAT_S = 15
    beat_heartbeat_record(now=NOW.timestamp() - 29)
    answer = Client().get("/readyz")
    assert answer.status_code == 200
    assert answer.json()["checks"]["beat"] == {"ok": True, "detail": "last heartbeat 29 s ago"}


@pytest.mark.django_db
def test_readyz_holds_beat_up_as_beat_sends_the_heartbeat_with_every_worker_busy(
    settings, clock, empty_counts
):
    # given no heartbeat yet, and no worker to take the one beat sends
    app.control.purge()
    try:
        # when beat sends the heartbeat task (as its schedule entry does)
        beat_heartbeat_task.apply_async(expires=settings.BEAT_HEARTBEAT_S)
        # then the heartbeat is stored as the broker has it, before any worker runs it
        answer = Client().get("/readyz")
    finally:
        app.control.purge()
    assert answer.status_code == 200
    assert answer.json()["checks"]["beat"] == {"ok": True, "detail": "last heartbeat 0 s ago"}


@pytest.mark.django_db
def test_readyz_names_the_migrations_not_applied(beat_alive):
    # given the latest migration of the debates app recorded as not applied (the test's
    # transaction takes the record back)
    _, latest = max(MigrationLoader(connection).graph.leaf_nodes("debates"))
    MigrationRecorder(connection).record_unapplied("debates", latest)
    # when readiness is asked
    answer = Client().get("/readyz")
    # then the migrations are down, naming the one the executor would apply
    assert answer.status_code == 503
    assert answer.json()["down"] == ["migrations"]
    assert answer.json()["checks"]["migrations"] == {
        "ok": False,
        "detail": f"unapplied: debates.{latest}",
    }
