"""Task results: a process that sends tasks keeps nothing of them unless it waits."""

from __future__ import annotations

import gc

import pytest
import redis
from celery import group
from django.conf import settings
from django.db import transaction

from arena.celery import RedisResults, app
from debates.models import Debate, DebateStatus
from debates.services.runs import run_enqueue
from tests.broker import queued

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_result_backend_is_the_projects():
    assert type(app.backend) is RedisResults


def test_sending_debate_runs_leaves_no_subscription_or_result_behind(make_debate):
    # given a started, prepared debate, whose run stores the results of its openings and
    # votes
    debate = make_debate()
    Debate.objects.filter(pk=debate.pk).update(
        status=DebateStatus.RUNNING, current_round=1, step_outcomes={"prepare": {"status": "done"}}
    )
    # when this process, which is not a worker, sends its run three times (onto the call
    # workers' queue, which other tests' starts may have left messages on)
    app.control.purge()
    for _ in range(3):
        with transaction.atomic():
            run_enqueue(debate_id=debate.pk)
    sent = [headers["id"] for headers, _ in queued(settings.MODEL_CALL_QUEUE)]
    app.control.purge()
    gc.collect()
    # then nothing here listens for their results, nor keeps them
    assert len(sent) == 3 * 3  # the openings of each run, the rest is chained on
    channels = [app.backend.get_key_for_task(task_id) for task_id in sent]
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    assert all(count == 0 for _, count in client.pubsub_numsub(*channels))
    assert not set(channels) & app.backend.result_consumer.subscribed_to
    assert not [task for task in sent for kept in app.backend._pending_results if task in kept]


def test_a_process_that_waits_for_results_gets_them(celery_worker):
    assert app.send_task("debates.resume_stale").get(timeout=30) == []
    joined = group(app.signature("debates.resume_stale") for _ in range(3)).apply_async()
    assert joined.get(timeout=30) == [[], [], []]
