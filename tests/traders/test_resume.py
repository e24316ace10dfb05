"""Unfinished executions that no live worker holds are submitted again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.settings_read import setting_in_process
from tests.traders.factories import ExecutionFactory
from traders.models import Execution
from traders.services import execution_submit, executions_resume_stale
from traders.services import executions as executions_module
from traders.tasks import executions_resume_stale_task, resume_executions_after_boot

pytestmark = pytest.mark.django_db


def age(execution: Execution, seconds: int, lease_in: int | None = None) -> None:
    now = timezone.now()
    Execution.objects.filter(pk=execution.pk).update(
        updated_at=now - timedelta(seconds=seconds),
        lease_until=None if lease_in is None else now + timedelta(seconds=lease_in),
    )


def test_only_unheld_quiet_unfinished_executions_are_resubmitted(
    django_capture_on_commit_callbacks,
):
    # given executions in every situation
    orphan = ExecutionFactory(status="submitted")
    age(orphan, 60)
    expired_lease = ExecutionFactory(status="pending")
    age(expired_lease, 60, lease_in=-5)
    held = ExecutionFactory(status="submitted")
    age(held, 60, lease_in=15)
    fresh = ExecutionFactory(status="pending")
    done = ExecutionFactory(status="filled")
    age(done, 60)
    # when the watchdog sweeps
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        resumed = executions_resume_stale()
    # then only the orphans are enqueued again, once each
    assert sorted(resumed) == sorted([orphan.pk, expired_lease.pk])
    assert len(callbacks) == 2
    assert fresh.pk not in resumed and held.pk not in resumed and done.pk not in resumed
    # and a second sweep right after leaves them to the submissions just enqueued
    with django_capture_on_commit_callbacks(execute=False):
        assert executions_resume_stale() == []


def test_an_execution_is_quiet_once_nothing_touched_it_for_a_lease(
    settings, django_capture_on_commit_callbacks
):
    # given a lease of 6 s, and executions last touched 10 s and 3 s ago
    settings.EXECUTION_LEASE_S = 6
    quiet, recent = ExecutionFactory(status="submitted"), ExecutionFactory(status="submitted")
    age(quiet, 10)
    age(recent, 3)
    # when the watchdog sweeps, then only the quiet one is submitted again
    with django_capture_on_commit_callbacks(execute=False):
        assert executions_resume_stale() == [quiet.pk]


def test_by_default_an_execution_is_quiet_after_20_seconds(django_capture_on_commit_callbacks):
    execution = ExecutionFactory(status="submitted")
    age(execution, 15)
    with django_capture_on_commit_callbacks(execute=False):
        assert executions_resume_stale() == []
    age(execution, 25)
    with django_capture_on_commit_callbacks(execute=False):
        assert executions_resume_stale() == [execution.pk]


def test_a_submission_holds_its_execution_for_the_lease_setting(settings, monkeypatch):
    settings.EXECUTION_LEASE_S = 6
    execution = ExecutionFactory(status="submitted")
    held_for: list[float] = []

    def submit(current: Execution) -> Execution:
        lease_until = Execution.objects.get(pk=current.pk).lease_until
        held_for.append((lease_until - timezone.now()).total_seconds())
        return current

    monkeypatch.setattr(executions_module, "_submit", submit)
    execution_submit(execution_id=execution.pk)
    [seconds] = held_for
    assert 3 < seconds <= 6  # not the default 20 s
    assert Execution.objects.get(pk=execution.pk).lease_until is None


def test_a_worker_picks_up_left_behind_executions_once_their_leases_ran_out(settings, monkeypatch):
    settings.EXECUTION_LEASE_S = 6
    sent: list[dict] = []
    monkeypatch.setattr(
        executions_resume_stale_task, "apply_async", lambda **options: sent.append(options)
    )
    resume_executions_after_boot()
    assert sent == [{"countdown": 11.0}]


def test_beat_looks_for_left_behind_executions_every_third_of_the_lease() -> None:
    schedule = "settings.CELERY_BEAT_SCHEDULE['traders-executions-resume-stale']['schedule']"
    assert setting_in_process(schedule, EXECUTION_LEASE_S="30") == "10"
    assert setting_in_process(schedule, EXECUTION_LEASE_S="2") == "1"
