"""Executing a consensus decision on a trader (SPEC 10): request, submit, give up.

``execution_request`` checks ownership and state, refuses a stale decision
(``traders.services.staleness``), and records one pending execution per decision (the
one-to-one column is the unique constraint; the decision's row lock makes concurrent
requests queue, so every one of them returns the same execution), then enqueues
``traders.execution_submit`` once the transaction commits.

``execution_submit`` runs the execution, idempotently: under a lease (one worker at a
time), it plans the order with the strategy's risk limits (``traders.risk``), moves the
execution to ``submitted`` and records the entry order *before* sending it, then sends
it with a client order id derived from the decision. Whatever was recorded as possibly
sent is looked up by client order id before being sent again, so a retry after a lost
answer never trades twice. Opening decisions then get a reduce-only stop loss and take
profit; when the stop loss cannot be placed, the position is closed again and the
execution fails with the reason. A take profit the exchange refuses is recorded on the
execution, which still fills: the position is protected by its stop.

States: ``pending -> submitted -> filled``, ``pending | submitted -> failed``; each change
is a compare-and-set and is announced on the debate's stream.

Protective prices come from the entry's average fill price (the quoted price is only
used for sizing and the pre-trade checks), so the stop sits exactly ``stop_loss`` away
from where the position really opened.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
from collections.abc import Callable
from dataclasses import dataclass
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
from debates.engine.types import CLOSING_ACTIONS, EXECUTABLE_ACTIONS, OPENING_ACTIONS
from debates.models import Debate, DebateStatus
from strategies.market.dataset import DATASET_END
from strategies.market.exceptions import InvalidSymbolError
from strategies.market.symbols import normalize_symbol
from strategies.models import Strategy
from traders import events, locks
from traders.exceptions import AlreadyExecuted, NotExecutable, TraderStopped
from traders.exchanges import exchange_for
from traders.exchanges.base import (
    BUY,
    SELL,
    STOP_LOSS,
    TAKE_PROFIT,
    ExchangeAdapter,
    ExchangeError,
    ExchangeUnavailable,
    OrderNotFound,
    OrderRejected,
    OrderResult,
)
from traders.models import (
    Exchange,
    Execution,
    ExecutionStatus,
    Order,
    OrderStatus,
    OrderType,
    Trader,
    TraderStatus,
)
from traders.risk import (
    LONG,
    SHORT,
    MarketRules,
    OpenIntent,
    RiskLimits,
    RiskRefused,
    open_intent,
    plan_open,
    protective_prices,
)
from traders.services.paper import PaperClockAhead, paper_clock_advance, paper_clock_meet
from traders.services.staleness import staleness_check

logger = logging.getLogger(__name__)

FINAL_STATUSES = (ExecutionStatus.FILLED, ExecutionStatus.FAILED)
UNFINISHED_STATUSES = (ExecutionStatus.PENDING, ExecutionStatus.SUBMITTED)
CLIENT_ID_PREFIX = "arena"
# Suffixes of the orders that follow the entry order of an execution.
STOP_SUFFIX, TARGET_SUFFIX, UNWIND_SUFFIX = "S", "T", "X"


class ExecutionBusy(Exception):
    """Another worker is submitting this execution right now: try again later."""


@dataclass(frozen=True)
class _Sent:
    order: Order
    result: OrderResult


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
    """Record the execution of a debate's decision on a trader and enqueue its submission.

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
                )
        except IntegrityError:
            # The unique decision column caught a concurrent request the lock missed.
            return _same_trader(Execution.objects.get(decision=decision), trader)
        events.execution_changed(execution)
        _enqueue_submit(execution.pk)
    return execution


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


def _enqueue_submit(execution_id: int) -> None:
    from traders.tasks import execution_submit_task

    send_on_commit(execution_submit_task.si(execution_id))


