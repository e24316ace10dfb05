"""Redis restarted in the middle of a debate: the debate ends, the stream misses nothing.

Redis keeps nothing on disk here, so a restart loses the queued steps, the chord
counters and the pub/sub connections. The web process, a worker and beat (whose
watchdog resumes stalled debates) run on a Redis of the test's own. The watchdog deems a
debate stale after 12 s instead of 45 (``DEBATE_STALE_AFTER_S``), its steps' claims
renewed every 2 s (``STEP_CLAIM_TTL_S`` 6), so a debate whose queued steps were lost is
resumed within about 16 s instead of 60.
"""

from __future__ import annotations

import subprocess
import sys
import time

import httpx
import pytest
from django.conf import settings

from debates.models import Debate, Message
from tests.debates.conftest import (
    kill_process_group,
    start_worker_process,
    wait_for,
    wait_until_finished,
    worker_env,
)
from tests.debates.events_helpers import published
from tests.streams.sse import SSEClient

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHORT_WATCHDOG = {"DEBATE_STALE_AFTER_S": "12", "STEP_CLAIM_TTL_S": "6"}


def start_beat(**env: str) -> subprocess.Popen:
    """Run Celery beat with the database scheduler, as the Procfile does; ``env``
    overrides the environment."""
    return subprocess.Popen(
        [
            *(sys.executable, "-m", "celery", "-A", "arena", "beat", "--loglevel", "WARNING"),
            *("--scheduler", "django_celery_beat.schedulers:DatabaseScheduler"),
        ],
        cwd=settings.BASE_DIR,
        env={**worker_env(), **env},
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def test_a_debate_survives_a_redis_restart_and_its_stream_misses_nothing(
    web, private_redis, llm, make_debate, api_token
):
    # given a web process, a worker and beat on a Redis of this test's own
    llm.set_latency(0.3)
    debate = make_debate()
    server = web(REDIS_URL=private_redis.url)
    env = {"REDIS_URL": private_redis.url, **SHORT_WATCHDOG}
    worker = start_worker_process("redis-restart", **env)
    beat = start_beat(**env)
    headers = {"Authorization": f"Token {api_token}"}
    url = server.stream_url(debate.pk)
    clients: list[SSEClient] = []
    try:
        clients.append(SSEClient(url, headers=headers))
        clients[0].wait_for_type("initial")
        started = httpx.post(f"{server.url}/api/debates/{debate.pk}/start", headers=headers)
        assert started.status_code == 200, started.text
        wait_for(lambda: Message.objects.filter(debate=debate, round=2).exists(), timeout=60)
        # when Redis dies in round 2, losing everything in it, and comes back empty
        private_redis.stop()
        time.sleep(1.0)
        private_redis.start()
        # then the debate ends, completed or failed with a reason
        finished = wait_until_finished(debate.pk, timeout=180)
        assert finished.status == "completed" or finished.error["message"]
        # and a client reconnecting with the id of the last event it got, as an
        # EventSource does when its connection drops, ends up with every event once
        deadline = time.monotonic() + 30
        while len(published(debate.pk)) > sum(
            1 for c in clients for e in c.received() if e.type != "initial"
        ):
            if time.monotonic() > deadline:
                break
            last = next(
                (e for c in reversed(clients) for e in reversed(c.received()) if e.id), None
            )
            if clients[-1].finished and last is not None:
                clients.append(SSEClient(url, headers={**headers, "Last-Event-ID": last.id}))
            time.sleep(0.2)
    finally:
        for client in clients:
            client.close()
        kill_process_group(worker)
        kill_process_group(beat)

    received = [e for c in clients for e in c.received() if e.type != "initial"]
    numbers = [e.number for e in received]
    assert numbers == list(range(1, len(published(debate.pk)) + 1))
    assert [(e.type, e.json) for e in received] == published(debate.pk)
    assert Debate.objects.get(pk=debate.pk).status in ("completed", "failed")
