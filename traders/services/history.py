"""The lines of a trader's history that reconciliation writes, and what one pass of it
carries from step to step (``traders.services.reconcile``)."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from django.db import transaction

from traders import events
from traders.exchanges.base import BUY, SELL, ExchangeAdapter, ExchangePosition, RestingOrder
from traders.models import HistoryEntry, Position, Trader
from traders.risk import LONG

logger = logging.getLogger(__name__)

Key = tuple[str, str]  # (coin, side)


@dataclass
class Pass:
    """What one pass read of the exchange, and the lines it wrote."""

    trader: Trader
    adapter: ExchangeAdapter
    held: dict[Key, ExchangePosition]
    resting: dict[str, list[RestingOrder]]
    lines: list[HistoryEntry]


def note(
    run: Pass, kind: str, message: str, *, symbol: str = "", position: Position | None = None
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


def closing_side(side: str) -> str:
    return SELL if side == LONG else BUY
