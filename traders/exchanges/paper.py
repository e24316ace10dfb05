"""The paper exchange: simulated fills, with the account kept in the database.

A paper trader's account is its ``Trader`` row (``balance`` is the wallet balance:
starting balance plus realised profit and loss minus fees), its ``Position`` rows and
its ``Order`` rows. The order book is the ``Order`` table: an order is on the paper
exchange once its status is no longer ``new``, and a client order id is accepted once,
so a repeated send returns the first fill instead of trading twice.

Prices come from the trader's market source (``Trader.market_source``):

- ``dataset``: the bundled candles at the trader's paper clock (``Trader.replay_as_of``,
  ``DATASET_END`` before it is set): an order fills at the open of the first candle that
  opens at or after the clock (the dataset's ``fill_price``; at its end, the last close);
- ``live``: the current price of the live source (ccxt, Binance USDT-M by default).

Market orders fill at that price, with ``fee = price x quantity x fee_rate``. Margin is
notional / leverage (the leverage set for the coin, 1 by default); a position needs its
margin plus the fee to be available. Available balance = wallet + unrealised P&L - margin
of the open positions; equity = wallet + unrealised P&L. That arithmetic is
``traders.exchanges.book``, which backtests simulate their accounts with too. Positions
are kept per coin
and side (hedge mode): a reduce-only order closes the position on the other side of its
order side. Stop and take-profit orders rest until ``fill_trigger`` fills them (see
``traders.services.paper``, which walks the candles as the clock advances); closing a
position cancels its resting orders. Liquidation and funding are not simulated.

Every change to money happens under the trader's row lock, in one transaction.
"""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from strategies.market.dataset import DATASET_END
from strategies.market.exceptions import MarketDataError, SourceUnavailableError
from strategies.market.sources import MarketSource, source_for
from traders import locks
from traders.exchanges.base import (
    BUY,
    STOP_LOSS,
    TAKE_PROFIT,
    ExchangePosition,
    Fill,
    OrderNotFound,
    OrderRejected,
    OrderResult,
    RestingOrder,
)
from traders.exchanges.base import ExchangeUnavailable as Unavailable
from traders.exchanges.book import (
    PAPER_MARKET,
    FillRefused,
    check_resting,
    closing,
    funds,
    opening,
)
from traders.exchanges.fills import money
from traders.models import (
    Order,
    OrderStatus,
    OrderType,
    Position,
    PositionSide,
    PositionStatus,
    Trader,
)
from traders.risk import Funds, MarketRules

PROTECTIVE_TYPES = (OrderType.STOP_MARKET, OrderType.TAKE_PROFIT_MARKET)


def paper_source(trader: Trader) -> MarketSource:
    """Return the market source whose prices fill a paper trader's orders."""
    if trader.market_source == "live":
        return source_for("live", api_urls=settings.MARKET_LIVE_API_URL or None)
    return source_for("dataset")


def paper_now(trader: Trader) -> datetime:
    """Return the instant a paper trader's prices are taken at (its clock)."""
    if trader.market_source == "live":
        return timezone.now()
    return trader.replay_as_of or DATASET_END


def paper_price(trader: Trader, symbol: str) -> Decimal:
    """Return the price a paper trader's order in ``symbol`` fills at, at its clock."""
    try:
        value = paper_source(trader).fetch_fill_price(symbol, paper_now(trader))
    except SourceUnavailableError as exc:
        raise Unavailable(f"no price for {symbol}: {exc}") from exc
    except (MarketDataError, ValueError) as exc:
        raise OrderRejected(f"no price for {symbol}: {exc}") from exc
    return Decimal(str(value))