def execution_resubmit(*, execution_id: int) -> bool:
    """Enqueue the submission of an unfinished execution again; return whether it was.

    Safe at any time: the submission looks up whatever may already be on the exchange.
    """
    if not Execution.objects.filter(pk=execution_id, status__in=UNFINISHED_STATUSES).exists():
        return False
    _enqueue_submit(execution_id)
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
    execution = _load(execution_id)
    if execution.status in FINAL_STATUSES:
        return execution
    if not _lease_take(execution_id):
        raise ExecutionBusy(f"execution {execution_id} is being submitted by another worker")

    def renew() -> None:
        until = timezone.now() + lease_length()
        Execution.objects.filter(pk=execution_id).update(lease_until=until)

    try:
        execution = _load(execution_id)
        if execution.status in FINAL_STATUSES:
            return execution
        every_s = lease_length().total_seconds() / 4
        with heartbeat(renew, every_s=every_s, name=f"execution-{execution_id}"):
            return _submit(execution)
    except (ExchangeUnavailable, ExecutionBusy):
        raise
    except Exception:
        logger.exception("execution %s stopped on an unexpected error", execution_id)
        current = _load(execution_id)
        if current.status != ExecutionStatus.PENDING:
            raise
        return _finish(
            current,
            ExecutionStatus.FAILED,
            error="An internal error stopped the execution before any order was sent.",
        )
    finally:
        Execution.objects.filter(pk=execution_id).update(lease_until=None)


def execution_abandon(*, execution_id: int, reason: str) -> Execution:
    """Fail an execution whose exchange stayed unreachable through every retry."""
    execution = _load(execution_id)
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
    return _finish(execution, ExecutionStatus.FAILED, error=message)


def _load(execution_id: int) -> Execution:
    execution = (
        Execution.objects.select_related("trader", "decision__debate__strategy")
        .filter(pk=execution_id)
        .first()
    )
    if execution is None:
        raise NotFound(f"Execution {execution_id} not found.")
    return execution


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
            return _finish(
                execution,
                ExecutionStatus.FAILED,
                error=f"Trader {trader.name} was stopped before the order was sent.",
            )
        try:
            _paper_clock_catch_up(trader, execution.decision.debate)
        except PaperClockAhead as exc:
            return _finish(execution, ExecutionStatus.FAILED, error=str(exc))
    adapter = exchange_for(trader)
    try:
        if execution.action in OPENING_ACTIONS:
            return _open(execution, adapter)
        if execution.action in CLOSING_ACTIONS:
            return _close(execution, adapter)
        return _finish(
            execution, ExecutionStatus.FAILED, error=f"{execution.action} is not executable."
        )
    except RiskRefused as exc:
        return _finish(execution, ExecutionStatus.FAILED, error=exc.message)
    except OrderRejected as exc:
        return _finish(execution, ExecutionStatus.FAILED, error=f"The exchange refused: {exc}")


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


def strategy_risk_limits(strategy: Strategy | None) -> RiskLimits:
    """Return the risk limits of ``strategy`` (the defaults without one)."""
    if strategy is None:
        return RiskLimits()
    return RiskLimits(
        max_leverage_major=strategy.max_leverage_major,
        max_leverage_other=strategy.max_leverage_other,
        max_position_multiple=strategy.max_position_multiple,
        max_open_positions=strategy.max_open_positions,
        min_order_usd=strategy.min_order_usd,
        min_risk_reward=strategy.min_risk_reward,
    )


def _open(execution: Execution, adapter: ExchangeAdapter) -> Execution:
    """Open a position: plan and record the entry order on the first attempt, send it
    once, then protect what filled."""
    # The execution's symbol and action are its decision's, copied when it was requested.
    intent = open_intent(execution.decision)
    order_side = BUY if intent.side == LONG else SELL
    market = adapter.market(intent.symbol)
    first_attempt = execution.status == ExecutionStatus.PENDING
    if first_attempt:
        execution = _submit_entry(execution, adapter, intent, market, order_side)
    entry = _send_recorded(adapter, execution, side=order_side, fresh=first_attempt)
    return _protect(_record_fill(execution, entry), adapter, intent, market, entry.result)


