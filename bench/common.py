"""What every benchmark needs: its own database and Redis, Django, workers, fakes.

Benchmarks run against the real stack on this machine: PostgreSQL (database
``arena_bench``, recreated by migrations as needed) and Redis (database 11), so they
never touch a developer's data or a test run's.
"""

from __future__ import annotations

import contextlib
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATABASE_URL = os.environ.get(
    "BENCH_DATABASE_URL", "postgres://postgres@127.0.0.1:5432/arena_bench"
)
REDIS_URL = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/11")


def bench_env() -> dict[str, str]:
    """Return the environment of the benchmark's processes."""
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="arena.settings.local",
        DATABASE_URL=DATABASE_URL,
        REDIS_URL=REDIS_URL,
        DEBUG="false",
        LOG_LEVEL="WARNING",
    )
    return env


def setup_django() -> None:
    """Create the benchmark database if needed, configure Django and migrate.

    Debates an earlier run left active (one stopped halfway) are cancelled: a worker
    started by this run would otherwise resume them, and their calls would take model
    slots from the debates being measured.
    """
    import psycopg

    os.environ.update(bench_env())
    server, name = DATABASE_URL.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [name]).fetchone()
        if not exists:
            conn.execute(f'CREATE DATABASE "{name}"')
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()
    from debates.models import ACTIVE_STATUSES, Debate
    from debates.services import debate_cancel

    for debate_id in Debate.objects.filter(status__in=ACTIVE_STATUSES).values_list("pk", flat=True):
        debate_cancel(debate_id=debate_id)


@contextlib.contextmanager
def worker_processes(
    count: int = 1, concurrency: int = 3, include: tuple[str, ...] = ()
) -> Iterator[list[subprocess.Popen]]:
    """Run, for the duration of the block, the workers of the Procfile: ``count`` step
    workers of ``concurrency`` processes (prefork) and one call worker of
    ``MODEL_CALL_THREADS`` threads, with the tasks of the modules ``include`` besides the
    project's. Yield the step workers, then the call worker."""
    from django.conf import settings

    from tests.processes import start_calls_worker, start_celery_worker

    processes = [
        start_celery_worker(
            f"bench{i}", bench_env(), concurrency=concurrency, include=include, steps_only=True
        )
        for i in range(count)
    ]
    threads = settings.MODEL_CALL_THREADS
    processes.append(start_calls_worker("bench-calls", bench_env(), threads=threads))
    try:
        wait_for_workers(count + 1)
        yield processes
    finally:
        for process in processes:
            stop_process(process)


def user_calls() -> int:
    """Return how many model calls one user's debates may have in flight at once (the
    cap of a benchmark whose debates are all one user's)."""
    from django.conf import settings

    return min(settings.MODEL_CALL_CAP, settings.MODEL_CALLS_PER_USER)


def wait_for_workers(count: int, timeout: float = 60.0) -> None:
    """Wait until ``count`` workers answer a ping."""
    from arena.celery import app

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        replies = app.control.ping(timeout=1.0) or []
        if len(replies) >= count:
            return
    raise RuntimeError(f"{count} Celery worker(s) did not start within {timeout}s")


def wait_until(predicate: Callable[[], bool], timeout: float, every: float = 0.01) -> None:
    """Wait until ``predicate()`` holds; raise after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"not done within {timeout}s")
        time.sleep(every)


def machine() -> str:
    """Return a one-line description of this machine."""
    cpu = "unknown CPU"
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return (
        f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, {platform.system()}"
    )


def percentile(values: list[float], q: float) -> float:
    """Return the ``q`` percentile (0..100) of ``values``."""
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[max(0, min(98, round(q) - 1))]


def stop_process(process: subprocess.Popen) -> None:
    """Stop a process started in its own group (SIGTERM, then SIGKILL after 10 s)."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


@contextlib.contextmanager
def web_server(
    workers: int = 2, settings_module: str | None = None
) -> Iterator[tuple[str, subprocess.Popen]]:
    """Serve the app with uvicorn (as the Procfile does) for the block, with the settings
    ``settings_module`` when given.

    Yield its URL and the process (the leader of its process group).
    """
    import socket

    from tests.ports import free_port

    port = free_port()
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "uvicorn", "arena.asgi:application", "--host", "127.0.0.1"),
            *("--port", str(port), "--workers", str(workers), "--log-level", "warning"),
            *("--no-access-log", "--timeout-graceful-shutdown", "2"),
        ],
        cwd=ROOT,
        env={
            **bench_env(),
            **({"DJANGO_SETTINGS_MODULE": settings_module} if settings_module else {}),
        },
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("uvicorn did not start")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}", process
    finally:
        stop_process(process)


def embedded_backtest(var: Path, args: list[str], **env: str) -> tuple[float, str]:
    """Migrate a fresh embedded default whose files are under ``var`` and run
    ``manage.py backtest`` there with ``args``, the process environment updated with
    ``env``; return the backtest's wall seconds and what it printed."""
    process_env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    process_env.update(ARENA_VAR_DIR=str(var), LOG_LEVEL="WARNING", **env)
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=ROOT, env=process_env, check=True)
    started = time.perf_counter()
    done = subprocess.run(
        [*manage, "backtest", *args],
        cwd=ROOT,
        env=process_env,
        capture_output=True,
        text=True,
        timeout=7200,
        check=True,
    )
    return time.perf_counter() - started, done.stdout
