"""Unfinished executions that no live worker holds are submitted again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.traders.factories import ExecutionFactory
from traders.models import Execution
from traders.services import executions_resume_stale

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
