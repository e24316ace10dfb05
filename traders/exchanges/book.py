"""The money of a paper account: opening and closing fills, resting orders, funding, funds.

Pure functions on ``Decimal`` (no Django), shared by the paper exchange, whose account
lives in the database (``traders.exchanges.paper``), and the portfolio simulation of
backtests, whose account lives in memory (``backtests.engine.portfolio``): a backtest
fills, margins, charges and protects a position exactly as a paper trader does.

- Opening ``quantity`` at ``price`` with ``leverage`` needs its margin (notional /
  leverage) plus its fee (``fills.fill_fee``) to be available; the fee is paid from the
  wallet at once.
- Closing pays the price gain or loss (``fills.realized_pnl``) less the closing fee.
- A stop or take-profit order rests on the side of the price it protects: a long's stop
  below the price and its target above, a short's mirrored; one that would trigger at
  once is refused.
- Funds: equity = wallet + the open positions' unrealised gain at the marks; available
  = equity - their margin.
- Slippage (backtests; the paper exchange has none) moves a fill against the trader: a
  buy fills higher, a sell lower, by ``slippage_bps`` basis points.
- Funding (backtests; the paper exchange does not simulate it): at each funding time a
  position is open, a long pays ``quantity x mark x rate`` and a short receives it (a
  negative rate reverses both).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from decimal import ROUND_HALF_UP, Decimal
from typing import Protocol

from traders.exchanges.fills import STOP_LOSS, fill_fee, money, realized_pnl
from traders.risk import LONG, Funds, MarketRules

BUY, SELL = "buy", "sell"
BASIS_POINT = Decimal("0.0001")
# Paper markets accept any quantity to 6 decimals and any price to 8.
PAPER_MARKET = MarketRules(
    amount_step=Decimal("0.000001"),
    price_tick=Decimal("0.00000001"),
    min_amount=Decimal("0.000001"),
)


class FillRefused(Exception):
    """The account cannot take the order; ``reason`` says why, for people."""

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(reason)


class Held(Protocol):
    """What funds are computed from, of an open position (a ``Position`` row too)."""

    symbol: str
    side: str
    quantity: Decimal
    entry_price: Decimal
    margin: Decimal


@dataclass(frozen=True)
class Opening:
    """The margin an opening fill locks and the fee it pays."""

    margin: Decimal
    fee: Decimal


@dataclass(frozen=True)
class Closing:
    """The price gain (negative: loss) a closing fill realises and the fee it pays."""

    pnl: Decimal
    fee: Decimal


def opening(
    *, price: Decimal, quantity: Decimal, leverage: int, fee_rate: Decimal, available: Decimal
) -> Opening:
    """Return the margin and fee of opening ``quantity`` at ``price``; raise ``FillRefused``
    when they exceed ``available``."""
    margin = money(price * quantity / leverage)
    fee = fill_fee(price, quantity, fee_rate)
    if margin + fee > available:
        raise FillRefused(
            f"margin is insufficient: {margin} USDT of margin and {fee} of fee needed, "
            f"{money(available)} available"
        )
    return Opening(margin=margin, fee=fee)


def closing(
    *, side: str, entry: Decimal, price: Decimal, quantity: Decimal, fee_rate: Decimal
) -> Closing:
    """Return the gain and fee of closing ``quantity`` of a ``side`` position at ``price``."""
    return Closing(
        pnl=realized_pnl(side, entry, price, quantity), fee=fill_fee(price, quantity, fee_rate)
    )


def check_resting(*, kind: str, position_side: str, trigger: Decimal, price: Decimal) -> None:
    """Raise ``FillRefused`` unless a ``kind`` order (``stop_loss``, ``take_profit``) at
    ``trigger`` rests on its side of ``price`` for a ``position_side`` position."""
    rests_below = (kind == STOP_LOSS) == (position_side == LONG)
    if (trigger < price) != rests_below or trigger == price:
        raise FillRefused(f"{kind} at {trigger} would trigger at once (price {price})")


def funds(wallet: Decimal, held: Iterable[Held], mark: Callable[[str], Decimal]) -> Funds:
    """Return the available balance, equity and wallet of an account holding ``held``,
    each position marked at ``mark(symbol)``."""
    unrealized = Decimal("0")
    used = Decimal("0")
    for position in held:
        price = mark(position.symbol)
        unrealized += realized_pnl(position.side, position.entry_price, price, position.quantity)
        used += position.margin
    equity = wallet + unrealized
    return Funds(available=equity - used, equity=equity, wallet=wallet)


def slipped(price: Decimal, order_side: str, slippage_bps: Decimal) -> Decimal:
    """Return ``price`` moved against an order of ``order_side`` by ``slippage_bps``."""
    if not slippage_bps:
        return price
    shift = slippage_bps * BASIS_POINT
    moved = price * (1 + shift) if order_side == BUY else price * (1 - shift)
    return moved.quantize(PAPER_MARKET.price_tick, rounding=ROUND_HALF_UP)


def funding_payment(*, side: str, quantity: Decimal, mark: Decimal, rate: Decimal) -> Decimal:
    """Return what a ``side`` position receives (negative: pays) at a funding time."""
    paid = money(quantity * mark * rate)
    return -paid if side == LONG else paid
