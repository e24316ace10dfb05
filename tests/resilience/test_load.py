"""Many debates at once, and model faults at random: every debate ends, the cap holds."""

from __future__ import annotations

import random

import pytest

from debates.models import Debate, Message
from debates.services import debate_start
from tests.debates.conftest import wait_for, worker_processes
from tests.fakes.llm_server import Reply

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

FINAL = ("completed", "failed", "cancelled")


@pytest.fixture
def two_workers():
    """Two Celery worker processes (3 pool processes each) on an empty queue."""
    with worker_processes() as workers:
        yield [workers.start(f"load{i}") for i in range(2)]


def all_finished(ids: list[int]) -> bool:
    return not Debate.objects.filter(pk__in=ids).exclude(status__in=FINAL).exists()


def test_a_hundred_debates_at_once_all_complete_within_the_cap(
    two_workers, llm, make_debate, settings
):
    # given 100 debates (2 participants x 2 rounds) of one user, whose quotas allow them,
    # and a model answering in 50 ms
    settings.QUOTA_ACTIVE_DEBATES = settings.QUOTA_STARTS_PER_HOUR = 100
    llm.set_latency(0.05)
    debates = [make_debate(personalities=("bull", "bear"), rounds=2) for _ in range(100)]
    ids = [d.pk for d in debates]
    # when they are all started at once
    for debate in debates:
        debate_start(debate_id=debate.pk)
    wait_for(lambda: all_finished(ids), timeout=600, every=0.5)
    # then every one completed, each turn once, and never more than 3 calls were in flight
    statuses = set(Debate.objects.filter(pk__in=ids).values_list("status", flat=True))
    assert statuses == {"completed"}
    assert Message.objects.filter(debate_id__in=ids).count() == 100 * 4
    assert llm.stats()["max_in_flight"] == 3
    assert llm.stats()["requests"] == 100 * 6


def test_random_model_faults_never_leave_a_debate_active(two_workers, llm, make_debate, settings):
    # given a model that fails 30 % of the calls at random: 429, 500, hangs, garbage
    chooser = random.Random(20241129)
    faults = [
        Reply.rate_limited("0"),
        Reply.server_error(500),
        Reply.fault_of("hang"),
        Reply.answer("no decision here, just prose"),
        Reply.fault_of("truncated"),
    ]

    def responder(request):
        return chooser.choice(faults) if chooser.random() < 0.3 else None

    llm.responder = responder
    settings.QUOTA_ACTIVE_DEBATES = 20
    debates = [make_debate(rounds=2, timeout=3) for _ in range(20)]
    ids = [d.pk for d in debates]
    # when they all run
    for debate in debates:
        debate_start(debate_id=debate.pk)
    # then each ends (completed, or failed with a reason) within its deadline budget:
    # 9 calls a debate, each cut at its 3 s deadline, 3 at a time across 20 debates
    budget = 20 * 9 * 3 / 3 + 60
    wait_for(lambda: all_finished(ids), timeout=budget, every=0.5)
    finished = Debate.objects.filter(pk__in=ids)
    assert all(d.status in ("completed", "failed") for d in finished)
    for debate in finished.filter(status="failed"):
        assert debate.error["message"], debate.pk
    assert llm.stats()["max_in_flight"] <= 3
