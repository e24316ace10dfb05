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
import logging
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import F, Q
from django.utils import timezone

from arena.heartbeat import heartbeat
from arena.queries import owned_by, owned_or_404
from traders.exceptions import ReconcileBusy
from traders.exchanges import exchange_for
from traders.exchanges.base import (
    BUY,
    SELL,
    ExchangeAdapter,
    ExchangePosition,
    OrderNotFound,
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
from traders.services.history import Key, Pass, closing_side, note
from traders.services.unprotected import protect

logger = logging.getLogger(__name__)

PROTECTIVE = (OrderType.STOP_MARKET, OrderType.TAKE_PROFIT_MARKET)
REASON_BY_TYPE = {OrderType.STOP_MARKET: "stop_loss", OrderType.TAKE_PROFIT_MARKET: "take_profit"}
# How long a pass's hold on its trader outlives a worker that died; a live pass renews it.
LEASE = timedelta(seconds=40)


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
    run, local = _read(trader, adapter)
    for key, position in local.items():
        if key in run.held:
            _changed(run, position, run.held[key])
        else:
            _closed(run, position)
    for key, found in run.held.items():
        if key not in local:
            _recorded(run, found)
    _orphans_cancelled(run)
    for key in run.held:
        protect(run, key)
    return run.lines


def _read(trader: Trader, adapter: ExchangeAdapter) -> tuple[Pass, dict[Key, Position]]:
    """Read the exchange's positions and resting orders and the book's open positions,
    leaving out the coins with an execution in flight (step 1)."""
    in_flight = Execution.objects.filter(trader=trader, status__in=UNFINISHED_STATUSES)
    busy = set(in_flight.values_list("symbol", flat=True))
    held = {(p.symbol, p.side): p for p in adapter.positions() if p.symbol not in busy}
    opened = Position.objects.filter(trader=trader, status=PositionStatus.OPEN)
    local = {(p.symbol, p.side): p for p in opened if p.symbol not in busy}
    resting = Order.objects.filter(trader=trader, status=OrderStatus.OPEN, type__in=PROTECTIVE)
    symbols = {s for s, _ in [*held, *local]} | set(resting.values_list("symbol", flat=True))
    run = Pass(trader, adapter, held, {}, [])
    for symbol in sorted(symbols - busy):
        run.resting[symbol] = adapter.resting_orders(symbol)
        _refresh_left(run, symbol)
    return run, local


# -- 1. the orders that left the exchange ------------------------------------------------


def _refresh_left(run: Pass, symbol: str) -> None:
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


def _closed(run: Pass, position: Position) -> None:
    """Record ``position``, gone from the exchange, as closed: why, and at what price."""
    side = closing_side(position.side)
    ours = Order.objects.filter(trader=run.trader, symbol=position.symbol)
    fills = run.adapter.fills(position.symbol)
    entries = ours.filter(reduce_only=False, type=OrderType.MARKET)
    entry_ids = set(entries.values_list("exchange_order_id", flat=True)) - {""}
    entry_ms = max(
        (f.at_ms for f in fills if f.order_id in entry_ids and f.side != side), default=0
    )
    done = closing_exit(
        fills, side=side, quantity=position.quantity, after_ms=entry_ms, skip=entry_ids
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
        note(
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
    protective = mine.filter(type__in=PROTECTIVE).order_by("-updated_at").first()
    return REASON_BY_TYPE[protective.type] if protective else "exchange"


# -- 3. positions with no row yet ------------------------------------------------------


def _recorded(run: Pass, found: ExchangePosition) -> None:
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
                side=closing_side(found.side),
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
            note(run, kind, message, symbol=found.symbol, position=position)
    except IntegrityError:
        return  # another pass recorded it


def _changed(run: Pass, position: Position, found: ExchangePosition) -> None:
    """Follow a position whose size or entry changed on the exchange (reduced by hand,
    added to)."""
    if (found.quantity, found.entry_price) == (position.quantity, position.entry_price):
        return
    with transaction.atomic():
        if not Position.objects.filter(
            pk=position.pk, status=PositionStatus.OPEN, quantity=position.quantity
        ).update(quantity=found.quantity, entry_price=found.entry_price):
            return
        note(
            run,
            HistoryKind.POSITION_CHANGED,
            f"{position.symbol} {position.side} is {found.quantity.normalize():f} at "
            f"{found.entry_price.normalize():f} on the exchange (was "
            f"{position.quantity.normalize():f} at {position.entry_price.normalize():f})",
            symbol=position.symbol,
            position=position,
        )


# -- 4. orphan orders ------------------------------------------------------------------


def _orphans_cancelled(run: Pass) -> None:
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
                note(
                    run,
                    HistoryKind.ORDER_CANCELED,
                    f"{symbol} {found.kind.replace('_', ' ')} {order.client_order_id} cancelled: "
                    f"its {protects} position is gone",
                    symbol=symbol,
                    position=order.position,
                )
