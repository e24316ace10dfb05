"""Per-user quotas: how much of the service one user may take (SPEC 15, "Safety").

Each limit is a setting; staff users are exempt from all of them:

- ``QUOTA_ACTIVE_DEBATES`` (10): debates pending, running or voting at once; checked
  when a debate is created (a pending debate is waiting to run, so it counts) and when
  a failed one is retried (``retry``, ``retry_step``), which makes it active again.
- ``QUOTA_STARTS_PER_HOUR`` (100): starts in the last hour, checked at each start and
  retry. Each is logged (``debate_start_take``, one ``DebateStart`` row): the quota
  counts what happened, so deleting the debates started gives no start back.
- ``QUOTA_SCHEDULES`` (20): schedules; checked when one is created.
- ``QUOTA_RUNNING_BACKTESTS`` (1): backtests running at once; the backtest service
  calls ``backtest_start_check`` with its own count.

A refusal is ``QuotaExceeded``: HTTP 429, code ``quota_exceeded``, ``fields`` naming the
limit. Each check runs inside the caller's transaction and first locks the user's row,
so the requests of one user are counted one after another: two concurrent creates, or
retries, cannot both take the last place, and a start logged is seen by the next check.
"""

from __future__ import annotations

from datetime import timedelta

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone
from rest_framework import status

from arena.exceptions import ApplicationError
from debates.models import ACTIVE_STATUSES, Debate, DebateStart, DebateStatus, Schedule

# How long a start is kept in the log: the quota reads the last hour of it.
STARTS_KEPT = timedelta(days=1)


class QuotaExceeded(ApplicationError):
    """A per-user limit is reached; ``fields`` names it."""

    code = "quota_exceeded"
    status_code = status.HTTP_429_TOO_MANY_REQUESTS


def owner_lock(*, owner_id: int) -> bool:
    """Lock the user's row for the transaction, as every quota check does first; return
    whether the user is staff. A service that locks the user's debates too takes this
    lock before theirs."""
    if not transaction.get_connection().in_atomic_block:
        raise RuntimeError("a quota is checked inside the transaction that uses it")
    users = get_user_model().objects.select_for_update().filter(pk=owner_id)
    return bool(users.values_list("is_staff", flat=True).first())


def _refuse_at(limit: str, allowed: int, used: int, message: str) -> None:
    if used >= allowed:
        raise QuotaExceeded(
            f"{message} (at most {allowed}).",
            fields={limit: [f"At most {allowed}; you have {used}."]},
        )


def debate_create_check(*, owner_id: int) -> None:
    """Raise ``QuotaExceeded`` if the user may not create another debate now."""
    if not owner_lock(owner_id=owner_id):
        _active_check(owner_id)


def debate_start_check(*, owner_id: int) -> None:
    """Raise ``QuotaExceeded`` if the user may not start another debate now."""
    if not owner_lock(owner_id=owner_id):
        _starts_check(owner_id)


def debate_start_take(*, owner_id: int, activates: bool = False) -> None:
    """Count a start in the user's quotas, inside the transaction that makes it: raise
    ``QuotaExceeded`` past a limit, else log the start (and delete the user's starts
    older than ``STARTS_KEPT``). ``activates``: the start makes one more debate active
    (a retry of a failed one; a pending debate is counted already)."""
    if not owner_lock(owner_id=owner_id):
        if activates:
            _active_check(owner_id)
        _starts_check(owner_id)
    now = timezone.now()
    DebateStart.objects.filter(owner_id=owner_id, started_at__lt=now - STARTS_KEPT).delete()
    DebateStart.objects.create(owner_id=owner_id, started_at=now)


def _active_check(owner_id: int) -> None:
    """Refuse one more active debate past the limit (the user's row locked already)."""
    undone = (DebateStatus.PENDING, *ACTIVE_STATUSES)
    used = Debate.objects.filter(owner_id=owner_id, status__in=undone, quota_counted=True).count()
    _refuse_at(
        "active_debates",
        settings.QUOTA_ACTIVE_DEBATES,
        used,
        "You have as many pending, running or voting debates as one user may",
    )


def _starts_check(owner_id: int) -> None:
    """Refuse one more start in the hour past the limit (the user's row locked already)."""
    since = timezone.now() - timedelta(hours=1)
    used = DebateStart.objects.filter(owner_id=owner_id, started_at__gte=since).count()
    _refuse_at(
        "starts_per_hour",
        settings.QUOTA_STARTS_PER_HOUR,
        used,
        "You have started as many debates in the last hour as one user may",
    )


def schedule_create_check(*, owner_id: int) -> None:
    """Raise ``QuotaExceeded`` if the user may not create another schedule."""
    if owner_lock(owner_id=owner_id):
        return
    used = Schedule.objects.filter(owner_id=owner_id).count()
    _refuse_at(
        "schedules", settings.QUOTA_SCHEDULES, used, "You have as many schedules as one user may"
    )


def backtest_start_check(*, owner_id: int, running: int) -> None:
    """Raise ``QuotaExceeded`` if a user running ``running`` backtests may not start one."""
    if owner_lock(owner_id=owner_id):
        return
    _refuse_at(
        "running_backtests",
        settings.QUOTA_RUNNING_BACKTESTS,
        running,
        "You have as many backtests running as one user may",
    )


def schedule_fire_refusal(*, owner_id: int) -> QuotaExceeded | None:
    """Return why a schedule's firing may not create and start a debate, or None."""
    try:
        if not owner_lock(owner_id=owner_id):
            _active_check(owner_id)
            _starts_check(owner_id)
    except QuotaExceeded as exc:
        return exc
    return None
