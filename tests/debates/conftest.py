"""Fixtures for running whole debates: a fake model server, debates that call it, and
Celery worker processes (tests/conftest.py has the in-process ``celery_worker``)."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from collections.abc import Callable, Iterator

import pytest
from django.conf import settings
from django.db import connection

from arena.celery import app
from debates.models import Debate
from debates.services import DebateInput, debate_create, debate_start
from tests.debates.factories import FakeLLMModelFactory, fake_llm_seats
from tests.fakes.llm_server import FakeLLMServer, Reply
from tests.processes import start_celery_worker
from tests.strategies.factories import StrategyFactory


@pytest.fixture
def llm() -> Iterator[FakeLLMServer]:
    """A fake OpenAI-compatible model server on a free local port."""
    with FakeLLMServer() as server:
        yield server


@pytest.fixture
def make_debate(user, llm) -> Callable[..., Debate]:
    """Create a pending debate whose participants call the fake model server."""

    def make(personalities=("bull", "bear", "analyst"), rounds=3, timeout=10, **fields) -> Debate:
        data = DebateInput(
            name="Test debate",
            strategy=StrategyFactory(owner=user).pk,
            symbol="BTCUSDT",
            max_rounds=rounds,
            participants=fake_llm_seats(user, llm, personalities, timeout_seconds=timeout),
            **fields,
        )
        return debate_create(owner=user, data=data)

    return make


@pytest.fixture
def judge_model(user, llm):
    """A judge's model on the fake model server, under a name of its own (``fake-judge``),
    so the judge's requests are told apart from the participants'."""
    return FakeLLMModelFactory(owner=user, llm=llm, model_name="fake-judge", temperature=0.4)


def number_debates_from(first: int) -> None:
    """Have the next debate created take the id ``first``, the one after it ``first + 1``:
    the simulated model seeds its draws by the debate's id, so a test of what simulated
    seats say fixes their debates' ids."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT setval(pg_get_serial_sequence('debates_debate', 'id'), %s, false)", [first]
        )


def wait_for(predicate: Callable[[], bool], timeout: float = 60.0, every: float = 0.05) -> None:
    """Wait until ``predicate()`` is true; fail the test after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout}s")
        time.sleep(every)


def wait_until_finished(debate_id: int, timeout: float = 60.0) -> Debate:
    """Wait for a debate to reach a terminal state and return it."""
    wait_for(
        lambda: Debate.objects.get(pk=debate_id).status in ("completed", "cancelled", "failed"),
        timeout,
    )
    return Debate.objects.get(pk=debate_id)


def failed_in_round_two(llm: FakeLLMServer, make_debate: Callable[..., Debate]) -> Debate:
    """Start a 3-seat, 2-round debate whose every model refuses its round-2 turn once
    (a terminal 400), and return it once round 2 has failed it."""
    for label in ("P1", "P2", "P3"):
        llm.add_rule(Reply.error(400, "refused", match=f"round 2/2. You are {label},", times=1))
    debate = make_debate(rounds=2)
    debate_start(debate_id=debate.pk)
    failed = wait_until_finished(debate.pk)
    assert (failed.status, failed.error["step"]) == ("failed", "round 2")
    return debate


def worker_env() -> dict[str, str]:
    """Return the environment of a worker process that uses this test run's databases."""
    db = connection.settings_dict
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="arena.settings.test",
        DATABASE_URL=f"postgres://{db['USER']}@{db['HOST']}:{db['PORT']}/{db['NAME']}",
        REDIS_URL=settings.REDIS_URL,
    )
    return env


def start_worker_process(name: str, concurrency: int = 3, **env: str):
    """Start ``celery worker`` (prefork) in its own process group; return the Popen.

    ``env`` overrides the environment (another ``REDIS_URL``, say).
    """
    return start_celery_worker(name, {**worker_env(), **env}, concurrency=concurrency)


def kill_process_group(process) -> None:
    """SIGKILL a worker and every pool child, as a machine crash would."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)


def stop_workers(*workers) -> None:
    """At a test's end: SIGKILL each worker still running (None for one never started),
    then drop the tasks left on the broker."""
    for worker in workers:
        if worker is not None and worker.poll() is None:
            kill_process_group(worker)
    app.control.purge()


class WorkerProcesses:
    """The Celery worker processes of a ``worker_processes`` block, by name."""

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env
        self.started: dict[str, subprocess.Popen] = {}

    def start(self, name: str) -> subprocess.Popen:
        """Start the worker ``name`` (see ``start_worker_process``) with the block's
        environment."""
        self.started[name] = start_worker_process(name, **self.env)
        return self.started[name]

    def kill(self, name: str) -> None:
        """SIGKILL the worker ``name`` and every pool child, as a machine crash would."""
        kill_process_group(self.started[name])


@contextlib.contextmanager
def worker_processes(**env: str) -> Iterator[WorkerProcesses]:
    """Start from an empty broker a block that starts and kills worker processes (``env``
    overriding their environment); at its end, SIGKILL those still running and drop the
    tasks left on the broker."""
    app.control.purge()
    workers = WorkerProcesses(env)
    try:
        yield workers
    finally:
        stop_workers(*workers.started.values())
