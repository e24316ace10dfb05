"""An execution's status moves only here: each move is a compare-and-set from the states
it may leave, announced on the debate's stream.

States: ``pending -> submitted -> filled``, ``pending | submitted -> failed``, ``pending ->
skipped`` (the decision does nothing against the book); an automatic execution on an
account that requires approval starts ``awaiting_approval``, then goes to ``pending``
(approved), ``rejected`` or ``lapsed`` (``traders.services.approvals``).
"""

from __future__ import annotations

from typing import Any

from celery import signature
from django.db import transaction
from django.utils import timezone

from arena.exceptions import NotFound
from arena.worker import send_on_commit
from traders import events
from traders.exchanges.base import OrderResult
from traders.models import Exchange, Execution, ExecutionStatus, Order

FINAL_STATUSES = (
    ExecutionStatus.FILLED,
    ExecutionStatus.FAILED,
    ExecutionStatus.SKIPPED,
    ExecutionStatus.REJECTED,
    ExecutionStatus.LAPSED,
)
UNFINISHED_STATUSES = (ExecutionStatus.PENDING, ExecutionStatus.SUBMITTED)


class ExecutionBusy(Exception):
    """Another worker is submitting this execution right now: try again later."""


def execution_load(execution_id: int) -> Execution:
    """Return the execution with its trader and its decision's debate and strategy."""
    execution = (
        Execution.objects.select_related("trader", "decision__debate__strategy")
        .filter(pk=execution_id)
        .first()
    )
    if execution is None:
        raise NotFound(f"Execution {execution_id} not found.")
    return execution


def execution_mark_submitted(execution: Execution, entry: Order, **fields: Any) -> Execution:
    """Move a pending execution to submitted and record its entry order, in one commit."""
    with transaction.atomic():
        moved = Execution.objects.filter(pk=execution.pk, status=ExecutionStatus.PENDING).update(
            status=ExecutionStatus.SUBMITTED, updated_at=timezone.now(), **fields
        )
        if not moved:
            raise ExecutionBusy(f"execution {execution.pk} left pending meanwhile")
        entry.save()
        fresh = execution_load(execution.pk)
        events.execution_changed(fresh)
    return fresh


def execution_record_fill(execution: Execution, result: OrderResult) -> Execution:
    """Record the fill of the execution's entry (or closing) order on the execution."""
    Execution.objects.filter(pk=execution.pk).update(
        exchange_order_id=result.order_id[:64],
        filled_quantity=result.filled,
        average_price=result.average_price,
        fee=result.fee,
        updated_at=timezone.now(),
    )
    return execution_load(execution.pk)


def execution_finish(
    execution: Execution, status: str, *, error: str = "", **fields: Any
) -> Execution:
    """Move an unfinished execution to ``status`` (filled, failed or skipped) and
    announce it; an exchange account's book is then reconciled with what it did."""
    with transaction.atomic():
        moved = Execution.objects.filter(pk=execution.pk, status__in=UNFINISHED_STATUSES).update(
            status=status, error=error[:4000], updated_at=timezone.now(), **fields
        )
        fresh = execution_load(execution.pk)
        if moved:
            events.execution_changed(fresh)
            if fresh.trader.exchange != Exchange.PAPER and fresh.filled_quantity > 0:
                reconcile = signature("traders.reconcile", args=(fresh.trader_id,), immutable=True)
                send_on_commit(reconcile)
    return fresh
