"""The exchange adapter interface, its value types and its errors.

An adapter speaks for one trader's account on one exchange: USDT-margined perpetuals,
symbols in the normalised ``BTCUSDT`` form, quantities in contracts, money and prices
as ``Decimal``. Two implementations exist: ``paper`` (simulated fills kept in the
database) and ``ccxt_exchange`` (a real exchange through ccxt).

Errors are split by what the caller should do next: ``ExchangeUnavailable`` (transport
failures, timeouts, 429 and 5xx: retry later; the order may or may not have arrived),
``OrderRejected`` (the exchange answered no: terminal), ``OrderNotFound`` (a lookup by
client order id found nothing). Messages never carry credentials.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Protocol

from traders.risk import Funds, MarketRules

if TYPE_CHECKING:
    from traders.models import Order

BUY = "buy"
SELL = "sell"
STOP_LOSS = "stop_loss"
TAKE_PROFIT = "take_profit"


class ExchangeError(Exception):
    """Base of every adapter error; the message is safe to store and show."""


class ExchangeUnavailable(ExchangeError):
    """The exchange could not be reached or answered with a transient error: retry."""


class OrderRejected(ExchangeError):
    """The exchange refused the request; retrying the same request would not help."""


class AccessRefused(OrderRejected):
    """The exchange refused the account's key: wrong, expired, or without the rights
    the request needs."""


class OrderNotFound(ExchangeError):
    """No order with the given client order id exists on the exchange."""


@dataclass(frozen=True)
class ExchangePosition:
    """An open position: ``side`` is long or short, ``quantity`` in contracts (positive);
    ``liquidation_price`` where the venue gives one."""

    symbol: str
    side: str
    quantity: Decimal
    entry_price: Decimal
    leverage: int | None = None
    liquidation_price: Decimal | None = None


@dataclass(frozen=True)
class RestingOrder:
    """A conditional order resting on the exchange: ``kind`` is ``stop_loss`` or
    ``take_profit``, ``side`` the order's (sell protects a long)."""

    symbol: str
    client_order_id: str
    side: str
    kind: str
    trigger_price: Decimal | None
    quantity: Decimal


@dataclass(frozen=True)
class Fill:
    """One trade of the account: its order, side, price, quantity, fee (settlement
    currency) and instant (ms, the exchange's clock)."""

    order_id: str
    side: str
    price: Decimal
    quantity: Decimal
    fee: Decimal
    at_ms: int


@dataclass(frozen=True)
class OrderResult:
    """What the exchange says about one order.

    ``status``: ``filled``, ``open`` (resting, e.g. a stop order), ``canceled`` or
    ``rejected``. ``average_price`` is None until something fills; ``fee`` is in the
    settlement currency.
    """

    order_id: str
    client_order_id: str
    status: str
    filled: Decimal
    average_price: Decimal | None
    fee: Decimal

    @classmethod
    def stored(cls, order: Order) -> OrderResult:
        """Return what a stored order records of the exchange's answer."""
        return cls(
            order_id=order.exchange_order_id,
            client_order_id=order.client_order_id,
            status=order.status,
            filled=order.filled_quantity,
            average_price=order.average_price,
            fee=order.fee,
        )


class ExchangeAdapter(Protocol):
    """What execution needs from an exchange account."""

    name: str

    def market(self, symbol: str) -> MarketRules:
        """Return the amount step, price tick, minimum amount and contract size of a market."""
        ...

    def price(self, symbol: str) -> Decimal:
        """Return the current price of ``symbol``."""
        ...

    def balance(self) -> Funds:
        """Return available balance, total equity and wallet balance (USDT)."""
        ...

    def positions(self) -> list[ExchangePosition]:
        """Return every open position of the account."""
        ...

    def resting_orders(self, symbol: str) -> list[RestingOrder]:
        """Return the stop and take-profit orders resting in ``symbol``."""
        ...

    def fills(self, symbol: str) -> list[Fill]:
        """Return the account's recent trades in ``symbol``, oldest first."""
        ...

    def hedged(self, symbol: str) -> bool:
        """Say whether the account keeps a long and a short of ``symbol`` apart (hedge
        mode); in one-way mode an order the other way reduces the position."""
        ...

    def set_leverage(self, symbol: str, leverage: int) -> None:
        """Set the leverage used by the next orders in ``symbol``."""
        ...

    def market_order(
        self,
        symbol: str,
        side: str,
        quantity: Decimal,
        *,
        client_order_id: str,
        reduce_only: bool = False,
    ) -> OrderResult:
        """Send a market order carrying ``client_order_id``; return its fill."""
        ...

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
        """Place a reduce-only stop-market (``stop_loss``) or take-profit-market order."""
        ...

    def fetch_order(
        self, symbol: str, client_order_id: str, *, conditional: bool = False
    ) -> OrderResult:
        """Return the order sent with ``client_order_id``; raise ``OrderNotFound`` if none."""
        ...

    def cancel_order(
        self, symbol: str, client_order_id: str, *, conditional: bool = False
    ) -> OrderResult:
        """Cancel a resting order by client order id."""
        ...
