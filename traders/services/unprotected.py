"""Step 5 of reconciliation (``traders.services.reconcile``): a position this project
opened that rests on the exchange without a stop gets the stop its execution planned, or
is closed, as its strategy's ``unprotected`` setting says; a stop the exchange refuses
(one that would trigger at once) closes it too. Each order has a client order id of its
own, recorded before it is sent and looked up before it is ever sent again.
"""

from __future__ import annotations

import hashlib
import hmac
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from strategies.models import Unprotected
from traders.exchanges.base import STOP_LOSS, OrderRejected
from traders.exchanges.fills import realized_pnl
from traders.models import (
    Exchange,
    Execution,
    HistoryKind,
    Order,
    OrderStatus,
    OrderType,
    Position,
    PositionStatus,
)
from traders.services.history import Key, Pass, closing_side, note
from traders.services.orders import send_once


def protect(run: Pass, key: Key) -> None:
    """Give a position this app opened, resting without a stop, its planned stop, or
    close it (strategy setting ``unprotected``)."""
    symbol, side = key
    position = Position.objects.filter(
        trader=run.trader, symbol=symbol, side=side, status=PositionStatus.OPEN, foreign=False
    ).first()
    if position is None:
        return
    closing = closing_side(side)
    if any(o.side == closing and o.kind == STOP_LOSS for o in run.resting.get(symbol, ())):
        return
    execution = _opening_execution(position)
    if execution is None:
        return
    strategy = execution.decision.debate.strategy
    refused = ""
    if (strategy is None or strategy.unprotected == Unprotected.STOP) and execution.stop_loss_price:
        try:
            _stop_placed(run, position, execution, closing)
            return
        except OrderRejected as exc:
            refused = f" (its stop was refused: {exc})"
    _unprotected_closed(run, position, execution, closing, refused)


def _opening_execution(position: Position) -> Execution | None:
    entry = (
        position.orders.filter(type=OrderType.MARKET, reduce_only=False, execution__isnull=False)
        .select_related("execution__decision__debate__strategy")
        .order_by("-pk")
        .first()
    )
    return entry.execution if entry else None


def reconcile_client_id(position_id: int, kind: str, attempt: int) -> str:
    """Return the client order id of reconciliation's ``attempt``-th ``kind`` order (``s``:
    a stop, ``x``: a close) for a position: keyed with the deployment's secret key, at most
    32 characters of ``[A-Za-z0-9]``."""
    label = f"p{position_id}{kind}{attempt}"
    digest = hmac.new(settings.SECRET_KEY.encode(), label.encode(), hashlib.sha256).hexdigest()[:8]
    return f"arena{label}{digest}"


def _attempt(position: Position, kind: str) -> int:
    """Return the number of reconciliation's next ``kind`` order for ``position``: an
    order recorded and never answered is the same attempt, looked up before it is sent."""
    prefix = f"arenap{position.pk}{kind}"
    sent = Order.objects.filter(position=position, client_order_id__startswith=prefix)
    return sent.exclude(status=OrderStatus.NEW).count() + 1


def _stop_placed(run: Pass, position: Position, execution: Execution, side: str) -> None:
    price = execution.stop_loss_price
    sent = send_once(
        run.adapter,
        execution,
        client_id=reconcile_client_id(position.pk, "s", _attempt(position, "s")),
        order=dict(
            type=OrderType.STOP_MARKET, side=side, quantity=position.quantity, position=position
        ),
        trigger_price=price,
        send=lambda order: run.adapter.protective_order(
            position.symbol,
            side,
            order.quantity,
            kind=STOP_LOSS,
            trigger_price=order.trigger_price,
            client_order_id=order.client_order_id,
        ),
    )
    with transaction.atomic():
        Position.objects.filter(pk=position.pk).update(stop_loss_price=price)
        note(
            run,
            HistoryKind.STOP_PLACED,
            f"{position.symbol} {position.side} rested without a stop: stop placed at "
            f"{price.normalize():f} ({sent.order.client_order_id})",
            symbol=position.symbol,
            position=position,
        )


def _unprotected_closed(
    run: Pass, position: Position, execution: Execution, side: str, refused: str
) -> None:
    try:
        sent = send_once(
            run.adapter,
            execution,
            client_id=reconcile_client_id(position.pk, "x", _attempt(position, "x")),
            order=dict(
                type=OrderType.MARKET, side=side, quantity=position.quantity, position=position
            ),
            send=lambda order: run.adapter.market_order(
                position.symbol,
                side,
                order.quantity,
                client_order_id=order.client_order_id,
                reduce_only=True,
            ),
        )
    except OrderRejected as exc:
        note(
            run,
            HistoryKind.RECONCILE_FAILED,
            f"{position.symbol} {position.side} rests WITHOUT A STOP{refused}, and closing "
            f"it failed: {exc}",
            symbol=position.symbol,
            position=position,
        )
        return
    result = sent.result
    price = result.average_price or Decimal("0")
    pnl = realized_pnl(position.side, position.entry_price, price, result.filled)
    with transaction.atomic():
        if run.trader.exchange == Exchange.PAPER:
            # The paper exchange closed its own row with the fill.
            Position.objects.filter(pk=position.pk).update(close_reason="unprotected")
        else:
            Position.objects.filter(pk=position.pk, status=PositionStatus.OPEN).update(
                status=PositionStatus.CLOSED,
                close_price=price,
                close_reason="unprotected",
                realized_pnl=F("realized_pnl") + pnl,
                fees=F("fees") + result.fee,
                closed_at=timezone.now(),
            )
        note(
            run,
            HistoryKind.UNPROTECTED_CLOSED,
            f"{position.symbol} {position.side} rested without a stop{refused}: closed at "
            f"{price.normalize():f}",
            symbol=position.symbol,
            position=position,
        )
