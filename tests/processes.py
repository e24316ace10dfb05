"""Processes of the project that the tests and the benchmarks start, each in a process
group of its own: Celery workers and uvicorn, as the Procfile runs them."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

import httpx

ROOT = Path(__file__).resolve().parent.parent


def start_celery_worker(
    name: str,
    env: Mapping[str, str],
    *,
    concurrency: int = 3,
    include: Iterable[str] = (),
    steps_only: bool = False,
) -> subprocess.Popen:
    """Start a prefork Celery worker named ``name`` with the environment ``env``, with the
    tasks of the modules ``include`` besides the project's; return the Popen.

    It serves every queue (the steps' and the model calls'), or with ``steps_only`` the
    steps' alone, as the Procfile's step worker does; as that worker, it prefetches one
    task per process and keeps its database connection. It neither gossips nor mingles,
    so it is ready sooner.
    """
    pool = ("--pool", "prefork", "--concurrency", str(concurrency))
    if steps_only:
        from arena.celery import app

        pool += ("--queues", app.conf.task_default_queue)
    return _start_worker(name, {**env, "DB_CONN_MAX_AGE": "60"}, pool, include)


def start_calls_worker(
    name: str, env: Mapping[str, str], *, threads: int, include: Iterable[str] = ()
) -> subprocess.Popen:
    """Start a Celery worker named ``name`` as the Procfile's call worker: a pool of
    ``threads`` threads serving the model calls' queue alone, its database connections
    taken from a pool; return the Popen."""
    from django.conf import settings

    pool = ("--pool", "threads", "--concurrency", str(threads))
    pool += ("--queues", settings.MODEL_CALL_QUEUE)
    return _start_worker(name, {**env, "DB_CONN_MAX_AGE": "0"}, pool, include)


def _start_worker(
    name: str, env: Mapping[str, str], pool: tuple[str, ...], include: Iterable[str]
) -> subprocess.Popen:
    return subprocess.Popen(
        [
            *(sys.executable, "-m", "celery", "-A", "arena", "worker", *pool),
            *("--prefetch-multiplier", "1", "--hostname", f"{name}@%h"),
            *("--loglevel", "WARNING", "--without-gossip", "--without-mingle"),
            *(f"--include={module}" for module in include),
        ],
        cwd=ROOT,
        env=dict(env),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def start_uvicorn(
    port: int,
    env: Mapping[str, str],
    *options: str,
    ready_path: str,
    output: IO[Any] | int | None = None,
) -> subprocess.Popen:
    """Serve the app with uvicorn on 127.0.0.1:``port`` (``options`` added to its command
    line) and return the Popen once ``ready_path`` answers; ``output`` takes what the
    server prints.

    A server that exits, or does not answer within 30 s, is stopped and an error raised.
    """
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "uvicorn", "arena.asgi:application"),
            *("--host", "127.0.0.1", "--port", str(port), "--timeout-graceful-shutdown", "1"),
            *options,
        ],
        cwd=ROOT,
        env=env,
        start_new_session=True,
        stdout=output,
        stderr=output,
    )
    return _answering(process, port, ready_path)


def start_procfile_web(port: int, env: Mapping[str, str], *, ready_path: str) -> subprocess.Popen:
    """Run the Procfile's web command as honcho runs it (``sh -c``, ``PORT`` set to
    ``port``) with the environment ``env``; return the Popen once ``ready_path`` answers.

    A server that exits, or does not answer within 30 s, is stopped and an error raised.
    """
    command = next(
        line.removeprefix("web:").strip()
        for line in (ROOT / "Procfile").read_text().splitlines()
        if line.startswith("web:")
    )
    process = subprocess.Popen(
        ["sh", "-c", command],
        cwd=ROOT,
        env={**env, "PORT": str(port)},
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    return _answering(process, port, ready_path)


def procfile_commands(kind: str) -> dict[str, str]:
    """Return the Procfile's processes whose command runs ``kind`` (``"celery -A arena
    worker"``, say): their commands by process name."""
    commands = {}
    for line in (ROOT / "Procfile").read_text().splitlines():
        name, _, command = line.partition(":")
        if kind in command:
            commands[name.strip()] = command.strip()
    return commands


def start_procfile_workers(env: Mapping[str, str]) -> dict[str, subprocess.Popen]:
    """Run each Celery worker process of the Procfile as honcho runs it (``sh -c``) with
    the environment ``env``; return the Popen of each, by process name."""
    return {
        name: subprocess.Popen(
            ["sh", "-c", command],
            cwd=ROOT,
            env=dict(env),
            start_new_session=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for name, command in procfile_commands("celery -A arena worker").items()
    }


def _answering(process: subprocess.Popen, port: int, ready_path: str) -> subprocess.Popen:
    """Return ``process`` once it answers ``ready_path`` on ``port``; stop it and raise
    if it exits or does not answer within 30 s."""
    deadline = time.monotonic() + 30
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"uvicorn exited with {process.returncode}")
        with contextlib.suppress(httpx.TransportError):
            httpx.get(f"http://127.0.0.1:{port}{ready_path}", timeout=2)
            return process
        if time.monotonic() > deadline:
            stop_process(process)
            raise RuntimeError("uvicorn did not answer within 30 s")
        time.sleep(0.1)


def stop_process(process: subprocess.Popen, timeout: float = 5.0) -> None:
    """SIGTERM a process group, then SIGKILL it if it has not exited within ``timeout``."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
