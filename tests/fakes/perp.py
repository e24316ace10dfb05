"""The account behind the Bybit and OKX fakes: USDT margin, perpetual positions per coin
and position side, market fills at the venue's price, and conditional orders that trigger
when the price crosses them.

An account is in one-way mode (every coin has one ``net`` position, an order the other
way reduces it) or in hedge mode (``long`` and ``short`` positions apart; an order names
the side it acts on, and closes that side when it goes the other way). ``plan`` says what
an order would do, or why the venue refuses it (``NOTHING_TO_REDUCE``: a closing or
reduce-only order with no position to reduce; ``WOULD_INCREASE``: a reduce-only order
that would open); ``fill`` applies it at a price, charging the taker fee. The venue keeps
the quantities in contracts of ``contract_size`` coins and turns refusals into its own
codes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from tests.fakes.venue import Position, open_funds

NET = "net"
LONG = "long"
SHORT = "short"
NOTHING_TO_REDUCE = "nothing to reduce"
WOULD_INCREASE = "would increase the position"


@dataclass(frozen=True)
class Plan:
    """What an order does: ``signed`` contracts on the position ``key`` (symbol, side);
    ``opens`` when any of it opens or adds to a position (which needs margin)."""

    key: tuple[str, str]
    signed: Decimal
    quantity: Decimal
    opens: bool


class PerpAccount:
    """One USDT-margined account: wallet, leverage per coin, positions, taker fee."""

    def __init__(
        self,
        *,
        price: Callable[[str], Decimal],
        contract_size: Callable[[str], Decimal],
        wallet: Decimal = Decimal("10000"),
        fee_rate: Decimal = Decimal("0.0005"),
        default_leverage: int = 10,
    ) -> None:
        self.price = price
        self.contract_size = contract_size
        self.wallet = wallet
        self.fee_rate = fee_rate
        self.default_leverage = default_leverage
        self.leverage: dict[str, int] = {}
        self.hedge_mode = False
        self.positions: dict[tuple[str, str], Position] = {}

    def leverage_of(self, symbol: str) -> int:
        """Return the leverage set for ``symbol``."""
        return self.leverage.get(symbol, self.default_leverage)

    def funds(self) -> tuple[Decimal, Decimal, Decimal]:
        """Return (wallet balance, unrealised profit, initial margin of the positions)."""
        unrealized, margin = open_funds(
            ((symbol, position) for (symbol, _), position in self.positions.items()),
            self.price,
            self.leverage_of,
            self.contract_size,
        )
        return self.wallet, unrealized, margin

    def available(self) -> Decimal:
        """Return the margin available for new positions."""
        wallet, unrealized, margin = self.funds()
        return wallet + unrealized - margin

    def plan(
        self, symbol: str, side: str, quantity: Decimal, *, position_side: str, reduce_only: bool
    ) -> Plan | str:
        """Return what a market order of ``quantity`` contracts on ``side`` (buy or sell) of
        ``position_side`` (``net`` in one-way mode) does, or the reason it cannot."""
        buy = side == "buy"
        held = self.positions.get((symbol, position_side), Position()).amount
        if position_side == NET:
            against = held != 0 and (held > 0) != buy
            if reduce_only and held == 0:
                return NOTHING_TO_REDUCE
            if reduce_only and not against:
                return WOULD_INCREASE
            if reduce_only:
                quantity = min(quantity, abs(held))
            opens = not against or quantity > abs(held)
        else:
            closes = (position_side == LONG) != buy
            if closes and held == 0:
                return NOTHING_TO_REDUCE
            if reduce_only and not closes:
                return WOULD_INCREASE
            if closes:
                quantity = min(quantity, abs(held))
            opens = not closes
        return Plan((symbol, position_side), quantity if buy else -quantity, quantity, opens)

    def margin_needed(self, symbol: str, quantity: Decimal, price: Decimal) -> Decimal:
        """Return the initial margin and fee an opening of ``quantity`` contracts needs."""
        notional = quantity * self.contract_size(symbol) * price
        return notional / self.leverage_of(symbol) + notional * self.fee_rate

    def fill(self, plan: Plan, price: Decimal) -> tuple[Decimal, Decimal]:
        """Apply ``plan`` at ``price``; return (realised profit, fee), both settled."""
        symbol = plan.key[0]
        size = self.contract_size(symbol)
        position = self.positions.setdefault(plan.key, Position())
        realized = position.fill(plan.signed, price, size)
        fee = plan.quantity * size * price * self.fee_rate
        self.wallet += realized - fee
        return realized, fee


def crossed(trigger: Decimal, price: Decimal, *, rising: bool) -> bool:
    """Say whether ``price`` has reached a trigger waiting for the price to rise (or fall)."""
    return price >= trigger if rising else price <= trigger


def text(value: Decimal) -> str:
    """Return ``value`` as the venues write numbers: plain digits, no exponent."""
    normal = value.normalize()
    return format(normal, "f") if normal != 0 else "0"


def fields(names: str, value: Any) -> dict[str, Any]:
    """Return the fields named in ``names`` (space-separated), each set to ``value``: the
    many fields a venue's answer carries that the fake leaves as they are at rest."""
    return dict.fromkeys(names.split(), value)
