"""The console sessions of the documentation run as written and print what the pages
show: the judge session (docs/concepts/judge.md) and the selective-debate session
(docs/concepts/levels.md), on a fresh embedded default; the API session (docs/api.md,
the README's "Using the API") and the schedules' session (docs/concepts/schedules.md),
each on `make serve` from nothing, in the environment `make serve` reads."""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import psycopg
import pytest
from django.conf import settings

from bench.common import stop_process
from tests.ports import free_port

pytestmark = pytest.mark.slow

BASE = settings.BASE_DIR
DOCS = BASE / "docs"
MARK = "@@@ step "


def console_session(text: str, opening: str) -> list[tuple[str, list[str]]]:
    """Return the commands of the first console block after ``opening``, each with the
    output lines the page shows under it (a command goes on over indented lines)."""
    block = text[text.index(opening) :]
    block = block[block.index("```console\n") + len("```console\n") :]
    block = block[: block.index("```")]
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif line[:1].isspace() and steps and not steps[-1][1]:
            steps[-1] = (steps[-1][0] + "\n" + line, [])
        elif line.strip():
            steps[-1][1].append(line)
    return steps


def run_session(
    steps: list[tuple[str, list[str]]], env: dict[str, str], timeout: float = 240
) -> list[list[str]]:
    """Run the commands in one bash, in order; return each one's output lines."""
    script = "".join(
        f"printf '\\n{MARK}{i}\\n'\n{command}\n" for i, (command, _) in enumerate(steps)
    )
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=BASE,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outputs: list[list[str]] = []
    for chunk in re.split(rf"^{MARK}\d+\n", done.stdout, flags=re.M)[1:]:
        outputs.append([line for line in chunk.splitlines() if line.strip()])
    return outputs


def embedded_default(tmp_path) -> tuple[dict[str, str], str]:
    """Return the environment of a fresh clone's embedded default (nothing set, its
    files under ``tmp_path``) and a free port for its web server."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    env["ARENA_VAR_DIR"] = str(tmp_path / "var")
    return env, str(free_port())


@pytest.mark.parametrize(
    ("page", "opening"),
    [
        (
            "concepts/judge.md",
            "A session on a fresh embedded default with the simulated model as judge",
        ),
        ("concepts/levels.md", "A session on a fresh embedded default with two simulated models"),
    ],
    ids=["judge", "modes-budgets-and-costs"],
)
def test_a_session_on_a_fresh_embedded_default_runs_as_written(tmp_path, page, opening):
    # given a fresh clone's embedded default, the web server on a free port
    env, port = embedded_default(tmp_path)
    steps = [
        (command.replace("8000", port), output)
        for command, output in console_session((DOCS / page).read_text(), opening)
    ]
    # when its commands run in order in one shell
    outputs = run_session(steps, env)
    # then each prints what the page shows under it
    assert len(outputs) == len(steps)
    for (command, expected), output in zip(steps, outputs, strict=True):
        assert output == expected, command


# --- The full stack: make serve on PostgreSQL and Redis -----------------------------------

# The database the full-stack session names, and its server.
STACK_DATABASE = "postgres://postgres@127.0.0.1:5432/arena"


def stack_redis_url() -> str:
    """Return the Redis database of the full stack: ``README_STACK_REDIS_URL``, else the
    spare one after the test workers' own (its Celery worker must be the only one on it,
    or it would take another worker's tasks, and they its)."""
    return os.environ.get("README_STACK_REDIS_URL") or settings.TEST_SPARE_REDIS_URL


@contextlib.contextmanager
def fresh_database(name: str) -> Iterator[str]:
    """Yield the URL of a database ``name`` that does not exist yet (``make serve``
    creates it), on the tests' server; drop it afterwards."""
    url = urlsplit(os.environ.get("DATABASE_URL", STACK_DATABASE))
    admin = urlunsplit(url._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
    try:
        yield urlunsplit(url._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def processes_with(marker: str) -> list[int]:
    """Return the ids of the processes whose environment holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with contextlib.suppress(OSError):
                if marker.encode() in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
    return found


@contextlib.contextmanager
def make_serve(env: dict[str, str], port: int, log: Path, database_url: str) -> Iterator[None]:
    """Run ``make serve`` (migrate, then honcho: uvicorn, a Celery worker and beat) with
    ``env`` until its web server answers; stop every process of it (those whose
    environment names ``database_url``) afterwards."""
    with log.open("w") as out:
        serve = subprocess.Popen(
            ["make", "-s", "serve"],
            cwd=BASE,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        deadline = time.monotonic() + 180
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 1):
                break
            assert serve.poll() is None, log.read_text()[-3000:]
            assert time.monotonic() < deadline, log.read_text()[-3000:]
            time.sleep(0.5)
        yield
    finally:
        # honcho stops its processes on SIGTERM; whatever outlives it is killed by id.
        stop_process(serve)
        marker = f"DATABASE_URL={database_url}"
        deadline = time.monotonic() + 10
        while (left := processes_with(marker)) and time.monotonic() < deadline:
            time.sleep(0.5)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert not left, f"processes outlived make serve: {left}"


@contextlib.contextmanager
def full_stack(tmp_path: Path) -> Iterator[dict[str, str]]:
    """Run `make serve` on a database of its own made from nothing, a Redis database of
    its own (emptied) and a free port, and yield the environment it was started in: a
    shell's with DATABASE_URL and REDIS_URL unset, so the stack's come from the
    Makefile (its ``STACK_DATABASE_URL`` and ``STACK_REDIS_URL``, set here as a person
    would leave them to their defaults), and PORT. A command of a session that reads
    the stack's environment only through `make` (``make manage``) reaches the stack's
    database; one that does not reaches the embedded default's (under ``tmp_path``)."""
    import redis

    redis_url = stack_redis_url()
    redis.Redis.from_url(redis_url).flushdb()
    port = free_port()
    name = f"readme_stack_{os.getpid()}_{secrets.token_hex(3)}"
    try:
        with fresh_database(name) as database_url:
            env, _ = embedded_default(tmp_path)
            env.pop("TEST_DATABASE_NAME", None)
            env.update(STACK_DATABASE_URL=database_url, STACK_REDIS_URL=redis_url, PORT=str(port))
            with make_serve(env, port, tmp_path / "serve.log", database_url):
                yield env
    finally:
        redis.Redis.from_url(redis_url).flushdb()


@pytest.mark.long
@pytest.mark.parametrize(
    ("page", "opening", "timeout"),
    [
        ("api.md", "A session on the full stack, with `make serve`", 300),
        ("concepts/schedules.md", "A session on PostgreSQL and Redis from nothing", 600),
    ],
    ids=["using-the-api", "schedules"],
)
def test_a_session_on_make_serve_runs_as_written(tmp_path, page, opening, timeout):
    # given `make serve` from nothing, and the session of the page
    steps = console_session((DOCS / page).read_text(), opening)
    with full_stack(tmp_path) as env:
        # when its commands run in order in one shell, in the environment it reads
        outputs = run_session(steps, env, timeout=timeout)
    # then each prints what the page shows under it
    assert len(outputs) == len(steps)
    for (command, expected), output in zip(steps, outputs, strict=True):
        assert output == expected, command
