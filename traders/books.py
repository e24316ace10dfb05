"""A trader's book: its account as a debate sees it (``debates.engine.book.Book``).

A debate with a trader reads the book at its prepare step (``debate_book``, named by the
setting ``DEBATE_BOOK_READER``, so the debates app imports nothing of trading): a paper
trader replaying the dataset first has its clock brought to the debate's instant
(filling the stops and targets crossed since), a live-priced one to now. The account
and the open positions come from the exchange adapter, marked at its prices; what the
exchange does not keep comes from this app's own rows: each position's stop and target
(its resting protective orders), which debate's decision opened it and when (its
filled opening execution), the best unrealised P&L it reached (kept on a paper
position, raised whenever its book is read), today's realised P&L and the last closed
trades (paper positions).
"""

from __future__ import annotations

import contextlib
from datetime import datetime, time
from decimal import Decimal

from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from debates.engine.book import (
    CLOSED_TRADES_SHOWN,
    Book,
    BookUnavailable,
    ClosedTrade,
    HeldPosition,
)
from strategies.models import Strategy
from traders.exchanges import exchange_for
from traders.exchanges.base import ExchangeAdapter, ExchangeError, ExchangePosition
from traders.exchanges.fills import realized_pnl
from traders.models import (
    Exchange,
    Execution,
    ExecutionStatus,
    Order,
    OrderStatus,
    OrderType,
    Position,
    PositionStatus,
    Trader,
)
from traders.risk import Funds
from traders.services.guards import account_instant, guards_check
from traders.services.orders import strategy_risk_limits
from traders.services.paper import PaperClockAhead, paper_clock_advance, paper_clock_meet

_OPENING = {"long": "open_long", "short": "open_short"}


def debate_book(
    *, trader_id: int, as_of: datetime | None, strategy_id: int | None, debate_id: int | None = None
) -> dict:
    """Return the book of trader ``trader_id`` at a debate's instant ``as_of`` (now for a
    live debate), with the risk headroom and the guards of strategy ``strategy_id``, as a
    dict; a guard tripped now is announced on debate ``debate_id``'s stream.

    Raise ``BookUnavailable`` when the exchange cannot be read.
    """
    trader = Trader.objects.get(pk=trader_id)
    _clock_to(trader, as_of)
    trader.refresh_from_db()
    strategy = Strategy.objects.filter(pk=strategy_id).first() if strategy_id else None
    try:
        return trader_book(trader, exchange_for(trader), strategy, debate_id=debate_id).to_dict()
    except ExchangeError as exc:
        raise BookUnavailable(
            f"The account of trader {trader.name} could not be read: {exc}"
        ) from exc


def _clock_to(trader: Trader, as_of: datetime | None) -> None:
    """Bring a paper trader's clock to the debate's instant (a dataset replay's) or to
    now (live prices), so its stops and targets crossed since are filled."""
    if trader.exchange != Exchange.PAPER:
        return
    if trader.market_source == "live":
        paper_clock_advance(trader_id=trader.pk, to=timezone.now())
        return
    # An account holding positions at a later instant is read as it is.
    if as_of is not None:
        with contextlib.suppress(PaperClockAhead):
            paper_clock_meet(trader_id=trader.pk, to=as_of)


def trader_book(
    trader: Trader,
    adapter: ExchangeAdapter,
    strategy: Strategy | None,
    *,
    debate_id: int | None = None,
) -> Book:
    """Return ``trader``'s book from its exchange ``adapter`` and this app's rows, its
    guards applied (``guards_check``)."""
    funds = adapter.balance()
    held = [_held(trader, adapter, position) for position in adapter.positions()]
    limits = strategy_risk_limits(strategy)
    margin = sum((h.margin for h in held), Decimal("0"))
    as_of = account_instant(trader, timezone.now())
    exposure = sum((Decimal(str(h.position.value)) for h in held), Decimal("0"))
    trader = guards_check(
        trader_id=trader.pk,
        funds=funds,
        exposure=exposure,
        now=as_of,
        strategy=strategy,
        debate_id=debate_id,
    )
    return Book(
        as_of=as_of.isoformat(),
        equity=_float(funds.equity),
        available=_float(funds.available),
        margin_in_use=float(margin if trader.exchange == Exchange.PAPER else _in_use(funds)),
        realized_pnl_today=_realized_today(trader, as_of),
        positions=tuple(h.position for h in held),
        positions_left=max(0, limits.max_open_positions - len(held)),
        max_position_value=_float(
            limits.max_position_multiple * funds.equity if funds.equity is not None else None
        ),
        closed=_closed(trader),
        hedging=bool(strategy and strategy.allow_hedging),
        paused=trader.paused_reason,
        paused_until=trader.paused_until.isoformat() if trader.paused_until else None,
    )


