"""Celery tasks of trading: thin, idempotent interfaces to the services.

Each task receives ids only, calls one service and owns its retry policy: only an
unreachable exchange (or another worker holding the execution) is retried, with
exponential backoff; every other outcome is recorded on the execution by the service.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_ready

from arena.heartbeat import RESUME_ON_BOOT_MARGIN_S
from debates.tasks import BRIEF_STEP_OPTIONS, DATABASE_ERRORS, retry_on_fresh_connection
from traders import hooks, services
from traders.exceptions import ReconcileBusy
from traders.exchanges.base import ExchangeError, ExchangeUnavailable
from traders.services.approvals import executions_lapse
from traders.services.executions import lease_length
from traders.services.reconcile import trader_reconcile, traders_reconcile_all

logger = logging.getLogger(__name__)

SUBMIT_MAX_RETRIES = 8
BACKOFF_BASE_S = 2
BACKOFF_MAX_S = 60


def backoff_s(retries: int) -> int:
    """Return the wait before retry number ``retries + 1``: 2, 4, 8, ... capped at 60 s."""
    return min(BACKOFF_BASE_S * 2**retries, BACKOFF_MAX_S)


@shared_task(
    name="traders.execution_submit",
    bind=True,
    acks_late=True,
    reject_on_worker_lost=True,
    max_retries=SUBMIT_MAX_RETRIES,
    soft_time_limit=180,
    time_limit=210,
)
def execution_submit_task(self, execution_id: int) -> None:
    """Send an execution's orders to its trader's exchange."""
    try:
        services.execution_submit(execution_id=execution_id)
    except services.ExecutionBusy as exc:
        raise self.retry(exc=exc, countdown=backoff_s(self.request.retries)) from exc
    except ExchangeUnavailable as exc:
        if self.request.retries >= self.max_retries:
            services.execution_abandon(execution_id=execution_id, reason=str(exc))
            return
        raise self.retry(exc=exc, countdown=backoff_s(self.request.retries)) from exc


@shared_task(name="traders.debate_execute", **BRIEF_STEP_OPTIONS)
def debate_execute_task(self, debate_id: int) -> None:
    """Run the execution step of a debate's plan (sent by the debate run, by name)."""
    try:
        hooks.debate_execute(debate_id=debate_id)
    except DATABASE_ERRORS as exc:
        raise retry_on_fresh_connection(self, exc) from exc


@shared_task(name="traders.executions_lapse", soft_time_limit=50, time_limit=60)
def executions_lapse_task() -> list[int]:
    """Lapse the executions awaiting approval past their deadline or gone stale (beat)."""
    return executions_lapse()


@shared_task(name="traders.paper_check_stops", soft_time_limit=50, time_limit=60)
def paper_check_stops_task() -> list[int]:
    """Fill the paper stops and targets that prices crossed since the last check."""
    return services.paper_check_stops()


@shared_task(name="traders.executions_resume_stale", soft_time_limit=50, time_limit=60)
def executions_resume_stale_task() -> list[int]:
    """Submit again the unfinished executions whose worker died (the watchdog)."""
    return services.executions_resume_stale()


@shared_task(name="traders.reconcile", soft_time_limit=100, time_limit=120)
def reconcile_task(trader_id: int) -> int:
    """Reconcile one trader's book with its exchange; return the lines it wrote. A pass
    already running, or an exchange that cannot be read, leaves it to the next one."""
    try:
        return len(trader_reconcile(trader_id=trader_id))
    except ReconcileBusy:
        return 0
    except ExchangeError as exc:
        logger.warning("trader %s not reconciled: %s", trader_id, exc)
        return 0


@shared_task(name="traders.reconcile_all", soft_time_limit=50, time_limit=60)
def reconcile_all_task() -> list[int]:
    """Reconcile every running exchange trader, one task each (beat, worker start)."""
    trader_ids = traders_reconcile_all()
    for trader_id in trader_ids:
        reconcile_task.delay(trader_id)
    return trader_ids


@worker_ready.connect
def resume_executions_after_boot(sender=None, **kwargs) -> None:
    """Pick up the executions a dead worker left behind, once their leases ran out, and
    reconcile the exchange accounts, whose stops may have filled while no worker ran."""
    executions_resume_stale_task.apply_async(
        countdown=lease_length().total_seconds() + RESUME_ON_BOOT_MARGIN_S
    )
    reconcile_all_task.delay()
