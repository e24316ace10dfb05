"""Step messages carry a priority from their owner's load: a user with one debate running
is served before the backlog of a user with many (Redis lists, lowest number first). The
steps that call a model go to the call workers' queue."""

import pytest
import redis
from django.conf import settings

from arena.celery import app
from debates.models import DebateStatus
from debates.routing import load_priority, route_step
from debates.services.runs import CALL_STEPS, STEP_TASKS
from debates.tasks import schedule_fire_task, turn_run_task, vote_run_task
from tests.debates.factories import DebateFactory

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    ("active", "priority"), [(0, 0), (1, 0), (2, 3), (3, 3), (4, 6), (9, 6), (10, 9), (100, 9)]
)
def test_the_priority_falls_with_the_owners_load(active, priority):
    assert load_priority(active) == priority


def _queue_lengths(queue: str) -> dict[str, int]:
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    return {
        name: client.llen(key)
        for name, key in (("0", queue), ("3", f"{queue}\x06\x163"), ("9", f"{queue}\x06\x169"))
    }


def test_steps_of_a_heavy_user_queue_behind_those_of_a_light_one(user, other_user):
    # given a user with 12 debates running and another with one
    app.control.purge()
    heavy = [DebateFactory(owner=user, status=DebateStatus.RUNNING) for _ in range(12)]
    light = DebateFactory(owner=other_user, status=DebateStatus.RUNNING)
    try:
        # when a step of each is sent, and a task that is no step
        turn_run_task.si(heavy[0].pk, 1, 1).apply_async()
        vote_run_task.apply_async(kwargs={"debate_id": light.pk, "participant_id": 1})
        schedule_fire_task.si(1).apply_async()
        # then the heavy user's step waits on the lowest priority list of the call
        # workers' queue, the light user's on its first served, and the other task on the
        # first served of the default queue
        assert _queue_lengths(settings.MODEL_CALL_QUEUE) == {"0": 1, "3": 0, "9": 1}
        assert _queue_lengths("celery") == {"0": 1, "3": 0, "9": 0}
    finally:
        app.control.purge()


def test_every_step_of_the_plan_is_routed_by_its_owners_load(user):
    # given a debate of a user with 12 debates running
    heavy = [DebateFactory(owner=user, status=DebateStatus.RUNNING) for _ in range(12)]
    # when the router is asked about each kind of step's task, by name, and another task
    routed = {name: route_step(name, (heavy[0].pk,), {}, {}) for name, _ in STEP_TASKS.values()}
    # then each step of the plan (the execution step of trading too, and any kind added
    # to it) gets the priority, and those that call a model the call workers' queue
    calling = {STEP_TASKS[kind][0] for kind in CALL_STEPS}
    assert calling == {
        "debates.turn_run",
        "debates.vote_run",
        "debates.judge_round",
        "debates.judge_final",
    }
    assert set(routed) - calling == {
        "debates.prepare_run",
        "debates.consensus_finalize",
        "traders.debate_execute",
    }
    for name, options in routed.items():
        queue = {"queue": settings.MODEL_CALL_QUEUE} if name in calling else {}
        assert options == {"priority": 9, **queue}
    assert route_step("debates.schedule_fire", (heavy[0].pk,), {}, {}) is None


def test_a_debates_load_is_counted_once_then_kept_for_a_while(
    user, django_assert_num_queries, monkeypatch
):
    # given a debate of a user with 12 debates running, routed once (its load counted
    # and kept for a minute, so that a slow host cannot outlast it)
    monkeypatch.setattr("debates.routing.LOAD_TTL_S", 60)
    heavy = [DebateFactory(owner=user, status=DebateStatus.RUNNING) for _ in range(12)]
    with django_assert_num_queries(1):
        first = route_step("debates.turn_run", (heavy[0].pk, 1, 1), {}, {})
    # when its next step is routed meanwhile
    with django_assert_num_queries(0):
        second = route_step("debates.vote_run", (heavy[0].pk, 1), {}, {})
    # then the kept load routes it, with no query
    assert first == second == {"priority": 9, "queue": settings.MODEL_CALL_QUEUE}
