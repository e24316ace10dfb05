"""What ``/readyz`` checks: the database, its migrations, Redis, the broker and beat.

Each check answers within ``READYZ_TIMEOUT_S`` or reports its dependency down. The
database is probed with a connection of its own, made afresh, not one of the pool: a
pool waits up to 30 s for a server that is gone, and a probe answers in milliseconds
either way. A failure's detail names the kind of error only; its message, which may
name hosts, goes to the log.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import redis
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor

from arena.celery import app
from ops.selectors import beat_heartbeat_age

logger = logging.getLogger(__name__)

# Unapplied migrations named in a failed check's detail at most.
MIGRATIONS_NAMED = 5


@dataclass(frozen=True)
class Check:
    """The outcome of one check: the dependency's name, whether it is up (None: not
    checked), and a word on what was found."""

    name: str
    ok: bool | None
    detail: str


def _failed(name: str, exc: Exception) -> Check:
    logger.warning("readiness: %s is down: %s: %s", name, type(exc).__name__, exc)
    return Check(name, False, f"unreachable ({type(exc).__name__})")


def database_check(alias: str = DEFAULT_DB_ALIAS) -> Check:
    """Connect to the database afresh and run ``SELECT 1``."""
    wrapper = connections[alias]
    try:
        if wrapper.vendor == "postgresql":
            params = wrapper.get_connection_params()
            params["connect_timeout"] = max(2, settings.READYZ_TIMEOUT_S)  # libpq's least
            with wrapper.Database.connect(**params) as probe:
                probe.execute("SELECT 1")
        else:  # SQLite: a file of this machine
            with wrapper.cursor() as cursor:
                cursor.execute("SELECT 1")
    except Exception as exc:
        return _failed("database", exc)
    return Check("database", True, "answers")


def migrations_check(alias: str = DEFAULT_DB_ALIAS) -> Check:
    """Say whether every migration of the code is applied to the database."""
    try:
        executor = MigrationExecutor(connections[alias])
        plan = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as exc:
        return _failed("migrations", exc)
    if not plan:
        return Check("migrations", True, "all applied")
    names = [f"{migration.app_label}.{migration.name}" for migration, _ in plan]
    more = len(names) - MIGRATIONS_NAMED
    listed = ", ".join(names[:MIGRATIONS_NAMED]) + (f" and {more} more" if more > 0 else "")
    return Check("migrations", False, f"unapplied: {listed}")


def redis_check() -> Check:
    """Ping Redis (``REDIS_URL``) on a connection of its own."""
    if not settings.REDIS_URL:
        return Check("redis", True, "not used: the embedded default")
    timeout = settings.READYZ_TIMEOUT_S
    client = redis.Redis.from_url(
        settings.REDIS_URL, socket_connect_timeout=timeout, socket_timeout=timeout
    )
    try:
        client.ping()
    except Exception as exc:
        return _failed("redis", exc)
    finally:
        client.close()
    return Check("redis", True, "answers")


def broker_check() -> Check:
    """Connect to the Celery broker once, without retrying."""
    if settings.CELERY_IN_PROCESS_WORKER:
        return Check("broker", True, "in process: the embedded default")
    try:
        with app.connection_for_write(settings.CELERY_BROKER_URL) as connection:
            connection.ensure_connection(max_retries=0, timeout=settings.READYZ_TIMEOUT_S)
    except Exception as exc:
        return _failed("broker", exc)
    return Check("broker", True, "answers")


def beat_check() -> Check:
    """Say whether beat's latest heartbeat is younger than two of its intervals."""
    if settings.CELERY_IN_PROCESS_WORKER:
        return Check("beat", True, "not used: the embedded default")
    try:
        age = beat_heartbeat_age()
    except Exception as exc:
        return _failed("beat", exc)
    if age is None:
        return Check("beat", False, "no heartbeat yet")
    late = age >= 2 * settings.BEAT_HEARTBEAT_S
    return Check("beat", not late, f"last heartbeat {int(age)} s ago")


def readiness() -> list[Check]:
    """Run every check; the migrations are not checked while the database is down."""
    database = database_check()
    if database.ok:
        migrations = migrations_check()
    else:
        migrations = Check("migrations", None, "not checked: the database is down")
    return [database, migrations, redis_check(), broker_check(), beat_check()]
