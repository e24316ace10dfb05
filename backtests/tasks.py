"""Celery tasks of backtests: thin, idempotent interfaces to the services."""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings

from arena.heartbeat import RESUME_ON_BOOT_MARGIN_S
from backtests import services
from backtests.services.baseline import baseline_answer_ask
from debates.claims import StepDeferred
from debates.tasks import DATABASE_ERRORS, STEP_OPTIONS, retry_on_fresh_connection

# A run's tasks: short, and retried only on a lost database connection. Nothing reads
# what they return, so no result is stored (a Redis write a task).
RUN_TASK_OPTIONS = {
    "bind": True,
    "ignore_result": True,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "max_retries": 30,
    "soft_time_limit": 120,
    "time_limit": 150,
}


def _on_fresh_connection(task, run: Callable[[], None]) -> None:
    """Run ``run``; on a lost database connection (a restart, a dropped socket), retry
    ``task`` on a fresh one."""
    try:
        run()
    except DATABASE_ERRORS as exc:
        raise retry_on_fresh_connection(task, exc) from exc


@shared_task(name="backtests.tick", **RUN_TASK_OPTIONS)
def backtest_tick_task(self, backtest_id: int, token: str) -> None:
    """Advance a backtest's run once; the service sends the next tick."""
    _on_fresh_connection(self, lambda: services.backtest_tick(backtest_id=backtest_id, token=token))


@shared_task(name="backtests.debate_moved", **RUN_TASK_OPTIONS)
def backtest_debate_moved_task(self, debate_id: int) -> None:
    """Advance the backtest whose step's debate ended or awaits its book: the task a
    backtest's step debates name to be sent then."""
    _on_fresh_connection(self, lambda: services.backtest_debate_moved(debate_id=debate_id))


@shared_task(name="backtests.baseline_answer", queue=settings.MODEL_CALL_QUEUE, **STEP_OPTIONS)
def baseline_answer_task(self, step_id: int) -> None:
    """Ask the next answer of a step's budget-matched baseline, or end it; a step that
    cannot ask now (no free model slot, another copy asking) is retried shortly after.
    It calls a model, so it runs on the call workers' queue, as a debate's calling steps
    do (``debates.routing``)."""
    try:
        baseline_answer_ask(step_id=step_id, holder=self.request.id)
    except StepDeferred as exc:
        raise self.retry(countdown=exc.retry_after) from exc
    except DATABASE_ERRORS as exc:
        raise retry_on_fresh_connection(self, exc) from exc


@shared_task(name="backtests.resume_stale", soft_time_limit=60, time_limit=90)
def backtests_resume_stale_task(older_than_s: float | None = None) -> list[int]:
    """Give a new tick chain to the active backtests whose ticks stopped (the watchdog)."""
    if older_than_s is None:
        return services.backtests_resume_stale()
    return services.backtests_resume_stale(older_than=timedelta(seconds=older_than_s))


@worker_ready.connect
def resume_after_boot(sender=None, **kwargs) -> None:
    """Resume the backtests a dead worker's tick chain left, soon after a worker is up."""
    stopped_s = 4 * settings.BACKTEST_TICK_S + 1
    backtests_resume_stale_task.apply_async(
        kwargs={"older_than_s": stopped_s}, countdown=stopped_s + RESUME_ON_BOOT_MARGIN_S
    )
