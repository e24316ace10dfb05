"""Reconciling a trader's book with its exchange.

The exchange is the truth about what an account holds; this app's ``Position`` rows are
its book, kept by ``trader_reconcile``: at worker start, every ``RECONCILE_EVERY_S``
(beat) for every running exchange trader, after each execution on one, and on demand
(the API, the admin). One pass, under the trader's reconcile lease (renewed while it runs; a second
pass started meanwhile finds it taken and changes nothing):

1. reads the exchange: the open positions, and per coin the stop and target orders
   resting; this app's own resting orders that left the exchange are looked up and
   recorded as filled or cancelled;
2. records each position closed on the exchange (by its stop, its target, a
   liquidation or by hand) with its exit price, fees and P&L from the account's trades;
3. records each open position it has no row for: one its executions opened (an entry
   filled with no position yet), or one it did not open, flagged ``foreign``, shown and
   never traded;
4. cancels its own stop and target orders whose position is gone;
5. gives a position it opened that rests without a stop the stop its execution planned,
   or closes it (strategy setting ``unprotected``; a stop that would trigger at once
   closes it too).

Coins with an execution in flight are left to that execution. Every change is a line in
the trader's history, announced on its stream (``traders.events``). A paper trader
takes the same path over its own book, whose rows are its exchange's.
"""

from __future__ import annotations

import contextlib
import hashlib
import hmac
import logging
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from arena.heartbeat import heartbeat
from arena.queries import owned_by, owned_or_404
from strategies.models import Unprotected
from traders import events
from traders.exceptions import ReconcileBusy
from traders.exchanges import exchange_for
from traders.exchanges.base import (
    BUY,
    SELL,
    STOP_LOSS,
    ExchangeAdapter,
    ExchangePosition,
    OrderNotFound,
    OrderRejected,
    RestingOrder,
)
from traders.exchanges.fills import closing_exit, realized_pnl
from traders.models import (
    Exchange,
    Execution,
    HistoryEntry,
    HistoryKind,
    Order,
    OrderStatus,
    OrderType,
    Position,
    PositionStatus,
    Trader,
    TraderStatus,
)
from traders.risk import LONG, SHORT
from traders.services.execution_state import UNFINISHED_STATUSES
from traders.services.orders import send_once

logger = logging.getLogger(__name__)

PROTECTIVE = (OrderType.STOP_MARKET, OrderType.TAKE_PROFIT_MARKET)
REASON_BY_TYPE = {OrderType.STOP_MARKET: "stop_loss", OrderType.TAKE_PROFIT_MARKET: "take_profit"}
# How long a pass's hold on its trader outlives a worker that died; a live pass renews it.
LEASE = timedelta(seconds=40)
Key = tuple[str, str]  # (coin, side)


@dataclass
class _Pass:
    """What one pass read of the exchange, and the lines it wrote."""

    trader: Trader
    adapter: ExchangeAdapter
    held: dict[Key, ExchangePosition]
    resting: dict[str, list[RestingOrder]]
    lines: list[HistoryEntry]


def trader_reconcile(*, trader_id: int, owner: Any | None = None) -> list[HistoryEntry]:
    """Reconcile a trader's book with its exchange (see the module docstring); return the
    lines the pass wrote. Raise ``ReconcileBusy`` while another pass holds the trader."""
    trader = owned_or_404(owned_by(Trader.objects.all(), owner), trader_id, "Trader")
    if not _lease_take(trader_id):
        raise ReconcileBusy()

    def renew() -> None:
        until = timezone.now() + LEASE
        Trader.objects.filter(pk=trader_id).update(reconcile_lease_until=until)

    try:
        with heartbeat(renew, every_s=LEASE.total_seconds() / 4, name=f"reconcile-{trader_id}"):
            return _reconcile(trader, exchange_for(trader))
    finally:
        Trader.objects.filter(pk=trader_id).update(reconcile_lease_until=None)


def traders_reconcile_all() -> list[int]:
    """Return the ids of the running exchange traders, each to be reconciled (beat)."""
    return list(
        Trader.objects.filter(status=TraderStatus.RUNNING)
        .exclude(exchange=Exchange.PAPER)
        .order_by("pk")
        .values_list("pk", flat=True)
    )


def _lease_take(trader_id: int) -> bool:
    now = timezone.now()
    return bool(
        Trader.objects.filter(pk=trader_id)
        .filter(Q(reconcile_lease_until__isnull=True) | Q(reconcile_lease_until__lt=now))
        .update(reconcile_lease_until=now + LEASE)
    )


