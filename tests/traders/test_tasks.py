"""The trading tasks' names, retry backoff and schedule."""

from __future__ import annotations

from django.conf import settings

from traders.tasks import backoff_s, execution_submit_task, paper_check_stops_task


def test_tasks_have_stable_names_and_submission_survives_a_lost_worker():
    # given the trading tasks
    # when their options are read
    # then they carry explicit names, and submission is acknowledged late
    assert execution_submit_task.name == "traders.execution_submit"
    assert paper_check_stops_task.name == "traders.paper_check_stops"
    assert (execution_submit_task.acks_late, execution_submit_task.reject_on_worker_lost) == (
        True,
        True,
    )


def test_retries_back_off_exponentially_up_to_a_minute():
    # given successive retries
    # when their waits are computed
    # then they double from 2 s and stop growing at 60 s
    assert [backoff_s(n) for n in range(7)] == [2, 4, 8, 16, 32, 60, 60]


def test_the_paper_stop_sweep_is_scheduled_every_minute():
    # given the beat schedule
    entry = settings.CELERY_BEAT_SCHEDULE["traders-paper-check-stops"]
    # when read
    # then the sweep runs every 60 s
    assert entry == {"task": "traders.paper_check_stops", "schedule": 60.0}
