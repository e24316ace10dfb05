"""Row locks of the traders app: every ``select_for_update`` goes through these helpers.

Lock order, always: decision, then trader, then its positions, then its orders, each kind
in primary-key order. Taking locks in one order means two transactions never wait on
each other in a cycle. Call these inside ``transaction.atomic()``.
"""

from __future__ import annotations

from debates.models import Decision
from traders.models import Order, Position, PositionStatus, Trader


def lock_decision(*, debate_id: int, symbol: str | None) -> Decision | None:
    """Lock and return a debate's decision on ``symbol`` (the primary one when None)."""
    decisions = Decision.objects.select_for_update().filter(debate_id=debate_id)
    if symbol is None:
        return decisions.filter(is_primary=True).first()
    return decisions.filter(symbol=symbol).first()


def lock_trader(*, trader_id: int) -> Trader:
    """Lock and return a trader: the paper account's balance changes only under this lock."""
    return Trader.objects.select_for_update().get(pk=trader_id)


def lock_open_positions(*, trader_id: int, symbol: str | None = None) -> list[Position]:
    """Lock and return a trader's open positions (in one coin when given), by primary key."""
    positions = Position.objects.select_for_update().filter(
        trader_id=trader_id, status=PositionStatus.OPEN
    )
    if symbol is not None:
        positions = positions.filter(symbol=symbol)
    return list(positions.order_by("pk"))


def lock_orders(*, trader_id: int, pks: list[int]) -> list[Order]:
    """Lock and return some of a trader's orders, by primary key."""
    return list(
        Order.objects.select_for_update().filter(trader_id=trader_id, pk__in=pks).order_by("pk")
    )


def lock_order_by_client_id(*, trader_id: int, client_order_id: str) -> Order | None:
    """Lock and return the trader's order sent with ``client_order_id``, if any."""
    return (
        Order.objects.select_for_update()
        .filter(trader_id=trader_id, client_order_id=client_order_id)
        .first()
    )
