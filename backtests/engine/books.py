"""The book of a simulated account, as a backtest step's votes see it.

At ``book: aware`` each step's votes see the account the earlier steps' decisions made,
at the step's instant (``debates.engine.book.Book``, as a live trader's book is shown):
equity and available balance at the instant's prices, the margin in use, the P&L
realised since the UTC day began, each open position with its stop, target and the
best unrealised P&L a closed bar gave it, the risk headroom, the last closed trades and
a pause by a guard. Positions name no debate (a re-run of the same window makes other
debates, and its prompts stay the same for the model-call cache): when they opened
says which step opened them.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from backtests.engine.guards import LIVE_REASONS
from backtests.engine.portfolio import Portfolio, Position, Trade
from debates.engine.book import CLOSED_TRADES_SHOWN, Book, ClosedTrade, HeldPosition
from traders.exchanges.fills import realized_pnl

DAY_MS = 86_400_000


def iso(at_ms: int) -> str:
    """Return the instant ``at_ms`` in ISO 8601, UTC (``...Z``)."""
    return datetime.fromtimestamp(at_ms / 1000, tz=UTC).isoformat().replace("+00:00", "Z")


def portfolio_book(portfolio: Portfolio, at_ms: int) -> Book:
    """Return ``portfolio``'s book at ``at_ms`` (walked and measured there: ``replay``)."""
    funds = portfolio.funds(at_ms)
    equity = funds.equity or Decimal("0")
    limits = portfolio.limits
    day_start = at_ms // DAY_MS * DAY_MS
    paused = portfolio.paused
    return Book(
        as_of=iso(at_ms),
        equity=float(equity),
        available=float(funds.available or 0),
        margin_in_use=float(sum((p.margin for p in portfolio.positions.values()), Decimal(0))),
        realized_pnl_today=float(
            sum((t.pnl for t in portfolio.trades if t.exit_ms >= day_start), Decimal(0))
        ),
        positions=tuple(_held(portfolio, p, at_ms) for p in portfolio.positions.values()),
        positions_left=max(0, limits.max_open_positions - len(portfolio.positions)),
        max_position_value=float(limits.max_position_multiple * equity),
        closed=tuple(_closed(t) for t in reversed(portfolio.trades[-CLOSED_TRADES_SHOWN:])),
        hedging=portfolio.hedging,
        paused=paused.reason if paused is not None else "",
        paused_until=paused.lifts_at.isoformat() if paused and paused.lifts_at else None,
    )


def _held(portfolio: Portfolio, position: Position, at_ms: int) -> HeldPosition:
    mark = portfolio.tapes[position.symbol].fill_price(at_ms)
    pnl = realized_pnl(position.side, position.entry_price, mark, position.quantity)
    return HeldPosition(
        symbol=position.symbol,
        side=position.side,
        quantity=float(position.quantity),
        entry_price=float(position.entry_price),
        mark_price=float(mark),
        unrealized_pnl=float(pnl),
        unrealized_pct=float(pnl / position.margin * 100) if position.margin else None,
        peak_pnl=float(position.peak_pnl) if position.peak_pnl is not None else None,
        leverage=position.leverage,
        stop_loss=float(position.stop) if position.stop is not None else None,
        take_profit=float(position.target) if position.target is not None else None,
        opened_at=iso(position.entry_ms),
    )


def _closed(trade: Trade) -> ClosedTrade:
    return ClosedTrade(
        symbol=trade.symbol,
        side=trade.side,
        entry_price=float(trade.entry_price),
        exit_price=float(trade.exit_price),
        pnl=float(trade.pnl),
        reason=LIVE_REASONS.get(trade.reason, trade.reason),
        closed_at=iso(trade.exit_ms),
    )
