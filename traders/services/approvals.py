"""Approving an automatic execution before it trades real money.

An exchange account that requires approval (``Trader.waits_for_approval``; a paper
account never waits) records its automatic executions ``awaiting_approval``, with a
deadline ``approval_minutes`` ahead, and sends nothing. The owner approves it (the
decision is checked for staleness again, and a stale one lapses instead), and it is
sent as any execution is; or rejects it; or it lapses, once its deadline passes or the
staleness guard would refuse it (``executions_lapse``, a beat task). Each move is a
compare-and-set under the execution's row lock: of concurrent approvals exactly one
sends it, and the others are answered with the execution as it is.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from arena.exceptions import InvalidState, NotFound
from traders import events
from traders.exceptions import StaleDecision
from traders.models import Execution, ExecutionStatus
from traders.services.execution_state import execution_load
from traders.services.staleness import staleness_check

AWAITING = ExecutionStatus.AWAITING_APPROVAL


def _owned(execution_id: int, owner: Any) -> None:
    if not Execution.objects.filter(pk=execution_id, trader__owner=owner).exists():
        raise NotFound(f"Execution {execution_id} not found.")


def _locked(execution_id: int) -> Execution:
    return (
        Execution.objects.select_for_update(of=("self",))
        .select_related("trader", "decision__debate__strategy")
        .get(pk=execution_id)
    )


def _moved(execution: Execution, status: str, **fields: Any) -> Execution:
    """Move a locked execution awaiting approval to ``status`` and announce it."""
    Execution.objects.filter(pk=execution.pk, status=AWAITING).update(
        status=status, updated_at=timezone.now(), **fields
    )
    moved = execution_load(execution.pk)
    events.execution_changed(moved)
    return moved


def execution_approve(*, execution_id: int, owner: Any, now: datetime | None = None) -> Execution:
    """Approve an execution awaiting approval and send it; return it. An execution
    already approved is returned as it is; a rejected or lapsed one, or one whose
    deadline has passed or whose decision went stale (it lapses then), is refused with
    ``invalid_state``."""
    from traders.services.executions import enqueue_submit

    _owned(execution_id, owner)
    now = now or timezone.now()
    with transaction.atomic():
        execution = _locked(execution_id)
        if execution.status != AWAITING:
            return _already(execution, "approve")
        refusal = _lapse_reason(execution, now)
        if refusal is None:
            approved = _moved(execution, ExecutionStatus.PENDING, approval_deadline=None)
            enqueue_submit(approved.pk)
            return approved
        _moved(execution, ExecutionStatus.LAPSED, error=refusal)
    raise InvalidState(f"The execution lapsed: {refusal}", fields={"status": ["lapsed"]})


def execution_reject(*, execution_id: int, owner: Any) -> Execution:
    """Reject an execution awaiting approval: nothing is sent. A rejected one is
    returned as it is; any other is refused with ``invalid_state``."""
    _owned(execution_id, owner)
    with transaction.atomic():
        execution = _locked(execution_id)
        if execution.status == ExecutionStatus.REJECTED:
            return execution
        if execution.status != AWAITING:
            raise _refused(execution, "reject")
        return _moved(execution, ExecutionStatus.REJECTED, error="Rejected by its owner.")


def executions_lapse(*, now: datetime | None = None) -> list[int]:
    """Lapse every execution awaiting approval whose deadline passed or whose decision
    the staleness guard would refuse now; return their ids."""
    now = now or timezone.now()
    lapsed = []
    for execution_id in Execution.objects.filter(status=AWAITING).values_list("pk", flat=True):
        with transaction.atomic():
            execution = _locked(execution_id)
            reason = _lapse_reason(execution, now) if execution.status == AWAITING else None
            if reason is not None:
                _moved(execution, ExecutionStatus.LAPSED, error=reason)
                lapsed.append(execution_id)
    return lapsed


def _lapse_reason(execution: Execution, now: datetime) -> str | None:
    """Return why an execution awaiting approval lapses at ``now``, or None."""
    if execution.approval_deadline is not None and execution.approval_deadline <= now:
        return "Not approved in time."
    try:
        staleness_check(
            decision=execution.decision,
            debate=execution.decision.debate,
            trader=execution.trader,
        )
    except StaleDecision as exc:
        return exc.message
    return None


def _already(execution: Execution, action: str) -> Execution:
    """Return an execution a concurrent approval moved on, or refuse ``action`` on a
    rejected or lapsed one."""
    if execution.status in (ExecutionStatus.REJECTED, ExecutionStatus.LAPSED):
        raise _refused(execution, action)
    return execution


def _refused(execution: Execution, action: str) -> InvalidState:
    return InvalidState(
        f"Cannot {action} an execution that is {execution.status}.",
        fields={"status": [execution.status]},
    )
