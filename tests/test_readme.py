"""The console sessions of the documentation run as written and print what the pages
show: the API session (docs/api.md), on a fresh database and after `make demo`; the judge
session (docs/concepts/judge.md) and the selective-debate session
(docs/concepts/levels.md), on a fresh database; and the full-stack session
(docs/concepts/schedules.md), on `make serve` from nothing."""

from __future__ import annotations

import contextlib
import json
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


@pytest.mark.parametrize("after_demo", [False, True], ids=["fresh-database", "after-make-demo"])
def test_the_using_the_api_session_runs_as_written(tmp_path, after_demo):
    # given a fresh clone's embedded default (nothing set), the web server on a free port
    env, port = embedded_default(tmp_path)
    page = (DOCS / "api.md").read_text()
    steps = [
        (command.replace("8000", port), output)
        for command, output in console_session(page, "A session on the embedded default")
    ]
    if after_demo:  # the demo's objects come first in the same file
        demo = ["make", "-s", "demo", "ARGS=--rounds 2"]
        subprocess.run(demo, cwd=BASE, env=env, check=True, capture_output=True, timeout=300)
    # when its commands run in order in one shell
    outputs = run_session(steps, env)
    # then each prints what the page shows under it (after the demo, a model's figures
    # differ: the simulated answers depend on the debate's id)
    assert len(outputs) == len(steps)
    for (command, expected), output in zip(steps, outputs, strict=True):
        if after_demo and any("confidence" in line or "price" in line for line in expected):
            assert [shape(line) for line in output] == [shape(line) for line in expected]
        else:
            assert output == expected, command


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


def shape(line: str) -> tuple:
    """Return what a JSON line shows that the models' figures do not change: its keys,
    its coin and its status."""
    value = json.loads(line)
    return (list(value), value.get("symbol"), value.get("status"))


# --- The full stack: make serve on PostgreSQL and Redis -----------------------------------

FULL_STACK = "A session on PostgreSQL and Redis from nothing"
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
def make_serve(env: dict[str, str], port: int, log: Path) -> Iterator[None]:
    """Run ``make serve`` (migrate, then honcho: uvicorn, a Celery worker and beat) with
    ``env`` until its web server answers; stop every process of it afterwards."""
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
        marker = f"DATABASE_URL={env['DATABASE_URL']}"
        deadline = time.monotonic() + 10
        while (left := processes_with(marker)) and time.monotonic() < deadline:
            time.sleep(0.5)
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert not left, f"processes outlived make serve: {left}"


@pytest.mark.long
def test_the_full_stack_session_runs_as_written(tmp_path):
    # given `make serve` on a database of its own made from nothing, a Redis database of
    # its own (emptied) and a free port
    import redis

    page = (DOCS / "concepts" / "schedules.md").read_text()
    port = free_port()
    redis_url = stack_redis_url()
    redis.Redis.from_url(redis_url).flushdb()
    name = f"readme_stack_{os.getpid()}_{secrets.token_hex(3)}"
    with fresh_database(name) as database_url:
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in {"DJANGO_SETTINGS_MODULE", "TEST_DATABASE_NAME", "PORT"}
        }
        env.update(DATABASE_URL=database_url, REDIS_URL=redis_url, PORT=str(port))
        steps = [
            (
                command.replace("localhost:8000", f"localhost:{port}").replace(
                    STACK_DATABASE, database_url
                ),
                output,
            )
            for command, output in console_session(page, FULL_STACK)
        ]
        try:
            with make_serve(env, port, tmp_path / "serve.log"):
                # when the session's commands run in order in one shell
                outputs = run_session(steps, env, timeout=600)
        finally:
            redis.Redis.from_url(redis_url).flushdb()
    # then each prints what the page shows under it
    assert len(outputs) == len(steps)
    for (command, expected), output in zip(steps, outputs, strict=True):
        assert output == expected, command
