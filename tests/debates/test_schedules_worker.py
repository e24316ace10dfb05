"""Schedules fired on a real Celery worker: by hand as beat would, and by ``celery beat``
itself with the database scheduler, in its own process."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
from itertools import pairwise
from pathlib import Path

import pytest
from django.conf import settings
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from debates.models import Debate, Schedule
from debates.services.schedules import schedule_create, schedule_fire, schedule_pause
from tests.debates.conftest import kill_process_group, wait_for, wait_until_finished, worker_env
from tests.debates.factories import AIModelFactory
from tests.debates.test_schedules import schedule_template
from tests.threads import run_at_once

pytestmark = pytest.mark.django_db(transaction=True)


def fake_models(user, llm, count: int = 2) -> list:
    """Return ``count`` models of ``user`` answering from the fake model server."""
    return [
        AIModelFactory(
            owner=user,
            provider="openai_compatible",
            model_name="fake-model",
            base_url=f"{llm.url}/v1",
            timeout_seconds=10,
        )
        for _ in range(count)
    ]


def test_three_firings_start_three_debates_one_after_another(celery_worker, user):
    # given an hourly schedule of two simulated models
    schedule = schedule_create(owner=user, data=schedule_template(user))
    # when it fires three times, each debate finishing before the next firing
    started = []
    for _ in range(3):
        firing = schedule_fire(schedule_id=schedule.pk)
        started.append(firing.debate_id)
        wait_until_finished(firing.debate_id)
    # then three debates were created and completed, linked to the schedule
    debates = list(Debate.objects.filter(schedule=schedule).order_by("pk"))
    assert [d.pk for d in debates] == started
    assert [(d.name, d.status) for d in debates] == [
        ("Hourly BTC #1", "completed"),
        ("Hourly BTC #2", "completed"),
        ("Hourly BTC #3", "completed"),
    ]
    schedule.refresh_from_db()
    assert (schedule.run_count, schedule.skip_count, schedule.last_debate_id) == (3, 0, started[2])


def test_a_firing_during_a_slow_debate_is_skipped_not_queued(celery_worker, user, llm):
    # given a schedule whose models take 0.5 s per answer
    llm.set_latency(0.5)
    data = schedule_template(user, models=fake_models(user, llm))
    schedule = schedule_create(owner=user, data=data)
    first = schedule_fire(schedule_id=schedule.pk)
    # when it fires again while its debate is still running
    second = schedule_fire(schedule_id=schedule.pk)
    # then the second firing is skipped and recorded
    reason = f"Debate {first.debate_id} is still running."
    assert (second.debate_id, second.skipped, second.reason) == (
        None,
        "previous_debate_active",
        reason,
    )
    # and nothing waits behind the running debate: once it is over, the next firing runs
    first_debate = wait_until_finished(first.debate_id)
    assert Debate.objects.filter(schedule=schedule).count() == 1
    third = schedule_fire(schedule_id=schedule.pk)
    third_debate = wait_until_finished(third.debate_id)
    assert (first_debate.status, third_debate.status) == ("completed", "completed")
    assert third_debate.started_at >= first_debate.finished_at
    schedule.refresh_from_db()
    assert (schedule.run_count, schedule.skip_count) == (2, 1)
    assert schedule.last_skip_reason == f"previous_debate_active: {reason}"


def test_concurrent_firings_of_one_schedule_start_one_debate(celery_worker, user, llm):
    # given a schedule of slow models (its debate outlasts the firings)
    llm.set_latency(0.3)
    schedule = schedule_create(
        owner=user, data=schedule_template(user, models=fake_models(user, llm))
    )
    barrier = threading.Barrier(4)
    firings = []

    def fire() -> None:
        barrier.wait(timeout=10)
        firings.append(schedule_fire(schedule_id=schedule.pk))

    # when four firings arrive at once
    run_at_once(fire, 4, timeout=30)
    # then one started a debate and three were skipped
    started = [f.debate_id for f in firings if f.debate_id is not None]
    assert len(started) == 1
    assert sorted(f.skipped for f in firings) == ["", *["previous_debate_active"] * 3]
    schedule.refresh_from_db()
    assert (schedule.run_count, schedule.skip_count) == (1, 3)
    assert Debate.objects.filter(schedule=schedule).count() == 1
    wait_until_finished(started[0])


# -- celery beat with the database scheduler --------------------------------------------


def start_beat_process(log: Path) -> subprocess.Popen:
    """Start ``celery beat`` with the database scheduler on this run's databases.

    It looks at its schedule at least every second (``--max-interval 1``), so a change
    reaches it within about a second.
    """
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "arena",
            "beat",
            "--scheduler",
            "django_celery_beat.schedulers:DatabaseScheduler",
            "--max-interval",
            "1",
            "--loglevel",
            "INFO",
        ],
        cwd=settings.BASE_DIR,
        env=worker_env(),
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
    )


def stop_beat_process(process: subprocess.Popen) -> None:
    """Stop beat as a supervisor would (SIGTERM), killing it if it does not stop."""
    process.terminate()
    with contextlib.suppress(subprocess.TimeoutExpired):
        process.wait(timeout=10)
    if process.poll() is None:
        kill_process_group(process)


def seconds_interval(schedule: Schedule, seconds: int) -> None:
    """Make the schedule's beat entry fire every ``seconds`` instead of every N minutes.

    Saved on the instance, as an operator would in the beat admin, so beat hears of it.
    """
    task = PeriodicTask.objects.get(pk=schedule.periodic_task_id)
    task.interval = IntervalSchedule.objects.create(every=seconds, period=IntervalSchedule.SECONDS)
    task.save()


@pytest.mark.slow
def test_beat_fires_a_schedule_on_a_worker_skipping_while_busy_until_it_is_paused(
    celery_worker, user, llm, tmp_path
):
    # given a schedule whose debates take longer than its beat entry's 2 seconds: a firing's
    # debate is gated (level auto), and the fake models' openings agree, so it stops at L1
    # after its openings, which answer side by side in 2.5 s
    llm.set_latency(2.5)
    schedule = schedule_create(
        owner=user, data=schedule_template(user, models=fake_models(user, llm))
    )
    seconds_interval(schedule, 2)
    # when beat runs with the database scheduler, and the worker runs what it sends
    log = tmp_path / "beat.log"
    beat = start_beat_process(log)
    try:
        wait_for(lambda: Schedule.objects.get().run_count >= 3, timeout=60, every=0.2)
        before_pause = Schedule.objects.get()
        # and the schedule is paused once three debates were started
        schedule_pause(owner=user, schedule_id=schedule.pk)
        runs_at_pause = Schedule.objects.get().run_count
        # beat re-reads its schedule within a second; firings sent before record 'disabled'
        time.sleep(2)
        skips_after_pause = Schedule.objects.get().skip_count
        time.sleep(4)
        final = Schedule.objects.get()
    finally:
        stop_beat_process(beat)
    assert beat.returncode is not None, log.read_text()
    # then firings during a running debate were skipped and recorded, not queued
    assert before_pause.skip_count >= 1, log.read_text()
    assert before_pause.last_skip_reason.startswith("previous_debate_active: Debate ")
    # and no firing started a debate after the pause, and beat stopped sending firings
    assert final.run_count == runs_at_pause
    assert final.skip_count == skips_after_pause
    # and every firing that ran made exactly one debate, each after the previous one ended
    debates = list(Debate.objects.filter(schedule=schedule).order_by("pk"))
    assert len(debates) == final.run_count >= 3
    debates = [wait_until_finished(d.pk) for d in debates]
    assert {d.status for d in debates} == {"completed"}
    for earlier, later in pairwise(debates):
        assert later.started_at >= earlier.finished_at
    assert "Sending due task debates.schedule:" in log.read_text()