def _reconcile(trader: Trader, adapter: ExchangeAdapter) -> list[HistoryEntry]:
    busy = set(
        Execution.objects.filter(trader=trader, status__in=UNFINISHED_STATUSES).values_list(
            "symbol", flat=True
        )
    )
    held = {(p.symbol, p.side): p for p in adapter.positions() if p.symbol not in busy}
    local = {
        (p.symbol, p.side): p
        for p in Position.objects.filter(trader=trader, status=PositionStatus.OPEN)
        if p.symbol not in busy
    }
    ordered = Order.objects.filter(trader=trader, status=OrderStatus.OPEN, type__in=PROTECTIVE)
    symbols = (
        {s for s, _ in held} | {s for s, _ in local} | set(ordered.values_list("symbol", flat=True))
    )
    run = _Pass(trader, adapter, held, {}, [])
    for symbol in sorted(symbols - busy):
        run.resting[symbol] = adapter.resting_orders(symbol)
        _refresh_left(run, symbol)
    for key, position in local.items():
        if key in held:
            _changed(run, position, held[key])
        else:
            _closed(run, position)
    for key, found in held.items():
        if key not in local:
            _recorded(run, found)
    _orphans_cancelled(run)
    for key in held:
        _protected(run, key)
    return run.lines


def _note(
    run: _Pass, kind: str, message: str, *, symbol: str = "", position: Position | None = None
) -> None:
    """Write a line of the trader's history and announce it (inside the caller's
    transaction, when there is one)."""
    with transaction.atomic():
        entry = HistoryEntry.objects.create(
            trader=run.trader, kind=kind, symbol=symbol, message=message, position=position
        )
        events.history_added(entry)
    logger.info("trader %s: %s", run.trader.pk, message)
    run.lines.append(entry)


def _closing_side(side: str) -> str:
    return SELL if side == LONG else BUY


# -- 1. the orders that left the exchange ------------------------------------------------


def _refresh_left(run: _Pass, symbol: str) -> None:
    """Record the state of this app's resting orders in ``symbol`` that no longer rest
    on the exchange: filled (a stop or target that triggered) or cancelled."""
    resting = {order.client_order_id for order in run.resting[symbol]}
    left = Order.objects.filter(
        trader=run.trader, symbol=symbol, status=OrderStatus.OPEN, type__in=PROTECTIVE
    ).exclude(client_order_id__in=resting)
    for order in left:
        try:
            result = run.adapter.fetch_order(symbol, order.client_order_id, conditional=True)
        except OrderNotFound:
            status = OrderStatus.CANCELED
        else:
            if result.status == "open":
                continue
            status = OrderStatus.FILLED if result.status == "filled" else OrderStatus.CANCELED
        Order.objects.filter(pk=order.pk, status=OrderStatus.OPEN).update(
            status=status, updated_at=timezone.now()
        )


# -- 2. positions closed on the exchange ---------------------------------------------


def _closed(run: _Pass, position: Position) -> None:
    """Record ``position``, gone from the exchange, as closed: why, and at what price."""
    side = _closing_side(position.side)
    ours = Order.objects.filter(trader=run.trader, symbol=position.symbol)
    fills = run.adapter.fills(position.symbol)
    entry_ids = set(
        ours.filter(reduce_only=False, type=OrderType.MARKET).values_list(
            "exchange_order_id", flat=True
        )
    )
    entry_ms = max(
        (f.at_ms for f in fills if f.order_id in entry_ids and f.side != side), default=0
    )
    done = closing_exit(
        fills, side=side, quantity=position.quantity, after_ms=entry_ms, skip=entry_ids - {""}
    )
    reason = _close_reason(ours.filter(side=side), position)
    fields: dict[str, Any] = {"close_reason": reason, "closed_at": timezone.now()}
    how = "at a price the account's trades do not show"
    if done is not None:
        pnl = realized_pnl(position.side, position.entry_price, done.price, done.quantity)
        how = f"at {done.price.normalize():f}, P&L {pnl - done.fee:.2f} USDT after fees"
        fields.update(
            close_price=done.price,
            realized_pnl=F("realized_pnl") + pnl,
            fees=F("fees") + done.fee,
            closed_at=datetime.fromtimestamp(done.at_ms / 1000, tz=UTC),
        )
    with transaction.atomic():
        if not Position.objects.filter(pk=position.pk, status=PositionStatus.OPEN).update(
            status=PositionStatus.CLOSED, **fields
        ):
            return
        _note(
            run,
            HistoryKind.POSITION_CLOSED,
            f"{position.symbol} {position.side} closed on the exchange "
            f"({reason.replace('_', ' ')}) {how}",
            symbol=position.symbol,
            position=position,
        )


def _close_reason(closing: Any, position: Position) -> str:
    """Return why a position left the exchange: this app's closing order, its stop or
    target that filled, else ``exchange`` (a liquidation, or closed by hand)."""
    mine = closing.filter(status=OrderStatus.FILLED, updated_at__gte=position.opened_at)
    if mine.filter(type=OrderType.MARKET, reduce_only=True).exists():
        return "decision"
    for order in mine.filter(type__in=PROTECTIVE).order_by("-updated_at"):
        return REASON_BY_TYPE[order.type]
    return "exchange"


# -- 3. positions with no row yet ------------------------------------------------------


