"""The watchdogs and sweeps beat sends every few seconds log at INFO only when they act:
their sending, their receipt and a run that found nothing to do go to DEBUG."""

from __future__ import annotations

import logging

import pytest
from celery.app import trace

from debates.tasks import resume_stale_task
from tests.debates.conftest import wait_for

SUCCESS = {"id": "7f3c", "runtime": 0.01, "args": "()", "kwargs": "{}"}


def read_at(caplog, level: int) -> None:
    """Read the logs at ``level``, Celery's included (a command run in this process
    before may have set Celery's loggers to WARNING, as ``quiet_task_logs`` does)."""
    caplog.set_level(level)
    caplog.set_level(level, logger="celery")


def celery_lines(caplog) -> list[tuple[str, str]]:
    """Return the level and message of each record Celery's loggers passed on."""
    return [
        (record.levelname, record.getMessage())
        for record in caplog.records
        if record.name.startswith("celery.")
    ]


def test_an_idle_watchdog_on_a_real_worker_logs_nothing_at_info(celery_worker, caplog):
    # given a worker on the broker, its logs read at INFO
    read_at(caplog, logging.INFO)
    # when beat's watchdog of debates runs with no debate to resume
    result = resume_stale_task.delay()
    wait_for(lambda: result.ready(), timeout=30)
    # then neither its receipt nor its success is logged at INFO
    assert result.get() == []
    assert [line for line in celery_lines(caplog) if "debates.resume_stale" in line[1]] == []


@pytest.mark.parametrize(
    ("returned", "levels"), [("[]", []), ("[12, 15]", ["INFO"])], ids=["idle", "acted"]
)
def test_a_watchdogs_success_is_info_only_when_it_acted(caplog, returned, levels):
    # given the log read at INFO
    read_at(caplog, logging.INFO)
    # when the worker logs the watchdog's success, having resumed nothing or two debates
    success = {**SUCCESS, "name": "debates.resume_stale", "return_value": returned}
    trace.info(trace.LOG_SUCCESS, success)
    # then the line is shown only when it acted
    assert [level for level, _ in celery_lines(caplog)] == levels


def test_beats_sending_of_a_watchdog_is_debug_and_of_a_schedule_firing_info(caplog):
    # given beat's log read at INFO
    read_at(caplog, logging.INFO)
    beat = logging.getLogger("celery.beat")
    # when it sends the watchdog of debates, then a schedule's firing
    beat.info("Scheduler: Sending due task %s (%s)", "debates-resume-stale", "debates.resume_stale")
    beat.info("Scheduler: Sending due task %s (%s)", "schedule-3", "debates.schedule_fire")
    # then only the firing is logged at INFO
    assert celery_lines(caplog) == [
        ("INFO", "Scheduler: Sending due task schedule-3 (debates.schedule_fire)")
    ]


def test_at_debug_the_idle_lines_are_kept_as_debug(caplog):
    read_at(caplog, logging.DEBUG)
    trace.info(
        trace.LOG_SUCCESS, {**SUCCESS, "name": "traders.paper_check_stops", "return_value": "[]"}
    )
    assert celery_lines(caplog) == [
        ("DEBUG", "Task traders.paper_check_stops[7f3c] succeeded in 0.01s: []")
    ]


def test_another_tasks_success_stays_info(caplog):
    read_at(caplog, logging.INFO)
    trace.info(trace.LOG_SUCCESS, {**SUCCESS, "name": "debates.turn_run", "return_value": "None"})
    assert celery_lines(caplog) == [
        ("INFO", "Task debates.turn_run[7f3c] succeeded in 0.01s: None")
    ]
