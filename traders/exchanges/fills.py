"""Fill arithmetic of the paper exchange: fees, profit and loss, stop and target crossings.

Pure functions on ``Decimal`` (no Django). Money is rounded half-up to 8 decimal places,
the precision of every money column, so what is computed is exactly what is stored.

A candle crosses a long position's stop when its low reaches the stop price, and its
target when its high reaches the target price (mirrored for a short). A candle that
crosses both fills the stop: the candle does not say which came first, and assuming the
loss is the conservative reading.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from traders.exchanges.base import Fill

MONEY_QUANTUM = Decimal("0.00000001")
PRICE_QUANTUM = Decimal("0.0000000001")
STOP_LOSS = "stop_loss"
TAKE_PROFIT = "take_profit"


def money(value: Decimal) -> Decimal:
    """Return ``value`` rounded half-up to 8 decimal places."""
    return value.quantize(MONEY_QUANTUM, rounding=ROUND_HALF_UP)


def fill_fee(price: Decimal, quantity: Decimal, fee_rate: Decimal) -> Decimal:
    """Return the fee of filling ``quantity`` at ``price``."""
    return money(price * quantity * fee_rate)


def realized_pnl(side: str, entry: Decimal, exit_price: Decimal, quantity: Decimal) -> Decimal:
    """Return the price gain (negative: loss) of closing ``quantity`` of a ``side`` position."""
    change = exit_price - entry if side == "long" else entry - exit_price
    return money(change * quantity)


def crossing(
    side: str,
    stop: Decimal | None,
    target: Decimal | None,
    low: Decimal,
    high: Decimal,
) -> tuple[str, Decimal] | None:
    """Return (``stop_loss`` or ``take_profit``, fill price) if a candle crosses one, else None.

    The stop is checked first, so a candle crossing both fills the stop (conservative).
    """
    if side == "long":
        if stop is not None and low <= stop:
            return STOP_LOSS, stop
        if target is not None and high >= target:
            return TAKE_PROFIT, target
        return None
    if stop is not None and high >= stop:
        return STOP_LOSS, stop
    if target is not None and low <= target:
        return TAKE_PROFIT, target
    return None


@dataclass(frozen=True)
class Exit:
    """How a position left the account: the average price of the trades that closed it,
    the quantity they closed, their fees, and the instant (ms) of the last."""

    price: Decimal
    quantity: Decimal
    fee: Decimal
    at_ms: int


def closing_exit(
    fills: Sequence[Fill],
    *,
    side: str,
    quantity: Decimal,
    after_ms: int = 0,
    skip: Collection[str] = (),
) -> Exit | None:
    """Return the exit of ``quantity`` closed by the account's latest ``side`` trades
    (``fills`` oldest first) made at or after ``after_ms``, leaving out the trades of the
    orders in ``skip``; None when no such trade exists."""
    taken = cost = fee = Decimal("0")
    last = 0
    for fill in reversed(fills):
        if fill.side != side or fill.at_ms < after_ms or fill.order_id in skip:
            continue
        if fill.quantity <= 0:
            continue
        part = min(fill.quantity, quantity - taken)
        cost += part * fill.price
        fee += fill.fee * part / fill.quantity
        taken += part
        last = max(last, fill.at_ms)
        if taken >= quantity:
            break
    if taken <= 0:
        return None
    price = (cost / taken).quantize(PRICE_QUANTUM, rounding=ROUND_HALF_UP)
    return Exit(price=price, quantity=taken, fee=money(fee), at_ms=last)
