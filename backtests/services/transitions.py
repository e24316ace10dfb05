"""Every change of a backtest's state, each a compare-and-set that announces it.

Each transition is one ``UPDATE ... WHERE id = ... AND status IN (...)`` (plus the tick
token where a tick chain is concerned): when two callers race, the database lets
exactly one through, the function says so to the winner, and only the winner publishes
the backtest's event (on commit, through ``backtests.events``). ``backtest`` is updated
in memory with what was written.

Call these inside ``transaction.atomic()``: the event goes out when the change commits.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.utils import timezone

from backtests import events
from backtests.models import ACTIVE_STATUSES, Backtest, BacktestStatus, BacktestStep, BaselineState


def _moved(backtest: Backtest, sources: tuple[str, ...], **fields: Any) -> bool:
    """Write ``fields`` to ``backtest`` if its status is one of ``sources``; say whether
    it moved, and apply them in memory when it did."""
    moved = Backtest.objects.filter(pk=backtest.pk, status__in=sources).update(**fields) == 1
    if moved:
        for name, value in fields.items():
            setattr(backtest, name, value)
    return moved


def started(backtest: Backtest) -> bool:
    """Move a pending backtest to running."""
    moved = _moved(
        backtest,
        (BacktestStatus.PENDING,),
        status=BacktestStatus.RUNNING,
        started_at=timezone.now(),
    )
    if moved:
        events.status_changed(backtest)
    return moved


def progressed(backtest: Backtest, *, steps_done: int) -> bool:
    """Record that ``steps_done`` steps of a running backtest have ended."""
    moved = _moved(backtest, (BacktestStatus.RUNNING,), steps_done=steps_done)
    if moved:
        events.progress(backtest)
    return moved


def completed(backtest: Backtest, *, report: dict, headline: dict, now: datetime) -> bool:
    """Complete a running backtest with its report, made at ``now``."""
    moved = _moved(
        backtest,
        (BacktestStatus.RUNNING,),
        status=BacktestStatus.COMPLETED,
        report=report,
        headline=headline,
        finished_at=now,
        ticked_at=now,
    )
    if moved:
        events.report_ready(backtest)
        events.status_changed(backtest)
    return moved


def failed(backtest: Backtest, *, code: str, message: str) -> bool:
    """Fail an active backtest with the reason."""
    error = {"code": code, "message": message[:2000]}
    moved = _moved(
        backtest,
        ACTIVE_STATUSES,
        status=BacktestStatus.FAILED,
        error=error,
        finished_at=timezone.now(),
    )
    if moved:
        events.status_changed(backtest)
    return moved


def cancelled(backtest: Backtest) -> bool:
    """Cancel an active backtest."""
    moved = _moved(
        backtest, ACTIVE_STATUSES, status=BacktestStatus.CANCELLED, finished_at=timezone.now()
    )
    if moved:
        events.status_changed(backtest)
    return moved


def ticked(backtest: Backtest) -> bool:
    """Record that the tick chain of an active backtest ran (the watchdog's clock)."""
    return _moved(backtest, ACTIVE_STATUSES, ticked_at=timezone.now())


def chain_replaced(backtest: Backtest, *, token: str, fresh: str) -> bool:
    """Give an active backtest whose tick chain holds ``token`` the chain ``fresh``: the
    old chain, if only late, ends at its next tick."""
    active = Backtest.objects.filter(pk=backtest.pk, status__in=ACTIVE_STATUSES, tick_token=token)
    moved = active.update(tick_token=fresh, ticked_at=timezone.now()) == 1
    if moved:
        backtest.tick_token = fresh
    return moved


# --- A step's budget-matched baseline: none, asking, done (no event: the backtest's
# progress, which counts the step once its baseline is done, announces it). -------------


def _baseline_moved(step_id: int, source: str, **fields: Any) -> bool:
    """Write ``fields`` to step ``step_id`` if its baseline is at ``source``; say whether
    it moved."""
    steps = BacktestStep.objects.filter(pk=step_id, baseline_state=source)
    return steps.update(**fields) == 1


def baseline_begun(step_id: int, *, target: int, seat: int, now: datetime) -> bool:
    """Begin a step's baseline: its answers are to match ``target`` tokens, asked of the
    model of seat ``seat``."""
    return _baseline_moved(
        step_id,
        BaselineState.NONE,
        baseline_state=BaselineState.ASKING,
        baseline_target=target,
        baseline_seat=seat,
        baseline_moved_at=now,
    )


def baseline_beat(step_id: int, now: datetime) -> bool:
    """Mark an asking baseline alive (the watchdog's clock)."""
    return _baseline_moved(step_id, BaselineState.ASKING, baseline_moved_at=now)


def baseline_ended(step_id: int, *, note: str, source: str = BaselineState.ASKING) -> bool:
    """End a step's baseline, asking, or not begun (its debate did not complete)."""
    return _baseline_moved(
        step_id, source, baseline_state=BaselineState.DONE, baseline_note=note[:200]
    )