def _recorded(run: _Pass, found: ExchangePosition) -> None:
    """Record an open position this app has no row for: opened by one of its executions
    (an entry filled with no position yet), or flagged ``foreign``."""
    opening_side = BUY if found.side == LONG else SELL
    entries = Order.objects.filter(
        trader=run.trader,
        symbol=found.symbol,
        side=opening_side,
        type=OrderType.MARKET,
        reduce_only=False,
        status=OrderStatus.FILLED,
        position__isnull=True,
    )
    first = entries.order_by("created_at").first()
    leverage = found.leverage or 1
    try:
        with transaction.atomic():
            position = Position.objects.create(
                trader=run.trader,
                symbol=found.symbol,
                side=found.side,
                quantity=found.quantity,
                entry_price=found.entry_price,
                leverage=leverage,
                margin=(found.entry_price * found.quantity / leverage).quantize(
                    Decimal("0.00000001")
                ),
                foreign=first is None,
                opened_at=first.created_at if first else timezone.now(),
            )
            entries.update(position=position)
            Order.objects.filter(
                trader=run.trader,
                symbol=found.symbol,
                side=_closing_side(found.side),
                status=OrderStatus.OPEN,
                type__in=PROTECTIVE,
                position__isnull=True,
            ).update(position=position)
            what = (
                f"{found.symbol} {found.side} {found.quantity.normalize():f} "
                f"at {found.entry_price.normalize():f}"
            )
            if first is None:
                kind = HistoryKind.POSITION_FOREIGN
                message = f"{what} is open on the exchange, not opened here: shown, never traded"
            else:
                kind = HistoryKind.POSITION_RECORDED
                message = f"{what} recorded, opened by execution {first.execution_id}"
            _note(run, kind, message, symbol=found.symbol, position=position)
    except IntegrityError:
        return  # another pass recorded it


def _changed(run: _Pass, position: Position, found: ExchangePosition) -> None:
    """Follow a position whose size or entry changed on the exchange (reduced by hand,
    added to)."""
    if (found.quantity, found.entry_price) == (position.quantity, position.entry_price):
        return
    with transaction.atomic():
        if not Position.objects.filter(
            pk=position.pk, status=PositionStatus.OPEN, quantity=position.quantity
        ).update(quantity=found.quantity, entry_price=found.entry_price):
            return
        _note(
            run,
            HistoryKind.POSITION_CHANGED,
            f"{position.symbol} {position.side} is {found.quantity.normalize():f} at "
            f"{found.entry_price.normalize():f} on the exchange (was "
            f"{position.quantity.normalize():f} at {position.entry_price.normalize():f})",
            symbol=position.symbol,
            position=position,
        )


# -- 4. orphan orders ------------------------------------------------------------------


def _orphans_cancelled(run: _Pass) -> None:
    """Cancel this app's stop and target orders resting for a position that is gone."""
    for symbol, resting in run.resting.items():
        for found in resting:
            protects = LONG if found.side == SELL else SHORT
            if (symbol, protects) in run.held:
                continue
            order = Order.objects.filter(
                trader=run.trader, client_order_id=found.client_order_id
            ).first()
            if order is None:
                continue  # not ours: left alone
            with contextlib.suppress(OrderNotFound):
                run.adapter.cancel_order(symbol, order.client_order_id, conditional=True)
            with transaction.atomic():
                Order.objects.filter(pk=order.pk).exclude(status=OrderStatus.CANCELED).update(
                    status=OrderStatus.CANCELED, updated_at=timezone.now()
                )
                _note(
                    run,
                    HistoryKind.ORDER_CANCELED,
                    f"{symbol} {found.kind.replace('_', ' ')} {order.client_order_id} cancelled: "
                    f"its {protects} position is gone",
                    symbol=symbol,
                    position=order.position,
                )


# -- 5. unprotected positions ------------------------------------------------------------


def _protected(run: _Pass, key: Key) -> None:
    """Give a position this app opened, resting without a stop, its planned stop, or
    close it (strategy setting ``unprotected``)."""
    symbol, side = key
    position = Position.objects.filter(
        trader=run.trader, symbol=symbol, side=side, status=PositionStatus.OPEN, foreign=False
    ).first()
    if position is None:
        return
    closing = _closing_side(side)
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


def _stop_placed(run: _Pass, position: Position, execution: Execution, side: str) -> None:
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
        _note(
            run,
            HistoryKind.STOP_PLACED,
            f"{position.symbol} {position.side} rested without a stop: stop placed at "
            f"{price.normalize():f} ({sent.order.client_order_id})",
            symbol=position.symbol,
            position=position,
        )


def _unprotected_closed(
    run: _Pass, position: Position, execution: Execution, side: str, refused: str
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
        _note(
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
        _note(
            run,
            HistoryKind.UNPROTECTED_CLOSED,
            f"{position.symbol} {position.side} rested without a stop{refused}: closed at "
            f"{price.normalize():f}",
            symbol=position.symbol,
            position=position,
        )