def _submit_entry(
    execution: Execution,
    adapter: ExchangeAdapter,
    intent: OpenIntent,
    market: MarketRules,
    order_side: str,
) -> Execution:
    """Plan the entry order within the strategy's risk limits, set the leverage, and
    record the order with the execution moved to submitted."""
    plan = plan_open(
        intent,
        price=adapter.price(intent.symbol),
        funds=adapter.balance(),
        market=market,
        limits=strategy_risk_limits(execution.decision.debate.strategy),
        open_positions=[(p.symbol, p.side) for p in adapter.positions()],
    )
    adapter.set_leverage(intent.symbol, plan.leverage)
    return _mark_submitted(
        execution,
        Order(
            trader_id=execution.trader_id,
            execution=execution,
            client_order_id=execution.client_order_id,
            symbol=intent.symbol,
            side=order_side,
            type=OrderType.MARKET,
            quantity=plan.quantity,
        ),
        leverage=plan.leverage,
        requested_quantity=plan.quantity,
        stop_loss_price=plan.stop_loss_price,
        take_profit_price=plan.take_profit_price,
        adjustments=[a.to_dict() for a in plan.adjustments],
    )


def _protect(
    execution: Execution,
    adapter: ExchangeAdapter,
    intent: OpenIntent,
    market: MarketRules,
    entry: OrderResult,
) -> Execution:
    """Place the stop loss and take profit of the filled entry, priced from its average
    fill, and fill the execution; without a stop loss, close the position again."""
    close_side = SELL if intent.side == LONG else BUY
    filled = entry.filled
    try:
        sl_price, tp_price = protective_prices(
            intent.side,
            entry.average_price or Decimal("0"),
            intent.stop_loss,
            intent.take_profit,
            market.price_tick,
        )
    except RiskRefused as exc:
        return _unwind(execution, adapter, close_side, filled, reason=exc.message)
    Execution.objects.filter(pk=execution.pk).update(
        stop_loss_price=sl_price, take_profit_price=tp_price
    )
    try:
        stop = _protective_order(adapter, execution, STOP_LOSS, close_side, filled, sl_price)
    except OrderRejected as exc:
        return _unwind(execution, adapter, close_side, filled, reason=str(exc))
    note = ""
    target_id = ""
    try:
        target = _protective_order(adapter, execution, TAKE_PROFIT, close_side, filled, tp_price)
        target_id = target.result.order_id
    except OrderRejected as exc:
        note = f"The take profit could not be placed (the stop loss protects the position): {exc}"
    return _finish(
        execution,
        ExecutionStatus.FILLED,
        error=note,
        stop_loss_price=sl_price,
        take_profit_price=tp_price,
        stop_loss_order_id=stop.result.order_id,
        take_profit_order_id=target_id,
    )


# The client order id suffix and the order type of each protective order.
PROTECTIVE_ORDERS = {
    STOP_LOSS: (STOP_SUFFIX, OrderType.STOP_MARKET),
    TAKE_PROFIT: (TARGET_SUFFIX, OrderType.TAKE_PROFIT_MARKET),
}


def _protective_order(
    adapter: ExchangeAdapter,
    execution: Execution,
    kind: str,
    side: str,
    quantity: Decimal,
    trigger_price: Decimal,
) -> _Sent:
    """Send, once, the reduce-only stop loss or take profit (``kind``) of an execution."""
    suffix, order_type = PROTECTIVE_ORDERS[kind]
    return _send(
        adapter,
        execution,
        client_id=execution.client_order_id + suffix,
        order=dict(type=order_type, side=side, quantity=quantity),
        trigger_price=trigger_price,
        send=lambda order: adapter.protective_order(
            execution.symbol,
            side,
            order.quantity,
            kind=kind,
            trigger_price=order.trigger_price,
            client_order_id=order.client_order_id,
        ),
    )


