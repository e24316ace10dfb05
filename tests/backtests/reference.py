"""An independent computation of a backtest's equity, written from the stated rules.

It reads the bundled CSV files itself and uses none of the project's market, risk,
fill or backtest code, so a test comparing the two checks the project against the rules
(docs/backtests.md, "The portfolio"), not against itself. It covers what the scripted
tests trade: one coin, one opening decision repeated at every step, no slippage, the
strategy's default limits (which such a decision never reaches).

The rules, as applied here:
- prices: each stretch of time on the finest timeframe the files hold there (15m from
  2024-08-05, 1h from 2024-05-08, 4h before);
- an order placed at an instant fills at the open of the first candle opening at or after
  it;
- size: margin = available balance x position_pct, quantity = margin x leverage / price
  rounded down to 0.000001; fee = price x quantity x fee rate, rounded half-up to 8
  decimals, paid at once;
- stop = entry x (1 - stop_loss), target = entry x (1 + take_profit), to 8 decimals;
  each later candle (from the one the entry filled in) is checked on its low for the
  stop first, then on its high for the target; the exit fills at that price, with the fee;
- funding: at each settlement while the position is open (after its entry, before the
  candle opening at it, and before the window's end), a long pays quantity x the price
  then x the rate;
- a position still open at the end closes at the last candle's close, with the fee;
- a second opening in the same direction while a position is open is refused (with
  ``close_when_held``, the step closes the position instead);
- the equity curve has a point at each step instant, before its decision (wallet plus the
  position's gain at that instant's fill price), then the end's.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "strategies" / "data" / "market"
FINEST_FROM = [
    ("15m", datetime(2024, 8, 5, tzinfo=UTC), 15),
    ("1h", datetime(2024, 5, 8, tzinfo=UTC), 60),
    ("4h", datetime(2024, 1, 1, tzinfo=UTC), 240),
]
EIGHT = Decimal("0.00000001")
SIX = Decimal("0.000001")


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def rows(symbol: str, timeframe: str) -> list[dict[str, str]]:
    with (DATA / f"{symbol}-{timeframe}.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


@dataclass
class Candle:
    opens: int
    closes: int
    open: Decimal
    high: Decimal
    low: Decimal
    close: Decimal


def path(symbol: str, start: datetime, end: datetime) -> list[Candle]:
    """Return the candles from ``start`` to ``end``, each stretch on its finest timeframe."""
    candles: list[Candle] = []
    covered_until = end
    for timeframe, available_from, minutes in FINEST_FROM:
        begins = max(start, available_from)
        if begins >= covered_until:
            continue
        for row in rows(symbol, timeframe):
            opens = int(row["timestamp"])
            closes = opens + minutes * 60_000
            if opens >= ms(begins) and closes <= ms(covered_until):
                candles.append(
                    Candle(
                        opens,
                        closes,
                        Decimal(row["open"]),
                        Decimal(row["high"]),
                        Decimal(row["low"]),
                        Decimal(row["close"]),
                    )
                )
        covered_until = begins
    return sorted(candles, key=lambda c: c.opens)


def funding(symbol: str) -> list[tuple[int, Decimal]]:
    with (DATA / f"{symbol}-funding-8h.csv").open(newline="") as handle:
        return [(int(r["timestamp"]), Decimal(r["funding_rate"])) for r in csv.DictReader(handle)]


def eight(value: Decimal) -> Decimal:
    return value.quantize(EIGHT, rounding=ROUND_HALF_UP)


@dataclass
class Reference:
    """The reference account's result: its curve, trades and totals."""

    curve: list[tuple[int, Decimal]] = field(default_factory=list)
    trades: list[dict] = field(default_factory=list)
    fees: Decimal = Decimal("0")
    funding: Decimal = Decimal("0")


# The long of the fake model server's default answer on BTC: 20 % of the balance at 3x,
# stop loss 3 %, take profit 6 %.
FAKE_LONG = {
    "symbol": "BTCUSDT",
    "position_pct": Decimal("0.2"),
    "leverage": 3,
    "stop_loss": Decimal("0.03"),
    "take_profit": Decimal("0.06"),
}


