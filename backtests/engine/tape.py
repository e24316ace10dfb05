"""The prices a backtest trades at: one coin's candles over the window, finest first.

A ``Tape`` holds a coin's candles from the window's start to its end, each stretch of
time on the finest timeframe the bundled dataset holds there (15m from 2024-08-05, 1h
from 2024-05-08, 4h before; ``strategies.market.dataset.replay_candles``), with its
funding settlements. An order placed at an instant fills at the open of the first
candle that opens at or after it (``fill_price``); stops and targets are checked on the
candles that follow, from the one the entry filled in.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal

from strategies.market.dataset import funding_between, replay_candles
from strategies.market.snapshot import TIMEFRAME_MS, Candle


@dataclass(frozen=True)
class Bar:
    """One candle, in milliseconds and ``Decimal`` prices."""

    open_ms: int
    close_ms: int
    open: Decimal
    high: Decimal
    low: Decimal
    close: Decimal


class Tape:
    """One coin's bars over a window and the funding settled in it, oldest first."""

    def __init__(
        self,
        symbol: str,
        candles: Sequence[tuple[str, Candle]],
        funding: Sequence[tuple[int, float]] = (),
    ) -> None:
        """``candles`` are (timeframe, candle); ``funding`` (instant in ms, rate)."""
        bars = tuple(
            Bar(
                open_ms=candle.open_time,
                close_ms=candle.open_time + TIMEFRAME_MS[timeframe],
                open=Decimal(str(candle.open)),
                high=Decimal(str(candle.high)),
                low=Decimal(str(candle.low)),
                close=Decimal(str(candle.close)),
            )
            for timeframe, candle in candles
        )
        self._hold(symbol, bars, tuple((at, Decimal(str(rate))) for at, rate in funding))

    def _hold(
        self, symbol: str, bars: tuple[Bar, ...], funding: tuple[tuple[int, Decimal], ...]
    ) -> None:
        if not bars:
            raise ValueError(f"{symbol}: no candles in the window")
        self.symbol, self.bars, self.funding = symbol, bars, funding
        self.open_times = tuple(bar.open_ms for bar in bars)
        self.close_times = tuple(bar.close_ms for bar in bars)
        self.funding_times = tuple(at for at, _ in funding)

    def known_at(self, at_ms: int) -> Tape:
        """Return the tape as a step at ``at_ms`` knows it: the bars closed by then, and
        the bar an order placed then fills in reduced to its open (``fill_price``: the
        price at ``at_ms`` when a bar opens at it), nothing of what follows; the funding
        settled by then."""
        bars = self.bars[: bisect_right(self.close_times, at_ms)]
        filling = self.fill_index(at_ms)
        if filling is not None:
            bar = self.bars[filling]
            bars += (Bar(bar.open_ms, bar.close_ms, bar.open, bar.open, bar.open, bar.open),)
        known = Tape.__new__(Tape)
        known._hold(self.symbol, bars, self.funding[: bisect_right(self.funding_times, at_ms)])
        return known

    @classmethod
    def from_dataset(cls, symbol: str, start: datetime, end: datetime) -> Tape:
        """Return the tape of ``symbol`` from ``start`` to ``end`` in the bundled dataset."""
        return cls(symbol, replay_candles(symbol, start, end), funding_between(symbol, start, end))

    def fill_index(self, at_ms: int) -> int | None:
        """Return the index of the first bar opening at or after ``at_ms`` (None: none)."""
        index = bisect_left(self.open_times, at_ms)
        return index if index < len(self.bars) else None

    def fill_price(self, at_ms: int) -> Decimal:
        """Return the price an order placed at ``at_ms`` fills at: the next bar's open, or
        after the last bar, its close."""
        index = self.fill_index(at_ms)
        return self.bars[-1].close if index is None else self.bars[index].open

    def last_close(self, by_ms: int) -> tuple[int, Decimal]:
        """Return (instant, price) of the close of the last bar closed by ``by_ms``."""
        index = bisect_right(self.close_times, by_ms) - 1
        bar = self.bars[max(index, 0)]
        return bar.close_ms, bar.close

    def funding_after(self, after_ms: int) -> int:
        """Return the index of the first funding settlement after ``after_ms``."""
        return bisect_right(self.funding_times, after_ms)