class _Held:
    """One open position with what the book needs of it beside its view: its margin."""

    def __init__(self, position: HeldPosition, margin: Decimal) -> None:
        self.position, self.margin = position, margin


def _held(trader: Trader, adapter: ExchangeAdapter, position: ExchangePosition) -> _Held:
    """Return an open position as the book shows it, marked at the exchange's price."""
    mark = adapter.price(position.symbol)
    pnl = realized_pnl(position.side, position.entry_price, mark, position.quantity)
    local = Position.objects.filter(
        trader=trader, symbol=position.symbol, side=position.side, status=PositionStatus.OPEN
    ).first()
    notional = position.entry_price * position.quantity
    margin = local.margin if local is not None else notional / (position.leverage or 1)
    peak = _peak(local, pnl)
    stop, target = _protection(trader, position)
    opened_at, debate_id = _opened(trader, position, local)
    view = HeldPosition(
        symbol=position.symbol,
        side=position.side,
        quantity=float(position.quantity),
        entry_price=float(position.entry_price),
        mark_price=float(mark),
        unrealized_pnl=float(pnl),
        unrealized_pct=float(pnl / margin * 100) if margin else None,
        peak_pnl=_float(peak),
        leverage=position.leverage,
        liquidation_price=_float(position.liquidation_price),
        stop_loss=_float(stop),
        take_profit=_float(target),
        opened_at=opened_at.isoformat() if opened_at else None,
        opened_by_debate=debate_id,
    )
    return _Held(view, margin)


def _peak(local: Position | None, pnl: Decimal) -> Decimal | None:
    """Raise the best unrealised P&L a paper position reached to ``pnl``; return it."""
    if local is None:
        return None
    Position.objects.filter(pk=local.pk).update(
        peak_pnl=Greatest(F("peak_pnl"), pnl) if local.peak_pnl is not None else pnl
    )
    return pnl if local.peak_pnl is None else max(local.peak_pnl, pnl)


def _protection(trader: Trader, position: ExchangePosition) -> tuple[Decimal | None, ...]:
    """Return the trigger prices of the resting stop loss and take profit of a position."""
    closing_side = "sell" if position.side == "long" else "buy"
    resting = dict(
        Order.objects.filter(
            trader=trader,
            symbol=position.symbol,
            side=closing_side,
            status=OrderStatus.OPEN,
            type__in=(OrderType.STOP_MARKET, OrderType.TAKE_PROFIT_MARKET),
        )
        .order_by("created_at")
        .values_list("type", "trigger_price")
    )
    return resting.get(OrderType.STOP_MARKET), resting.get(OrderType.TAKE_PROFIT_MARKET)


def _opened(
    trader: Trader, position: ExchangePosition, local: Position | None
) -> tuple[datetime | None, int | None]:
    """Return when a position opened and which debate's decision opened it (its latest
    filled opening execution), where this app knows."""
    execution = (
        Execution.objects.filter(
            trader=trader,
            symbol=position.symbol,
            action=_OPENING.get(position.side, ""),
            status=ExecutionStatus.FILLED,
        )
        .order_by("-created_at")
        .values_list("created_at", "decision__debate_id")
        .first()
    )
    opened_at = local.opened_at if local is not None else (execution[0] if execution else None)
    return opened_at, execution[1] if execution else None


def _realized_today(trader: Trader, as_of: datetime) -> float | None:
    """Return the P&L (after fees) of the paper positions closed on ``as_of``'s UTC day
    by ``as_of``; None for an exchange account (its history is the exchange's)."""
    if trader.exchange != Exchange.PAPER:
        return None
    day = datetime.combine(as_of.date(), time(), tzinfo=as_of.tzinfo)
    closed = Position.objects.filter(
        trader=trader, status=PositionStatus.CLOSED, closed_at__gte=day, closed_at__lte=as_of
    )
    return float(sum((p.realized_pnl - p.fees for p in closed), Decimal("0")))


def _closed(trader: Trader) -> tuple[ClosedTrade, ...]:
    """Return the trader's last closed paper positions, newest first."""
    positions = Position.objects.filter(trader=trader, status=PositionStatus.CLOSED).order_by(
        "-closed_at", "-id"
    )[:CLOSED_TRADES_SHOWN]
    return tuple(
        ClosedTrade(
            symbol=p.symbol,
            side=p.side,
            entry_price=float(p.entry_price),
            exit_price=float(p.close_price or 0),
            pnl=float(p.realized_pnl - p.fees),
            reason=p.close_reason,
            closed_at=p.closed_at.isoformat() if p.closed_at else None,
        )
        for p in positions
    )


def _in_use(funds: Funds) -> Decimal:
    """Return the margin an exchange account has in use: its equity less what is
    available, where it says both."""
    if funds.equity is None or funds.available is None:
        return Decimal("0")
    return max(Decimal("0"), funds.equity - funds.available)


def _float(value: Decimal | None) -> float | None:
    return None if value is None else float(value)
