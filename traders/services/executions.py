"""Executing a consensus decision on a trader (SPEC 10): request, submit, give up.

``execution_request`` checks ownership and state, refuses a stale decision
(``traders.services.staleness``), and records one pending execution per decision (the
one-to-one column is the unique constraint; the decision's row lock makes concurrent
requests queue, so every one of them returns the same execution), then enqueues
``traders.execution_submit`` once the transaction commits.

``execution_submit`` runs the execution, idempotently: under a lease (one worker at a
time), it brings a paper trader's clock to the debate's instant, then opens or closes
the position, sending each order exactly once (``traders.services.orders``: the plan
within the strategy's risk limits, the entry, the stop loss and take profit). Each
change of the execution's state is a compare-and-set, announced on the debate's stream
(``traders.services.execution_state``).
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.utils import timezone

from arena.exceptions import InvalidState, NotFound, ValidationError
from arena.heartbeat import heartbeat
from arena.worker import send_on_commit
from debates.engine.book import book_orders
from debates.engine.types import CLOSING_ACTIONS, EXECUTABLE_ACTIONS, OPENING_ACTIONS
from debates.models import Debate, DebateStatus
from strategies.market.dataset import DATASET_END
from strategies.market.exceptions import InvalidSymbolError
from strategies.market.symbols import normalize_symbol
from traders import events, locks
from traders.exceptions import AlreadyExecuted, NotExecutable, TraderStopped
from traders.exchanges import exchange_for
from traders.exchanges.base import ExchangeAdapter, ExchangeUnavailable, OrderRejected
from traders.models import Exchange, Execution, ExecutionStatus, Trader, TraderStatus
from traders.risk import RiskRefused
from traders.services.execution_state import (
    FINAL_STATUSES,
    UNFINISHED_STATUSES,
    ExecutionBusy,
    execution_finish,
    execution_load,
)
from traders.services.guards import account_instant, guards_check
from traders.services.orders import position_close, position_close_first, position_open
from traders.services.paper import PaperClockAhead, paper_clock_advance, paper_clock_meet
from traders.services.staleness import staleness_check

logger = logging.getLogger(__name__)

CLIENT_ID_PREFIX = "arena"


def client_order_id(decision_id: int) -> str:
    """Return the client order id of a decision's entry order: ``arena<id><8 hex>``.

    The hash is keyed with the deployment's secret key, so two installations trading on
    one account never share ids. At most 31 characters of ``[A-Za-z0-9]``, leaving one
    for the suffix of the protective orders.
    """
    digest = hmac.new(
        settings.SECRET_KEY.encode(), f"decision:{decision_id}".encode(), hashlib.sha256
    ).hexdigest()[:8]
    return f"{CLIENT_ID_PREFIX}{decision_id}{digest}"


# -- request -------------------------------------------------------------------------


def execution_request(
    *,
    owner: Any,
    debate_id: int,
    trader_id: int,
    symbol: str | None = None,
    trigger: str = "manual",
) -> Execution:
    """Record the execution of a debate's decision on a trader and enqueue its submission
    (an automatic one on an account that requires approval waits for it instead).

    ``symbol`` None means the primary decision. Repeated and concurrent requests for the
    same decision and trader return the same execution. Raise ``NotFound`` for another
    user's debate or trader, ``InvalidState`` unless the debate is completed,
    ``NotExecutable`` for hold/wait, ``TraderStopped`` for a stopped trader and
    ``AlreadyExecuted`` when the decision was executed on a different trader.
    """
    debate = Debate.objects.filter(pk=debate_id, owner=owner).first()
    if debate is None:
        raise NotFound("Debate not found.")
    trader = Trader.objects.filter(pk=trader_id, owner=owner).first()
    if trader is None:
        raise NotFound("Trader not found.")
    if debate.status != DebateStatus.COMPLETED:
        raise InvalidState(
            f"The debate is {debate.status}: only a completed debate can be executed."
        )
    wanted = _symbol(symbol)
    with transaction.atomic():
        decision = locks.lock_decision(debate_id=debate.pk, symbol=wanted)
        if decision is None:
            what = "primary decision" if wanted is None else f"decision on {wanted}"
            raise NotFound(f"The debate has no {what}.")
        existing = Execution.objects.filter(decision=decision).first()
        if existing is not None:
            return _same_trader(existing, trader)
        if decision.action not in EXECUTABLE_ACTIONS:
            raise NotExecutable(
                f"The decision on {decision.symbol} is {decision.action}: only open and close "
                "decisions are executed."
            )
        if trader.status != TraderStatus.RUNNING:
            raise TraderStopped(f"Trader {trader.name} is stopped.")
        check = staleness_check(decision=decision, debate=debate, trader=trader)
        waits = trigger == "auto" and trader.waits_for_approval
        try:
            with transaction.atomic():
                execution = Execution.objects.create(
                    decision=decision,
                    trader=trader,
                    trigger=trigger,
                    client_order_id=client_order_id(decision.pk),
                    symbol=decision.symbol,
                    action=decision.action,
                    leverage=decision.leverage,
                    staleness=check.to_dict(),
                    **(_awaiting(trader) if waits else {}),
                )
        except IntegrityError:
            # The unique decision column caught a concurrent request the lock missed.
            return _same_trader(Execution.objects.get(decision=decision), trader)
        events.execution_changed(execution)
        if not waits:
            enqueue_submit(execution.pk)
    return execution


def _awaiting(trader: Trader) -> dict[str, Any]:
    """Return the fields of an automatic execution that waits for its owner's approval
    (``traders.services.approvals``): nothing is sent until then."""
    deadline = timezone.now() + timedelta(minutes=trader.approval_minutes)
    return {"status": ExecutionStatus.AWAITING_APPROVAL, "approval_deadline": deadline}


def _symbol(symbol: str | None) -> str | None:
    if symbol is None:
        return None
    try:
        return normalize_symbol(symbol)
    except InvalidSymbolError as exc:
        raise ValidationError(fields={"symbol": [str(exc)]}) from exc


def _same_trader(execution: Execution, trader: Trader) -> Execution:
    if execution.trader_id != trader.pk:
        raise AlreadyExecuted(
            f"The decision on {execution.symbol} was already executed on another trader "
            f"(execution {execution.pk})."
        )
    return execution


def enqueue_submit(execution_id: int) -> None:
    from traders.tasks import execution_submit_task

    send_on_commit(execution_submit_task.si(execution_id))


def execution_resubmit(*, execution_id: int) -> bool:
    """Enqueue the submission of an unfinished execution again; return whether it was.

    Safe at any time: the submission looks up whatever may already be on the exchange.
    """
    if not Execution.objects.filter(pk=execution_id, status__in=UNFINISHED_STATUSES).exists():
        return False
    enqueue_submit(execution_id)
    return True


def lease_length() -> timedelta:
    """Return how long an execution's lease outlives the worker submitting it
    (``EXECUTION_LEASE_S``, 20 s by default): a live worker renews it every quarter of
    it, so one that dies frees the execution within a lease."""
    return timedelta(seconds=settings.EXECUTION_LEASE_S)


def executions_resume_stale(*, older_than: timedelta | None = None) -> list[int]:
    """Submit again every unfinished execution that no live worker holds and that
    nothing touched for ``older_than`` (a lease's length by default).

    Its task may have died with a worker, or been lost with a Redis restart; the
    submission looks up whatever already reached the exchange, so nothing is sent twice.
    Return the ids resubmitted.
    """
    now = timezone.now()
    stale = Execution.objects.filter(
        Q(lease_until__isnull=True) | Q(lease_until__lt=now),
        status__in=UNFINISHED_STATUSES,
        updated_at__lt=now - (lease_length() if older_than is None else older_than),
    ).values_list("pk", flat=True)
    resumed = []
    for execution_id in stale:
        with transaction.atomic():
            # Touch it, so the next sweep leaves it to the submission just enqueued.
            Execution.objects.filter(pk=execution_id).update(updated_at=timezone.now())
            execution_resubmit(execution_id=execution_id)
        resumed.append(execution_id)
    return resumed


# -- submit --------------------------------------------------------------------------


def execution_submit(*, execution_id: int) -> Execution:
    """Send a pending execution's orders, or finish one whose answer was lost; idempotent.

    Raise ``ExchangeUnavailable`` when the exchange cannot be reached (retry later: every
    step resumes where it stopped) and ``ExecutionBusy`` while another worker holds it.
    An unexpected error fails a still-pending execution (nothing was sent) and is raised
    again for a submitted one, which an operator can resubmit.
    """
    execution = execution_load(execution_id)
    if execution.status in FINAL_STATUSES:
        return execution
    if not _lease_take(execution_id):
        raise ExecutionBusy(f"execution {execution_id} is being submitted by another worker")

    def renew() -> None:
        until = timezone.now() + lease_length()
        Execution.objects.filter(pk=execution_id).update(lease_until=until)

    try:
        execution = execution_load(execution_id)
        if execution.status in FINAL_STATUSES:
            return execution
        every_s = lease_length().total_seconds() / 4
        with heartbeat(renew, every_s=every_s, name=f"execution-{execution_id}"):
            return _submit(execution)
    except (ExchangeUnavailable, ExecutionBusy):
        raise
    except Exception:
        logger.exception("execution %s stopped on an unexpected error", execution_id)
        current = execution_load(execution_id)
        if current.status != ExecutionStatus.PENDING:
            raise
        return execution_finish(
            current,
            ExecutionStatus.FAILED,
            error="An internal error stopped the execution before any order was sent.",
        )
    finally:
        Execution.objects.filter(pk=execution_id).update(lease_until=None)


def execution_abandon(*, execution_id: int, reason: str) -> Execution:
    """Fail an execution whose exchange stayed unreachable through every retry."""
    execution = execution_load(execution_id)
    if execution.status == ExecutionStatus.PENDING:
        message = f"The exchange could not be reached; nothing was sent. {reason}"
    elif execution.filled_quantity > 0:
        message = (
            "The entry filled, then the exchange could not be reached to protect it: the "
            f"position may be OPEN WITHOUT A STOP, check the exchange. {reason}"
        )
    else:
        message = (
            "The exchange could not be reached to confirm the order: its outcome is unknown, "
            f"check the exchange. {reason}"
        )
    return execution_finish(execution, ExecutionStatus.FAILED, error=message)


def _lease_take(execution_id: int) -> bool:
    now = timezone.now()
    return bool(
        Execution.objects.filter(pk=execution_id)
        .filter(Q(lease_until__isnull=True) | Q(lease_until__lt=now))
        .update(lease_until=now + lease_length())
    )


def _submit(execution: Execution) -> Execution:
    trader = execution.trader
    if execution.status == ExecutionStatus.PENDING:
        if trader.status != TraderStatus.RUNNING:
            return execution_finish(
                execution,
                ExecutionStatus.FAILED,
                error=f"Trader {trader.name} was stopped before the order was sent.",
            )
        try:
            _paper_clock_catch_up(trader, execution.decision.debate)
        except PaperClockAhead as exc:
            return execution_finish(execution, ExecutionStatus.FAILED, error=str(exc))
    adapter = exchange_for(trader)
    try:
        if execution.status == ExecutionStatus.PENDING:
            return _against_the_book(execution, adapter)
        if execution.action in OPENING_ACTIONS:
            return position_open(execution, adapter)
        if execution.action in CLOSING_ACTIONS:
            return position_close(execution, adapter)
        return execution_finish(
            execution, ExecutionStatus.FAILED, error=f"{execution.action} is not executable."
        )
    except RiskRefused as exc:
        return execution_finish(execution, ExecutionStatus.FAILED, error=exc.message)
    except OrderRejected as exc:
        return execution_finish(
            execution, ExecutionStatus.FAILED, error=f"The exchange refused: {exc}"
        )


def _against_the_book(execution: Execution, adapter: ExchangeAdapter) -> Execution:
    """Turn a pending execution's decision into orders against the positions held on its
    coin now (``debates.engine.book.book_orders``), never trusting a model's reading of
    the book: close (reduce-only), close the other side first then open, open, or do
    nothing, recorded as skipped with why. The account is measured against the
    strategy's guards first (``guards_check``): a paused trader opens nothing."""
    strategy = execution.decision.debate.strategy
    positions = adapter.positions()
    trader = _guarded(execution, adapter, positions, strategy)
    orders = book_orders(
        execution.action,
        [p.side for p in positions if p.symbol == execution.symbol],
        # Both sides of a coin at once need the strategy's leave and a hedge-mode account:
        # in one-way mode an opening the other way would net the held position away.
        hedging=bool(strategy and strategy.allow_hedging) and adapter.hedged(execution.symbol),
        paused=trader.paused_reason,
    )
    if orders.nothing:
        return execution_finish(execution, ExecutionStatus.SKIPPED, note=orders.note)
    if execution.action in CLOSING_ACTIONS:
        return position_close(execution, adapter)
    done = [position_close_first(execution, adapter, side=side) for side in orders.closes]
    note = "; ".join(filter(None, [*done, "" if orders.opens else orders.note]))
    if orders.opens is None:
        return execution_finish(execution, ExecutionStatus.SKIPPED, note=note)
    Execution.objects.filter(pk=execution.pk).update(note=note)
    return position_open(execution_load(execution.pk), adapter)


def _guarded(
    execution: Execution, adapter: ExchangeAdapter, positions: list, strategy: Any
) -> Trader:
    """Measure the execution's trader against its strategy's guards, at its account's
    instant; return the trader as it is after (paused or not)."""
    exposure = sum((p.quantity * adapter.price(p.symbol) for p in positions), Decimal("0"))
    trader = Trader.objects.get(pk=execution.trader_id)  # its clock as the catch-up left it
    return guards_check(
        trader_id=trader.pk,
        funds=adapter.balance(),
        exposure=exposure,
        now=account_instant(trader, timezone.now()),
        strategy=strategy,
        debate_id=execution.decision.debate_id,
    )


def _paper_clock_catch_up(trader: Trader, debate: Debate) -> None:
    """Bring a paper trader's clock to the debate's market instant before it trades, so
    the order fills at that instant's price; raise ``PaperClockAhead`` when it cannot."""
    if trader.exchange != Exchange.PAPER:
        return
    if trader.market_source == "live":
        paper_clock_advance(trader_id=trader.pk, to=timezone.now())
        return
    paper_clock_meet(trader_id=trader.pk, to=_snapshot_as_of(debate))


def _snapshot_as_of(debate: Debate) -> datetime:
    stamp = (debate.market_snapshot or {}).get("as_of")
    if stamp:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    return debate.as_of or DATASET_END