def always_long(
    *,
    symbol: str,
    start: datetime,
    end: datetime,
    every: timedelta,
    position_pct: Decimal,
    leverage: int,
    stop_loss: Decimal,
    take_profit: Decimal,
    balance: Decimal = Decimal("1000"),
    fee_rate: Decimal = Decimal("0.0004"),
    decided: set[int] | None = None,
    close_when_held: bool = False,
) -> Reference:
    """Return what ``open_long`` on ``symbol`` at every step from ``start`` to ``end`` makes;
    with ``decided``, only at the steps of those instants (ms): the others decide nothing.
    With ``close_when_held``, a step that finds the long open closes it instead (at the
    instant's fill price, a trade closed by ``decision``), as a debate seeing its book
    and told to close what it holds decides."""
    candles = path(symbol, start, end)
    settlements = [(t, r) for t, r in funding(symbol) if ms(start) < t < ms(end)]
    result = Reference()
    wallet = balance
    held: dict | None = None
    walked = 0  # candles [0, walked) are behind us
    paid = 0  # settlements [0, paid) are behind us

    def price_at(instant_ms: int) -> Decimal:
        for candle in candles:
            if candle.opens >= instant_ms:
                return candle.open
        return candles[-1].close

    def exit_(price: Decimal, when: int, reason: str) -> None:
        nonlocal wallet, held
        fee = eight(price * held["quantity"] * fee_rate)
        gain = eight((price - held["entry"]) * held["quantity"])
        wallet += gain - fee
        result.fees += fee
        fees = held["fee"] + fee
        result.trades.append(
            {
                "entry_ms": held["entry_ms"],
                "entry_price": held["entry"],
                "exit_ms": when,
                "exit_price": price,
                "quantity": held["quantity"],
                "pnl": gain - fees + held["funding"],
                "reason": reason,
            }
        )
        held = None

    def settle(until: int) -> None:
        nonlocal wallet, paid
        while paid < len(settlements) and settlements[paid][0] <= until:
            when, rate = settlements[paid]
            paid += 1
            if held is not None and when > held["entry_ms"]:
                amount = eight(held["quantity"] * price_at(when) * rate)
                wallet -= amount
                held["funding"] -= amount
                result.funding -= amount

    def walk(until: int) -> None:
        nonlocal walked
        while walked < len(candles) and candles[walked].closes <= until:
            candle = candles[walked]
            walked += 1
            settle(candle.opens)
            if held is None or candle.opens < held["entry_ms"]:
                continue
            if candle.low <= held["stop"]:
                exit_(held["stop"], candle.opens, "stop")
            elif candle.high >= held["target"]:
                exit_(held["target"], candle.opens, "target")
        settle(until)

    instant = start
    while instant < end:
        at = ms(instant)
        walk(at)
        mark = price_at(at)
        unrealised = eight((mark - held["entry"]) * held["quantity"]) if held else Decimal(0)
        result.curve.append((at, wallet + unrealised))
        if held is not None and close_when_held and (decided is None or at in decided):
            exit_(mark, at, "decision")
        elif held is None and (decided is None or at in decided):
            entry = price_at(at)
            margin = wallet * position_pct
            quantity = (margin * leverage / entry).quantize(SIX, rounding=ROUND_DOWN)
            fee = eight(entry * quantity * fee_rate)
            wallet -= fee
            result.fees += fee
            entry_ms = next(c.opens for c in candles if c.opens >= at)
            held = {
                "entry": entry,
                "entry_ms": entry_ms,
                "quantity": quantity,
                "fee": fee,
                "funding": Decimal(0),
                "stop": eight(entry * (1 - stop_loss)),
                "target": eight(entry * (1 + take_profit)),
            }
        instant += every
    walk(ms(end))
    if held is not None:
        last = max((c for c in candles if c.closes <= ms(end)), key=lambda c: c.closes)
        exit_(last.close, last.closes, "end")
    result.curve.append((ms(end), wallet))
    return result


def closed_by(symbol: str, timeframe: str, minutes: int, instant: datetime) -> list[dict]:
    """Return the rows of ``symbol``'s ``timeframe`` candles closed by ``instant``."""
    return [
        r for r in rows(symbol, timeframe) if int(r["timestamp"]) + minutes * 60_000 <= ms(instant)
    ]


def atr14(symbol: str, instant: datetime, candles: int = 101) -> float:
    """Return Wilder's ATR 14 of the last ``candles`` 1h candles closed by ``instant``: the
    mean of the first 14 true ranges (from the second candle on), then smoothed by 13/14."""
    seen = closed_by(symbol, "1h", 60, instant)[-candles:]
    high = [float(r["high"]) for r in seen]
    low = [float(r["low"]) for r in seen]
    close = [float(r["close"]) for r in seen]
    ranges = [
        max(high[i] - low[i], abs(high[i] - close[i - 1]), abs(low[i] - close[i - 1]))
        for i in range(1, len(seen))
    ]
    atr = sum(ranges[:14]) / 14
    for true_range in ranges[14:]:
        atr = (atr * 13 + true_range) / 14
    return atr


def price_by(symbol: str, instant: datetime) -> float:
    """Return the close of the last 15m candle closed by ``instant`` (what a debate sees)."""
    return float(closed_by(symbol, "15m", 15, instant)[-1]["close"])


def quiet_steps(symbol: str, instants: list[datetime], fraction: float) -> list[bool]:
    """Say of each step whether it is quiet: the price moved less than ``fraction`` of the
    1h ATR 14 from its price at the last step not quiet (the first step never is)."""
    quiet, before = [], None
    for instant in instants:
        price = price_by(symbol, instant)
        still = before is not None and abs(price - before) < fraction * atr14(symbol, instant)
        quiet.append(still)
        if not still:
            before = price
    return quiet