def _unwind(
    execution: Execution, adapter: ExchangeAdapter, side: str, quantity: Decimal, *, reason: str
) -> Execution:
    """Close a position whose stop loss could not be placed, then fail the execution."""
    try:
        closing = _send(
            adapter,
            execution,
            client_id=execution.client_order_id + UNWIND_SUFFIX,
            order=dict(type=OrderType.MARKET, side=side, quantity=quantity, reduce_only=True),
            send=lambda order: adapter.market_order(
                execution.symbol,
                side,
                order.quantity,
                client_order_id=order.client_order_id,
                reduce_only=True,
            ),
        )
    except OrderRejected as exc:
        return _finish(
            execution,
            ExecutionStatus.FAILED,
            error=f"The stop loss could not be placed ({reason}) and closing the position "
            f"failed too ({exc}): the position is OPEN WITHOUT A STOP, close it by hand.",
        )
    return _finish(
        execution,
        ExecutionStatus.FAILED,
        error=f"The stop loss could not be placed ({reason}); the position was closed again "
        f"at {closing.result.average_price}.",
    )


def _close(execution: Execution, adapter: ExchangeAdapter) -> Execution:
    symbol = execution.symbol
    side = LONG if execution.action == "close_long" else SHORT
    order_side = SELL if side == LONG else BUY
    first_attempt = execution.status == ExecutionStatus.PENDING
    if first_attempt:
        held = next((p for p in adapter.positions() if p.symbol == symbol and p.side == side), None)
        if held is None:
            return _finish(
                execution,
                ExecutionStatus.FAILED,
                error=f"There is no open {side} {symbol} position to close.",
            )
        execution = _mark_submitted(
            execution,
            Order(
                trader_id=execution.trader_id,
                execution=execution,
                client_order_id=execution.client_order_id,
                symbol=symbol,
                side=order_side,
                type=OrderType.MARKET,
                reduce_only=True,
                quantity=held.quantity,
            ),
            requested_quantity=held.quantity,
        )
    closing = _send_recorded(
        adapter, execution, side=order_side, fresh=first_attempt, reduce_only=True
    )
    execution = _record_fill(execution, closing)
    _cancel_resting(execution, adapter, side=order_side)
    return _finish(execution, ExecutionStatus.FILLED)


def _cancel_resting(execution: Execution, adapter: ExchangeAdapter, *, side: str) -> None:
    """Cancel the stop and target orders (``side``: sell for a long) of a closed position."""
    resting = Order.objects.filter(
        trader_id=execution.trader_id,
        symbol=execution.symbol,
        side=side,
        status=OrderStatus.OPEN,
        type__in=(OrderType.STOP_MARKET, OrderType.TAKE_PROFIT_MARKET),
    )
    for order in resting:
        try:
            adapter.cancel_order(order.symbol, order.client_order_id, conditional=True)
        except OrderNotFound:
            pass
        except ExchangeError as exc:
            logger.warning("could not cancel order %s: %s", order.client_order_id, exc)
            continue
        Order.objects.filter(pk=order.pk, status=OrderStatus.OPEN).update(
            status=OrderStatus.CANCELED, updated_at=timezone.now()
        )


# -- orders --------------------------------------------------------------------------


def _send_recorded(
    adapter: ExchangeAdapter,
    execution: Execution,
    *,
    side: str,
    fresh: bool,
    reduce_only: bool = False,
) -> _Sent:
    """Send, once, the market order recorded when the execution was submitted (the
    entry of an opening, or the closing order); ``fresh`` when that was this attempt."""
    return _send(
        adapter,
        execution,
        client_id=execution.client_order_id,
        fresh=fresh,
        send=lambda order: adapter.market_order(
            execution.symbol,
            side,
            order.quantity,
            client_order_id=order.client_order_id,
            reduce_only=reduce_only,
        ),
    )


