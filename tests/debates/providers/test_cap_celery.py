"""The model-call cap holds across real Celery worker processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis
from django.conf import settings

from arena.celery import app
from debates.providers.slots import RedisSlots
from tests.fakes.llm_server import FakeLLMServer

ROOT = Path(__file__).resolve().parents[3]


def _start_worker(queue: str, name: str) -> subprocess.Popen:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "arena.settings.test"}
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "arena",
            "worker",
            "-I",
            "tests.fakes.cap_tasks",
            "--pool",
            "prefork",
            "--concurrency",
            "3",
            "-Q",
            queue,
            "-n",
            name,
            "--without-gossip",
            "--without-mingle",
            "--loglevel",
            "WARNING",
        ],
        cwd=ROOT,
        env=env,
        start_new_session=True,
    )


def _stop_worker(worker: subprocess.Popen) -> None:
    worker.send_signal(signal.SIGTERM)
    try:
        worker.wait(timeout=15)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=5)


def _wait_until(condition, timeout: float, step: float = 0.1) -> bool:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(step)
    return condition()


@pytest.mark.slow
def test_two_celery_workers_of_concurrency_3_never_exceed_a_cap_of_3() -> None:
    # given: two prefork workers of 3 processes each, answers taking 200 ms
    run = uuid.uuid4().hex[:12]
    queue, key = f"test-cap-{run}", f"test-slots:{run}"
    names = [f"cap{n}-{run}@localhost" for n in (1, 2)]
    workers = [_start_worker(queue, name) for name in names]
    try:
        with FakeLLMServer(latency_s=0.2) as server:
            assert _wait_until(
                lambda: len(app.control.ping(destination=names, timeout=0.5)) == 2, timeout=60
            ), "the Celery workers did not start"

            # when
            for _ in range(20):
                app.send_task("tests.cap_call", args=[f"{server.url}/v1", key, 3], queue=queue)
            finished = _wait_until(
                lambda: server.stats()["by_status"].get("200", 0) == 20, timeout=60
            )

            # then
            stats = server.stats()
            served_by = {r.prompt.rsplit("worker ", 1)[1] for r in server.requests}
        assert finished, stats
        assert (stats["requests"], stats["max_in_flight"], stats["by_status"]) == (
            20,
            3,
            {"200": 20},
        )
        assert served_by == set(names)
    finally:
        for worker in workers:
            _stop_worker(worker)
        RedisSlots(settings.REDIS_URL, key=key).clear()
        redis.Redis.from_url(settings.REDIS_URL).delete(queue, f"_kombu.binding.{queue}")
