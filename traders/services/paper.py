"""The paper clock: moving a paper trader through market time and filling its stops.

A paper trader's clock (``Trader.replay_as_of``) is the market instant it is at. On the
dataset, its prices are the dataset's at that instant; with live prices, the clock is
the last instant its stops were checked. ``paper_clock_advance`` moves the clock forward
and, on the way, walks the candles that closed after the old clock and by the new one,
oldest first, filling each resting stop or take-profit order whose price a candle's low
or high reached, at that order's price and with the fee (``traders.exchanges.fills``:
stop before target when one candle crosses both). The finest candles the source has are
used: 15m where they exist, then 1h, then 4h (the dataset's 15m candles start on
2024-08-05).

Executing a debate on a dataset paper trader brings the clock to the debate's instant
first (``paper_clock_meet``), so the order fills at the price of that instant: the open
of the first candle at or after it. The clock moves back only for an account holding no
open position (a flat account is just its balance, which no earlier instant
contradicts); an account holding positions at a later instant refuses to trade earlier
(``PaperClockAhead``). The periodic sweep only ever moves a clock forward.

``paper_check_stops`` is the periodic sweep (Celery beat, ``traders.paper_check_stops``):
live-priced paper traders advance to now; dataset traders advance to the latest replay
instant their completed debates reached.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from datetime import UTC, datetime
from decimal import Decimal

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from debates.models import Debate, DebateStatus
from strategies.market.dataset import DATASET_END
from strategies.market.exceptions import MarketDataError
from strategies.market.snapshot import TIMEFRAME_MS, Candle
from strategies.market.sources import MarketSource, to_ms
from traders import locks
from traders.exchanges.fills import crossing
from traders.exchanges.paper import PROTECTIVE_TYPES, PaperExchange, paper_source
from traders.models import (
    Exchange,
    Order,
    OrderStatus,
    OrderType,
    Position,
    PositionStatus,
    Trader,
)

logger = logging.getLogger(__name__)

SCAN_TIMEFRAMES: tuple[str, ...] = ("15m", "1h", "4h")
# The live source serves at most this many candles per request.
MAX_LIVE_CANDLES = 999


def candles_between(
    source: MarketSource, symbol: str, start: datetime, end: datetime
) -> list[Candle]:
    """Return the candles of ``symbol`` that closed after ``start`` and by ``end``, oldest first.

    Each stretch of time is covered by the finest timeframe that has candles for it.
    """
    start_ms, end_ms = to_ms(start), to_ms(end)
    chosen: list[Candle] = []
    covered_from = end_ms
    for timeframe in SCAN_TIMEFRAMES:
        step = TIMEFRAME_MS[timeframe]
        limit = (end_ms - start_ms) // step + 2
        if source.name == "live":
            limit = min(limit, MAX_LIVE_CANDLES)
        candles = source.fetch_candles(symbol, timeframe, limit, end, min_rows=0)
        fitting = [
            c for c in candles if c.open_time + step > start_ms and c.open_time + step <= end_ms
        ]
        # Coarser candles fill only the time before the finer ones begin.
        fitting = [c for c in fitting if c.open_time + step <= covered_from]
        if fitting:
            chosen.extend(fitting)
            covered_from = min(covered_from, fitting[0].open_time)
        if covered_from <= start_ms:
            break
    return sorted(chosen, key=lambda c: c.open_time)


def paper_clock_advance(*, trader_id: int, to: datetime) -> list[int]:
    """Move a paper trader's clock to ``to``, filling the stops and targets crossed on the way.

    Return the ids of the orders filled. A clock already at or past ``to`` stays; an unset
    clock is simply set. On the dataset, ``to`` is capped at ``DATASET_END``.
    """
    filled: list[int] = []
    with transaction.atomic():
        trader = locks.lock_trader(trader_id=trader_id)
        if trader.exchange != Exchange.PAPER:
            raise ValueError(f"trader {trader_id} is not a paper trader")
        if trader.market_source != "live":
            to = min(to, DATASET_END)
        start = trader.replay_as_of
        if start is not None and to <= start:
            return filled
        if start is not None:
            filled = _fill_crossed(trader, start, to)
        Trader.objects.filter(pk=trader_id).update(replay_as_of=to, updated_at=timezone.now())
    return filled


class PaperClockAhead(Exception):
    """A paper account holding positions is past the instant it was asked to trade at."""


def paper_clock_meet(*, trader_id: int, to: datetime) -> list[int]:
    """Bring a dataset paper trader's clock to ``to``, the market instant it trades at.

    Forward, as ``paper_clock_advance`` does (filling the stops and targets crossed on the
    way; their ids are returned); back only when the account holds no open position.
    Raise ``PaperClockAhead`` for an account holding positions at a later instant.
    """
    with transaction.atomic():
        trader = locks.lock_trader(trader_id=trader_id)
        at = trader.replay_as_of
        to = min(to, DATASET_END)
        if at is None or to >= at:
            return paper_clock_advance(trader_id=trader_id, to=to)
        held = Position.objects.filter(trader=trader, status=PositionStatus.OPEN)
        if held.exists():
            symbols = ", ".join(sorted({p.symbol for p in held}))
            raise PaperClockAhead(
                f"Paper trader {trader.name} is at {at.isoformat()} holding open positions "
                f"({symbols}), after the debate's instant {to.isoformat()}: close them, or "
                "execute on a paper trader not past that instant."
            )
        Trader.objects.filter(pk=trader_id).update(replay_as_of=to, updated_at=timezone.now())
    return []


def _fill_crossed(trader: Trader, start: datetime, end: datetime) -> list[int]:
    """Fill, for each open position, the stop or target that the first candle closed
    after ``start`` and by ``end`` to reach one crossed; return the orders filled."""
    protected = _protective_orders(trader)
    if not protected:
        return []
    source = paper_source(trader)
    exchange = PaperExchange(trader.pk)
    candles: dict[str, list[Candle]] = {}
    filled = []
    for orders in protected:
        symbol = orders[0].position.symbol
        if symbol not in candles:
            candles[symbol] = _candles_or_none(source, symbol, start, end)
        crossed = _first_crossed(orders, candles[symbol])
        if crossed is None:
            continue
        order, price, at = crossed
        if exchange.fill_trigger(order_id=order.pk, price=price, at=at):
            filled.append(order.pk)
    return filled


def _protective_orders(trader: Trader) -> list[list[Order]]:
    """Return the resting stop and target orders of the trader's open positions, by
    position."""
    resting = Order.objects.filter(
        trader=trader,
        status=OrderStatus.OPEN,
        type__in=PROTECTIVE_TYPES,
        position__status=PositionStatus.OPEN,
    ).select_related("position")
    by_position: dict[int, list[Order]] = defaultdict(list)
    for order in resting:
        by_position[order.position_id].append(order)
    return list(by_position.values())


def _candles_or_none(
    source: MarketSource, symbol: str, start: datetime, end: datetime
) -> list[Candle]:
    """Return ``candles_between``, or none when the source fails: the stops wait for
    the next sweep."""
    try:
        return candles_between(source, symbol, start, end)
    except MarketDataError:
        logger.exception("no candles for %s: its stops wait", symbol)
        return []


def _first_crossed(
    orders: list[Order], candles: list[Candle]
) -> tuple[Order, Decimal, datetime] | None:
    """Return the order of ``orders`` (one position's stop and target) that the first
    candle to reach either crossed, its price (the stop when one candle reaches both)
    and the candle's open instant; None when no candle does."""
    by_type = {order.type: order for order in reversed(orders)}  # the first of a type wins
    stop = by_type.get(OrderType.STOP_MARKET)
    target = by_type.get(OrderType.TAKE_PROFIT_MARKET)
    for candle in candles:
        hit = crossing(
            orders[0].position.side,
            stop.trigger_price if stop else None,
            target.trigger_price if target else None,
            Decimal(str(candle.low)),
            Decimal(str(candle.high)),
        )
        if hit is not None:
            kind, price = hit
            order = stop if kind == "stop_loss" else target
            assert order is not None
            return order, price, datetime.fromtimestamp(candle.open_time / 1000, tz=UTC)
    return None


def paper_check_stops() -> list[int]:
    """Advance every paper trader holding protected positions; return the orders filled.

    Live-priced traders advance to now; dataset traders to the latest replay instant of
    their completed debates (a dataset clock only moves with the replay).
    """
    trader_ids = (
        Order.objects.filter(
            trader__exchange=Exchange.PAPER,
            status=OrderStatus.OPEN,
            type__in=PROTECTIVE_TYPES,
            position__status=PositionStatus.OPEN,
        )
        .values_list("trader_id", flat=True)
        .distinct()
    )
    filled: list[int] = []
    for trader in Trader.objects.filter(pk__in=list(trader_ids)).order_by("pk"):
        if trader.market_source == "live":
            target: datetime | None = timezone.now()
        else:
            target = Debate.objects.filter(
                trader=trader, status=DebateStatus.COMPLETED, as_of__isnull=False
            ).aggregate(latest=Max("as_of"))["latest"]
        if target is None:
            continue
        try:
            filled += paper_clock_advance(trader_id=trader.pk, to=target)
        except MarketDataError:
            logger.exception("paper trader %s: stops not checked", trader.pk)
    return filled