def _send(
    adapter: ExchangeAdapter,
    execution: Execution,
    *,
    client_id: str,
    send: Callable[[Order], OrderResult],
    order: dict[str, Any] | None = None,
    trigger_price: Decimal | None = None,
    fresh: bool = False,
) -> _Sent:
    """Send an order once: record it first, and look it up before ever sending it again.

    The entry order is recorded with the ``submitted`` state (``fresh`` when that was
    this attempt); later orders are recorded here from ``order`` (type, side, quantity,
    reduce_only) on first use. An order recorded by an earlier attempt may have reached
    the exchange with its answer lost: it is looked up by client order id first.
    """
    created = False
    if order is None:
        row = Order.objects.get(trader_id=execution.trader_id, client_order_id=client_id)
    else:
        row, created = Order.objects.get_or_create(
            trader_id=execution.trader_id,
            client_order_id=client_id,
            defaults={
                "execution": execution,
                "symbol": execution.symbol,
                "reduce_only": True,
                "trigger_price": trigger_price,
                **order,
            },
        )
    if row.status == OrderStatus.REJECTED:
        raise OrderRejected(row.error)
    if row.status != OrderStatus.NEW:
        return _Sent(row, OrderResult.stored(row))
    fresh = fresh or created
    conditional = row.type != OrderType.MARKET
    if not fresh:
        try:
            result = adapter.fetch_order(row.symbol, client_id, conditional=conditional)
        except OrderNotFound:
            pass
        else:
            return _Sent(_record_order(row, result), result)
    try:
        result = send(row)
    except OrderRejected as exc:
        Order.objects.filter(pk=row.pk).update(
            status=OrderStatus.REJECTED, error=str(exc), updated_at=timezone.now()
        )
        raise
    return _Sent(_record_order(row, result), result)


def _record_order(row: Order, result: OrderResult) -> Order:
    if result.status == "rejected":
        Order.objects.filter(pk=row.pk).update(
            status=OrderStatus.REJECTED, error="rejected by the exchange"
        )
        raise OrderRejected(f"order {row.client_order_id} was rejected by the exchange")
    status = {
        "filled": OrderStatus.FILLED,
        "open": OrderStatus.OPEN,
        "canceled": OrderStatus.CANCELED,
    }[result.status]
    if row.type == OrderType.MARKET and result.filled <= 0:
        if status == OrderStatus.CANCELED:
            Order.objects.filter(pk=row.pk).update(
                status=OrderStatus.REJECTED, error="canceled by the exchange without a fill"
            )
            raise OrderRejected(f"market order {row.client_order_id} was canceled unfilled")
        # Accepted, not filled yet: the next attempt looks it up again.
        raise ExchangeUnavailable(f"market order {row.client_order_id} is not filled yet")
    row.exchange_order_id = result.order_id[:64]
    row.status = status
    row.filled_quantity = result.filled
    row.average_price = result.average_price
    row.fee = result.fee
    row.save(
        update_fields=[
            "exchange_order_id",
            "status",
            "filled_quantity",
            "average_price",
            "fee",
            "updated_at",
        ]
    )
    return row


# -- execution state -----------------------------------------------------------------


def _mark_submitted(execution: Execution, entry: Order, **fields: Any) -> Execution:
    """Move a pending execution to submitted and record its entry order, in one commit."""
    with transaction.atomic():
        moved = Execution.objects.filter(pk=execution.pk, status=ExecutionStatus.PENDING).update(
            status=ExecutionStatus.SUBMITTED, updated_at=timezone.now(), **fields
        )
        if not moved:
            raise ExecutionBusy(f"execution {execution.pk} left pending meanwhile")
        entry.save()
        fresh = _load(execution.pk)
        events.execution_changed(fresh)
    return fresh


def _record_fill(execution: Execution, sent: _Sent) -> Execution:
    result = sent.result
    Execution.objects.filter(pk=execution.pk).update(
        exchange_order_id=result.order_id[:64],
        filled_quantity=result.filled,
        average_price=result.average_price,
        fee=result.fee,
        updated_at=timezone.now(),
    )
    return _load(execution.pk)


def _finish(execution: Execution, status: str, *, error: str = "", **fields: Any) -> Execution:
    """Move an unfinished execution to ``status`` (filled or failed) and announce it."""
    with transaction.atomic():
        moved = Execution.objects.filter(pk=execution.pk, status__in=UNFINISHED_STATUSES).update(
            status=status, error=error[:4000], updated_at=timezone.now(), **fields
        )
        fresh = _load(execution.pk)
        if moved:
            events.execution_changed(fresh)
    return fresh
