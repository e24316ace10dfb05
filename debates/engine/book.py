"""The book: a trader's account as a debate sees it, and what each action does to it.

A debate with a trader holds the trader's account as of its instant (``Book``): its
equity, available balance, margin in use, today's realised P&L, each open position with
its stop and target, the risk headroom left and the last closed trades. The votes see it
(``book_text``), each with its own track record beside it (``record_text``), and the
orders a decision makes are computed from it in code (``book_orders``), never from a
model's reading of it: the same rules say what each action would do in the prompt and
what it does at the execution.

Nothing here reads a database; money is in the settlement currency (USDT), as floats:
the book informs a decision, the execution computes its orders' sizes in decimals.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass, fields
from typing import Any

LONG, SHORT = "long", "short"
OPEN_LONG, OPEN_SHORT = "open_long", "open_short"
CLOSE_LONG, CLOSE_SHORT = "close_long", "close_short"
HOLD, WAIT = "hold", "wait"
ACTIONS = (OPEN_LONG, OPEN_SHORT, CLOSE_LONG, CLOSE_SHORT, HOLD, WAIT)

# The side each opening or closing action trades.
_SIDE = {OPEN_LONG: LONG, OPEN_SHORT: SHORT, CLOSE_LONG: LONG, CLOSE_SHORT: SHORT}
_OTHER = {LONG: SHORT, SHORT: LONG}

CLOSED_TRADES_SHOWN = 5
"""How many of the trader's last closed trades a book holds."""


class BookUnavailable(Exception):
    """The trader's account could not be read (its exchange did not answer, say)."""


def _of(cls: type, data: dict[str, Any]) -> Any:
    """Return a ``cls`` from ``data``, leaving out keys it does not know."""
    names = {field.name for field in fields(cls)}
    return cls(**{key: value for key, value in data.items() if key in names})


@dataclass(frozen=True)
class HeldPosition:
    """An open position as the book shows it: unrealised P&L at the mark (in USDT and in
    % of its margin), the best it reached, its stop and target, and which debate's
    decision opened it, when."""

    symbol: str
    side: str
    quantity: float
    entry_price: float
    mark_price: float
    unrealized_pnl: float
    unrealized_pct: float | None = None
    peak_pnl: float | None = None
    leverage: int | None = None
    liquidation_price: float | None = None
    stop_loss: float | None = None
    take_profit: float | None = None
    opened_at: str | None = None
    opened_by_debate: int | None = None

    @property
    def value(self) -> float:
        """Return the position's value at the mark."""
        return abs(self.quantity * self.mark_price)

    def distance(self, price: float | None) -> float | None:
        """Return how far ``price`` is from the mark, as a fraction of the mark."""
        if price is None or not self.mark_price:
            return None
        return abs(price - self.mark_price) / self.mark_price


@dataclass(frozen=True)
class ClosedTrade:
    """A position the trader closed: entry, exit, its P&L (after fees) and why it closed
    (``decision``, ``stop_loss``, ``take_profit``, ...)."""

    symbol: str
    side: str
    entry_price: float
    exit_price: float
    pnl: float
    reason: str
    closed_at: str | None = None


@dataclass(frozen=True)
class Book:
    """A trader's account as of ``as_of``: what a debate's votes see of it."""

    as_of: str
    equity: float | None
    available: float | None
    margin_in_use: float
    realized_pnl_today: float | None
    positions: tuple[HeldPosition, ...] = ()
    positions_left: int | None = None
    max_position_value: float | None = None
    closed: tuple[ClosedTrade, ...] = ()
    hedging: bool = False
    paused: str = ""
    paused_until: str | None = None

    def held(self, symbol: str) -> dict[str, HeldPosition]:
        """Return the positions open on ``symbol``, by side."""
        return {p.side: p for p in self.positions if p.symbol == symbol}

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict (the ``book`` a debate stores)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Book:
        """Rebuild a book from ``to_dict``'s output."""
        return _of(
            cls,
            {
                **data,
                "positions": tuple(_of(HeldPosition, p) for p in data.get("positions", ())),
                "closed": tuple(_of(ClosedTrade, t) for t in data.get("closed", ())),
            },
        )


@dataclass(frozen=True)
class BookOrders:
    """What an action does to the positions held on one coin: the sides it closes, in
    order and reduce-only, then the side it opens, if any; ``note`` says why an action
    that does nothing does nothing."""

    closes: tuple[str, ...] = ()
    opens: str | None = None
    note: str = ""

    @property
    def nothing(self) -> bool:
        return not self.closes and self.opens is None


def book_orders(
    action: str, held: Iterable[str], *, hedging: bool = False, paused: str = ""
) -> BookOrders:
    """Return what ``action`` does on a coin whose open positions are of the sides
    ``held``.

    ``hold`` and ``wait`` keep what is held. ``close_long`` closes an open long,
    reduce-only. ``open_short`` opens a short, first closing an open long unless the
    strategy allows hedging (both sides at once); with a short already open it does
    nothing. Each of these mirrored for the other side. A trader ``paused`` by a guard
    (why) opens nothing: an opening does only its closes. An action that would do
    nothing says so in ``note``.
    """
    held = set(held)
    if action in (HOLD, WAIT):
        kept = " and ".join(sorted(held))
        return BookOrders(
            note=f"nothing to do: {action} keeps the {kept}"
            if kept
            else "nothing to do: nothing is open"
        )
    side = _SIDE[action]
    if action in (CLOSE_LONG, CLOSE_SHORT):
        if side not in held:
            return BookOrders(note=f"nothing to do: no {side} open")
        return BookOrders(closes=(side,))
    if side in held:
        return BookOrders(note=f"nothing to do: a {side} is already open")
    other = _OTHER[side]
    closes = (other,) if other in held and not hedging else ()
    if paused:
        note = f"opens nothing: the trader is paused ({paused})"
        return BookOrders(closes=closes, note=note if closes else f"nothing to do: {note}")
    return BookOrders(closes=closes, opens=side)


