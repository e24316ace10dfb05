"""Fixtures for the live stream: uvicorn web processes, a private Redis, stream tokens."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import psycopg
import pytest
from django.conf import settings
from django.db import connection
from rest_framework.authtoken.models import Token

from debates.streams import stream_token_issue
from tests.debates.conftest import llm, make_debate, worker_env  # noqa: F401 (fixtures)
from tests.ports import free_port
from tests.processes import start_uvicorn, stop_process


@pytest.fixture
def anyio_backend() -> str:
    """Run ``@pytest.mark.anyio`` tests on asyncio, the loop uvicorn and Django use."""
    return "asyncio"


@pytest.fixture(autouse=True)
def stream_reads_close_connections(monkeypatch) -> None:
    """Make this process's stream database threads close their connection after each
    read (``CONN_MAX_AGE`` 0), so none outlives a test and blocks dropping the database."""
    monkeypatch.setitem(connection.settings_dict, "CONN_MAX_AGE", 0)


@dataclass
class WebServer:
    """A uvicorn process serving the app on this test run's database."""

    url: str
    process: subprocess.Popen

    def stream_url(self, debate_id: int) -> str:
        """Return the URL of a debate's stream on this server."""
        return f"{self.url}/api/debates/{debate_id}/stream"


def start_web(**env: str) -> WebServer:
    """Start ``uvicorn arena.asgi:application`` on a free port; return once it answers."""
    port = free_port()
    process = start_uvicorn(
        port,
        {**worker_env(), "LOG_LEVEL": "WARNING", **env},
        *("--log-level", "warning"),
        ready_path="/api/schema/",
    )
    return WebServer(url=f"http://127.0.0.1:{port}", process=process)


@pytest.fixture
def web(transactional_db) -> Iterator[Callable[..., WebServer]]:
    """Start uvicorn web processes (environment overrides as keyword arguments).

    Each serves this test run's database and Redis, as ``make serve`` does in
    production; all are stopped at the end of the test.
    """
    started: list[WebServer] = []

    def start(**env: str) -> WebServer:
        server = start_web(**env)
        started.append(server)
        return server

    yield start
    for server in started:
        stop_process(server.process)


@dataclass
class RedisServer:
    """A private redis-server process, which a test may stop and start again."""

    port: int
    directory: str
    process: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        """Return the URL of database 0 of this server."""
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        """Start the server (no persistence, like the machine's) and wait for PONG."""
        self.process = subprocess.Popen(
            [
                *("redis-server", "--port", str(self.port), "--bind", "127.0.0.1"),
                *("--save", "", "--appendonly", "no", "--dir", self.directory),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        import redis

        deadline = time.monotonic() + 10
        while True:
            with contextlib.suppress(redis.ConnectionError):
                if redis.Redis(port=self.port, socket_connect_timeout=1).ping():
                    return
            if time.monotonic() > deadline:
                raise RuntimeError("redis-server did not start")
            time.sleep(0.05)

    def stop(self) -> None:
        """Stop the server at once (SIGKILL): everything in it is gone."""
        if self.process is not None and self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)


@pytest.fixture
def private_redis() -> Iterator[RedisServer]:
    """A redis-server of this test's own, so a test can restart Redis without touching
    the one other test runs share."""
    if shutil.which("redis-server") is None:
        pytest.fail("redis-server is needed (apt-get install redis-server)")
    with tempfile.TemporaryDirectory() as directory:
        server = RedisServer(port=free_port(), directory=directory)
        server.start()
        try:
            yield server
        finally:
            server.stop()


@pytest.fixture
def api_token(user) -> str:
    """The owner's REST API token (``Authorization: Token ...``)."""
    return Token.objects.create(user=user).key


@pytest.fixture
def stream_token(user) -> Callable[[int], str]:
    """Issue stream tokens for the owner, as ``POST .../stream-token`` does."""

    def issue(debate_id: int) -> str:
        return stream_token_issue(user=user, debate_id=debate_id).token

    return issue


def database_connections(pid: int) -> int:
    """Return how many PostgreSQL connections of process ``pid`` this test run's database
    has open now: those whose client port is one of the process's sockets (connections
    of other processes, such as those an earlier test left closing, are not counted)."""
    db = connection.settings_dict
    with psycopg.connect(
        host=db["HOST"], port=db["PORT"], user=db["USER"], dbname="postgres", autocommit=True
    ) as conn:
        ports = conn.execute(
            "SELECT client_port FROM pg_stat_activity WHERE datname = %s", [db["NAME"]]
        ).fetchall()
    owned = _socket_ports(pid)
    return sum(1 for (port,) in ports if port in owned)


def _socket_ports(pid: int) -> set[int]:
    """Return the local TCP ports of the sockets process ``pid`` holds open."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):  # closed meanwhile
            target = os.readlink(fd)
            if target.startswith("socket:["):
                inodes.add(target[len("socket:[") : -1])
    ports = set()
    for table in ("tcp", "tcp6"):
        for line in Path(f"/proc/{pid}/net/{table}").read_text().splitlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return ports


def publish_process(*, channel: str, count: int, redis_url: str, start: int = 0) -> None:
    """Publish ``count`` events from another process (like a worker) through arena.sse."""
    env = {**worker_env(), "REDIS_URL": redis_url}
    subprocess.run(
        [sys.executable, "-m", "tests.streams.publisher", channel, str(count), str(start)],
        cwd=settings.BASE_DIR,
        env=env,
        check=True,
        timeout=60,
    )
