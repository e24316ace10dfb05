"""The orders of an execution, each sent exactly once: the entry (or closing) market
order, then, for an opening, its reduce-only stop loss and take profit.

Every order is recorded before it is sent, with a client order id derived from the
decision's (``STOP_SUFFIX``, ``TARGET_SUFFIX`` and ``UNWIND_SUFFIX`` mark the orders that
follow the entry). Whatever was recorded as possibly sent is looked up by client order id
before being sent again, so a retry after a lost answer never trades twice. When the
stop loss cannot be placed, the position is closed again and the execution fails with
the reason; a take profit the exchange refuses is recorded on the execution, which still
fills: the position is protected by its stop.

Protective prices come from the entry's average fill price (the quoted price is only
used for sizing and the pre-trade checks), so the stop sits exactly ``stop_loss`` away
from where the position really opened.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.utils import timezone

from strategies.models import Strategy
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
from traders.models import Execution, ExecutionStatus, Order, OrderStatus, OrderType
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
from traders.services.execution_state import (
    execution_finish,
    execution_mark_submitted,
    execution_record_fill,
)

logger = logging.getLogger(__name__)

# Suffixes of the orders that follow the entry order of an execution.
STOP_SUFFIX, TARGET_SUFFIX, UNWIND_SUFFIX = "S", "T", "X"


@dataclass(frozen=True)
class _Sent:
    """An order as recorded, and the exchange's answer to it."""

    order: Order
    result: OrderResult


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


def position_open(execution: Execution, adapter: ExchangeAdapter) -> Execution:
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
    return _protect(
        execution_record_fill(execution, entry.result), adapter, intent, market, entry.result
    )


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
    return execution_mark_submitted(
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
    return execution_finish(
        execution,
        ExecutionStatus.FILLED,
        error=note,
        stop_loss_price=sl_price,
        take_profit_price=tp_price,
        stop_loss_order_id=stop.result.order_id,
        take_profit_order_id=target_id,
    )


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
    return send_once(
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
        closing = send_once(
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
        return execution_finish(
            execution,
            ExecutionStatus.FAILED,
            error=f"The stop loss could not be placed ({reason}) and closing the position "
            f"failed too ({exc}): the position is OPEN WITHOUT A STOP, close it by hand.",
        )
    return execution_finish(
        execution,
        ExecutionStatus.FAILED,
        error=f"The stop loss could not be placed ({reason}); the position was closed again "
        f"at {closing.result.average_price}.",
    )


def position_close(execution: Execution, adapter: ExchangeAdapter) -> Execution:
    """Close the open position the decision names: record the closing order on the first
    attempt, send it once, then cancel the position's resting stop and target."""
    symbol = execution.symbol
    side = LONG if execution.action == "close_long" else SHORT
    order_side = SELL if side == LONG else BUY
    first_attempt = execution.status == ExecutionStatus.PENDING
    if first_attempt:
        held = next((p for p in adapter.positions() if p.symbol == symbol and p.side == side), None)
        if held is None:
            return execution_finish(
                execution,
                ExecutionStatus.FAILED,
                error=f"There is no open {side} {symbol} position to close.",
            )
        execution = execution_mark_submitted(
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
    execution = execution_record_fill(execution, closing.result)
    _cancel_resting(execution, adapter, side=order_side)
    return execution_finish(execution, ExecutionStatus.FILLED)


CLOSE_FIRST_SUFFIX = "X"


def position_close_first(execution: Execution, adapter: ExchangeAdapter, *, side: str) -> str:
    """Close the ``side`` position held on the execution's coin before it opens the other
    side (its decision is an opening opposite to a held position): a reduce-only market
    order of the held quantity (client order id: the entry's plus ``X``), sent once and
    looked up before it is ever sent again; then cancel the position's resting stop and
    target. Return what was done, for the execution's note ("" when nothing was held)."""
    symbol = execution.symbol
    order_side = SELL if side == LONG else BUY
    client_id = execution.client_order_id + CLOSE_FIRST_SUFFIX
    recorded = Order.objects.filter(trader_id=execution.trader_id, client_order_id=client_id)
    held = next((p for p in adapter.positions() if p.symbol == symbol and p.side == side), None)
    if held is None and not recorded.exists():
        return ""
    closing = send_once(
        adapter,
        execution,
        client_id=client_id,
        order={"side": order_side, "type": OrderType.MARKET, "quantity": held.quantity}
        if held is not None
        else None,
        send=lambda order: adapter.market_order(
            symbol,
            order_side,
            order.quantity,
            client_order_id=order.client_order_id,
            reduce_only=True,
        ),
    )
    _cancel_resting(execution, adapter, side=order_side)
    result = closing.result
    price = "" if result.average_price is None else f" at {result.average_price.normalize():f}"
    return f"closed the {side} first: {result.filled.normalize():f}{price}"


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
    return send_once(
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


def send_once(
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
    """Record the exchange's answer on the order; raise for a refused order, or for a
    market order not filled yet (the next attempt looks it up again)."""
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