def effect_text(orders: BookOrders) -> str:
    """Return in words what an action's ``orders`` do."""
    if orders.nothing:
        return orders.note
    steps = [f"closes the {side} (reduce-only)" for side in orders.closes]
    if orders.opens is not None:
        steps.append(f"opens a {orders.opens}")
    text = ", then ".join(steps)
    return f"{text}; {orders.note}" if orders.note else text


def book_text(book: Book, symbols: Iterable[str]) -> str:
    """Return the book as a vote prompt shows it: the account, each candidate coin with
    what is held on it and what each action would do, the other open positions, the
    headroom and the last closed trades."""
    symbols = tuple(symbols)
    lines = [f"As of {book.as_of}. " + _account_line(book)]
    if book.paused:
        until = (
            f" until {book.paused_until}" if book.paused_until else " until its owner resumes it"
        )
        lines.append(f"PAUSED{until}: {book.paused}. No new position opens; closes still do.")
    for symbol in symbols:
        lines += _coin_lines(book, symbol)
    others = [p for p in book.positions if p.symbol not in symbols]
    if others:
        lines.append("Other open positions: " + "; ".join(_position_line(p) for p in others))
    lines.append(_headroom_line(book))
    if book.closed:
        lines.append("Last closed trades: " + "; ".join(_closed_line(t) for t in book.closed))
    return "\n".join(lines)


def _money(value: float | None) -> str:
    return "unknown" if value is None else f"{value:,.2f} USDT"


def _account_line(book: Book) -> str:
    today = book.realized_pnl_today
    realised = "unknown" if today is None else f"{today:+,.2f} USDT"
    return (
        f"Equity {_money(book.equity)}, available {_money(book.available)}, margin in use "
        f"{_money(book.margin_in_use)}, realised P&L today {realised}."
    )


def _position_line(p: HeldPosition) -> str:
    parts = [
        f"{p.side} {p.symbol} {p.quantity:.10g} at {p.entry_price:.10g}, mark {p.mark_price:.10g}",
        f"unrealised {p.unrealized_pnl:+,.2f} USDT"
        + (f" ({p.unrealized_pct:+.1f}% of margin)" if p.unrealized_pct is not None else ""),
    ]
    if p.peak_pnl is not None:
        parts.append(f"best {p.peak_pnl:+,.2f} USDT")
    if p.leverage:
        parts.append(f"{p.leverage}x")
    if p.liquidation_price is not None:
        parts.append(f"liquidation {p.liquidation_price:.10g}")
    for name, price in (("stop", p.stop_loss), ("target", p.take_profit)):
        distance = p.distance(price)
        if distance is not None:
            parts.append(f"{name} {price:.10g} ({distance:.1%} away)")
        else:
            parts.append(f"no {name}")
    if p.opened_at:
        parts.append(
            f"opened {p.opened_at}"
            + (f" by debate {p.opened_by_debate}" if p.opened_by_debate else "")
        )
    return ", ".join(parts)


def _coin_lines(book: Book, symbol: str) -> list[str]:
    held = book.held(symbol)
    head = f"{symbol}: " + (
        "; ".join(_position_line(p) for p in held.values()) if held else "nothing held"
    )
    effects = [
        f"  {action}: "
        + effect_text(book_orders(action, held, hedging=book.hedging, paused=book.paused))
        for action in ACTIONS
    ]
    return [head, *effects]


def _headroom_line(book: Book) -> str:
    left = "unknown" if book.positions_left is None else str(book.positions_left)
    largest = _money(book.max_position_value)
    return f"Headroom: {left} more position(s) may open; the largest position allowed is {largest}."


def _closed_line(t: ClosedTrade) -> str:
    return (
        f"{t.side} {t.symbol} {t.entry_price:.10g} -> {t.exit_price:.10g}, "
        f"{t.pnl:+,.2f} USDT ({t.reason or 'closed'})"
    )


TRACK_RECORD_CALLS = 5
"""How many of a voter's last reviewed calls its track record holds."""


@dataclass(frozen=True)
class Call:
    """One of a voter's reviewed calls: what it voted on a coin at an instant, with what
    confidence, how the price moved over the review horizon, and the verdict (``right``,
    ``wrong``, or ``flat``: the move was too small to judge)."""

    at: str
    symbol: str
    action: str
    confidence: float
    move_pct: float
    verdict: str


def record_text(calls: Iterable[dict[str, Any]]) -> str:
    """Return a voter's track record (``Call`` dicts, newest first) as its vote prompt
    shows it."""
    lines = [
        f"- {call.at} {call.symbol} {call.action} at {call.confidence:.0f}% confidence: "
        f"price {call.move_pct:+.2f}% over the horizon, {call.verdict}"
        for call in (_of(Call, data) for data in calls)
    ]
    return "\n".join(lines) if lines else "None of your calls on these coins is reviewed yet."