class _Rejected(Exception):
    """The paper exchange refuses an order; recorded on the order, then raised to the caller."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


def _position_side(order_side: str, reduce_only: bool) -> str:
    opens = PositionSide.LONG if order_side == BUY else PositionSide.SHORT
    if not reduce_only:
        return opens
    return PositionSide.SHORT if opens == PositionSide.LONG else PositionSide.LONG


class PaperExchange:
    """The paper exchange account of one trader."""

    name = "paper"

    def __init__(self, trader_id: int) -> None:
        self.trader_id = trader_id

    def _trader(self) -> Trader:
        return Trader.objects.get(pk=self.trader_id)

    # reads

    def market(self, symbol: str) -> MarketRules:
        """Return the paper market rules (one set for every coin)."""
        return PAPER_MARKET

    def price(self, symbol: str) -> Decimal:
        """Return the price of ``symbol`` at the trader's clock."""
        return paper_price(self._trader(), symbol)

    def balance(self) -> Funds:
        """Return available balance, equity and wallet balance, marked at current prices."""
        trader = self._trader()
        held = Position.objects.filter(trader=trader, status=PositionStatus.OPEN)
        return funds(trader.balance, held, lambda symbol: paper_price(trader, symbol))

    def positions(self) -> list[ExchangePosition]:
        """Return the trader's open positions."""
        return [
            ExchangePosition(
                symbol=p.symbol,
                side=p.side,
                quantity=p.quantity,
                entry_price=p.entry_price,
                leverage=p.leverage,
            )
            for p in Position.objects.filter(
                trader_id=self.trader_id, status=PositionStatus.OPEN
            ).order_by("pk")
        ]

    def resting_orders(self, symbol: str) -> list[RestingOrder]:
        """Return the stop and take-profit orders resting in ``symbol``."""
        resting = Order.objects.filter(
            trader_id=self.trader_id,
            symbol=symbol,
            status=OrderStatus.OPEN,
            type__in=PROTECTIVE_TYPES,
        ).order_by("pk")
        return [
            RestingOrder(
                symbol=symbol,
                client_order_id=order.client_order_id,
                side=order.side,
                kind=STOP_LOSS if order.type == OrderType.STOP_MARKET else TAKE_PROFIT,
                trigger_price=order.trigger_price,
                quantity=order.quantity,
            )
            for order in resting
        ]

    def fills(self, symbol: str) -> list[Fill]:
        """Return the filled orders in ``symbol``, oldest first, one fill each."""
        filled = Order.objects.filter(
            trader_id=self.trader_id, symbol=symbol, status=OrderStatus.FILLED
        ).order_by("updated_at", "pk")
        return [
            Fill(
                order_id=order.exchange_order_id,
                side=order.side,
                price=order.average_price or Decimal("0"),
                quantity=order.filled_quantity,
                fee=order.fee,
                at_ms=int(order.updated_at.timestamp() * 1000),
            )
            for order in filled
        ]

    def hedged(self, symbol: str) -> bool:
        """The paper account keeps positions per coin and side (hedge mode)."""
        return True

    def fetch_order(
        self, symbol: str, client_order_id: str, *, conditional: bool = False
    ) -> OrderResult:
        """Return the order sent with ``client_order_id``; an order never sent is not found."""
        order = Order.objects.filter(
            trader_id=self.trader_id, client_order_id=client_order_id
        ).first()
        if order is None or order.status == OrderStatus.NEW:
            raise OrderNotFound(f"no paper order {client_order_id}")
        return OrderResult.stored(order)

    # writes

    def set_leverage(self, symbol: str, leverage: int) -> None:
        """Remember the leverage of the next orders in ``symbol``."""
        with transaction.atomic():
            trader = locks.lock_trader(trader_id=self.trader_id)
            trader.symbol_leverage = {**trader.symbol_leverage, symbol: leverage}
            trader.save(update_fields=["symbol_leverage", "updated_at"])

    def market_order(
        self,
        symbol: str,
        side: str,
        quantity: Decimal,
        *,
        client_order_id: str,
        reduce_only: bool = False,
    ) -> OrderResult:
        """Fill a market order at the current price, with the fee; once per client order id."""
        with transaction.atomic():
            trader = locks.lock_trader(trader_id=self.trader_id)
            order = self._order(
                trader, client_order_id, symbol, side, OrderType.MARKET, quantity, reduce_only
            )
            if order.status != OrderStatus.NEW:
                return OrderResult.stored(order)
            try:
                return self._fill_market(trader, order)
            except _Rejected as exc:
                reason = self._record_rejection(order, exc)
        raise OrderRejected(reason)

    def _fill_market(self, trader: Trader, order: Order) -> OrderResult:
        price = paper_price(trader, order.symbol)
        position_side = _position_side(order.side, order.reduce_only)
        held = locks.lock_open_positions(trader_id=trader.pk, symbol=order.symbol)
        position = next((p for p in held if p.side == position_side), None)
        if order.reduce_only:
            if position is None:
                raise _Rejected(f"no open {position_side} {order.symbol} position to reduce")
            filled = min(order.quantity, position.quantity)
            fee = self._close(trader, position, price, filled, reason="decision")
        else:
            filled = order.quantity
            position, fee = self._open(trader, order, position, position_side, price)
        order.status = OrderStatus.FILLED
        order.filled_quantity = filled
        order.average_price = price
        order.fee = fee
        order.position = position
        order.save()
        return OrderResult.stored(order)

    def protective_order(
        self,
        symbol: str,
        side: str,
        quantity: Decimal,
        *,
        kind: str,
        trigger_price: Decimal,
        client_order_id: str,
    ) -> OrderResult:
        """Rest a reduce-only stop or take-profit order on the matching open position."""
        order_type = OrderType.STOP_MARKET if kind == STOP_LOSS else OrderType.TAKE_PROFIT_MARKET
        with transaction.atomic():
            trader = locks.lock_trader(trader_id=self.trader_id)
            order = self._order(trader, client_order_id, symbol, side, order_type, quantity, True)
            if order.status != OrderStatus.NEW:
                return OrderResult.stored(order)
            try:
                return self._rest(trader, order, kind, trigger_price)
            except _Rejected as exc:
                reason = self._record_rejection(order, exc)
        raise OrderRejected(reason)

    def _rest(self, trader: Trader, order: Order, kind: str, trigger_price: Decimal) -> OrderResult:
        position_side = _position_side(order.side, reduce_only=True)
        held = locks.lock_open_positions(trader_id=trader.pk, symbol=order.symbol)
        position = next((p for p in held if p.side == position_side), None)
        if position is None:
            raise _Rejected(f"no open {position_side} {order.symbol} position to protect")
        price = paper_price(trader, order.symbol)
        try:
            check_resting(
                kind=kind, position_side=position_side, trigger=trigger_price, price=price
            )
        except FillRefused as exc:
            raise _Rejected(exc.reason) from exc
        order.status = OrderStatus.OPEN
        order.trigger_price = trigger_price
        order.position = position
        order.save()
        field = "stop_loss_price" if kind == STOP_LOSS else "take_profit_price"
        Position.objects.filter(pk=position.pk).update(**{field: trigger_price})
        return OrderResult.stored(order)

    def cancel_order(
        self, symbol: str, client_order_id: str, *, conditional: bool = False
    ) -> OrderResult:
        """Cancel a resting order."""
        with transaction.atomic():
            locks.lock_trader(trader_id=self.trader_id)
            order = locks.lock_order_by_client_id(
                trader_id=self.trader_id, client_order_id=client_order_id
            )
            if order is None or order.status == OrderStatus.NEW:
                raise OrderNotFound(f"no paper order {client_order_id}")
            if order.status == OrderStatus.OPEN:
                order.status = OrderStatus.CANCELED
                order.save(update_fields=["status", "updated_at"])
            return OrderResult.stored(order)

    def fill_trigger(self, *, order_id: int, price: Decimal, at: datetime | None = None) -> bool:
        """Fill a resting stop or take-profit order at ``price``, closing its position at
        market instant ``at`` (the trader's clock when None).

        Return False (and change nothing) when the order no longer rests.
        """
        with transaction.atomic():
            trader = locks.lock_trader(trader_id=self.trader_id)
            order = Order.objects.select_for_update().filter(pk=order_id).first()
            if order is None or order.status != OrderStatus.OPEN or order.position_id is None:
                return False
            held = locks.lock_open_positions(trader_id=trader.pk, symbol=order.symbol)
            position = next((p for p in held if p.pk == order.position_id), None)
            if position is None:
                return False
            filled = min(order.quantity, position.quantity)
            reason = "stop_loss" if order.type == OrderType.STOP_MARKET else "take_profit"
            fee = self._close(trader, position, price, filled, reason=reason, at=at)
            order.status = OrderStatus.FILLED
            order.filled_quantity = filled
            order.average_price = price
            order.fee = fee
            order.save()
            return True

    # helpers (called with the trader locked)

    def _order(
        self,
        trader: Trader,
        client_order_id: str,
        symbol: str,
        side: str,
        order_type: str,
        quantity: Decimal,
        reduce_only: bool,
    ) -> Order:
        order = locks.lock_order_by_client_id(trader_id=trader.pk, client_order_id=client_order_id)
        if order is None:
            order = Order.objects.create(
                trader=trader,
                client_order_id=client_order_id,
                symbol=symbol,
                side=side,
                type=order_type,
                reduce_only=reduce_only,
                quantity=quantity,
            )
        if not order.exchange_order_id:
            order.exchange_order_id = f"paper-{order.pk}"
        return order

    def _record_rejection(self, order: Order, rejection: _Rejected) -> str:
        order.status = OrderStatus.REJECTED
        order.error = rejection.reason
        order.save()
        return rejection.reason

    def _open(
        self,
        trader: Trader,
        order: Order,
        position: Position | None,
        side: str,
        price: Decimal,
    ) -> tuple[Position, Decimal]:
        symbol = order.symbol
        quantity = order.quantity
        leverage = int(trader.symbol_leverage.get(symbol, 1))
        try:
            fill = opening(
                price=price,
                quantity=quantity,
                leverage=leverage,
                fee_rate=trader.fee_rate,
                available=self.balance().available or Decimal("0"),
            )
        except FillRefused as exc:
            raise _Rejected(exc.reason) from exc
        margin, fee = fill.margin, fill.fee
        if position is None:
            position = Position.objects.create(
                trader=trader,
                symbol=symbol,
                side=side,
                quantity=quantity,
                entry_price=price,
                leverage=leverage,
                margin=margin,
                fees=fee,
                opened_at=paper_now(trader),
            )
        else:
            total = position.quantity + quantity
            entry = (position.entry_price * position.quantity + price * quantity) / total
            Position.objects.filter(pk=position.pk).update(
                quantity=total,
                entry_price=entry.quantize(PAPER_MARKET.price_tick),
                margin=F("margin") + margin,
                fees=F("fees") + fee,
            )
        Trader.objects.filter(pk=trader.pk).update(balance=F("balance") - fee)
        return position, fee

    def _close(
        self,
        trader: Trader,
        position: Position,
        price: Decimal,
        quantity: Decimal,
        *,
        reason: str,
        at: datetime | None = None,
    ) -> Decimal:
        fill = closing(
            side=position.side,
            entry=position.entry_price,
            price=price,
            quantity=quantity,
            fee_rate=trader.fee_rate,
        )
        pnl, fee = fill.pnl, fill.fee
        if quantity >= position.quantity:
            Position.objects.filter(pk=position.pk).update(
                status=PositionStatus.CLOSED,
                close_price=price,
                close_reason=reason,
                realized_pnl=F("realized_pnl") + pnl,
                fees=F("fees") + fee,
                closed_at=at or paper_now(trader),
            )
            resting = Order.objects.filter(position=position, status=OrderStatus.OPEN)
            locks.lock_orders(trader_id=trader.pk, pks=list(resting.values_list("pk", flat=True)))
            resting.update(status=OrderStatus.CANCELED, updated_at=timezone.now())
        else:
            share = quantity / position.quantity
            Position.objects.filter(pk=position.pk).update(
                quantity=F("quantity") - quantity,
                margin=F("margin") - money(position.margin * share),
                realized_pnl=F("realized_pnl") + pnl,
                fees=F("fees") + fee,
            )
        Trader.objects.filter(pk=trader.pk).update(balance=F("balance") + pnl - fee)
        return fee
