"""The dataset market source: the bundled real Binance candles, replayed at ``as_of``.

Files live in ``strategies/data/market`` (see ``SOURCES.md`` there): for BTC, ETH, SOL,
XRP, DOGE, AVAX and LINK against USDT, 15m, 1h and 4h spot candles and the USDT-M 8-hour
funding rates. Every set ends when its last candle closes at 2024-09-05 00:00 UTC
(``DATASET_END``), the default "now" of a replay.

No look-ahead: at ``as_of`` only candles with ``open_time + timeframe <= as_of`` and
funding settled at or before ``as_of`` are visible. Asking for more closed candles than
the window holds at ``as_of``, or for any instant after ``DATASET_END``, raises
``OutsideWindowError`` naming the symbol, timeframe and window.

1d candles are not in the files. They are derived from the 4h candles: a day is the six
4h candles opening at 00:00, 04:00, ... 20:00 UTC (Binance's daily candles are aligned to
00:00 UTC too), with the first open, the highest high, the lowest low, the last close and
the summed volume. Only complete days exist, so a day becomes visible at the next 00:00.

The price at ``as_of`` is the close of the last closed 15m candle, or of the finest
timeframe whose window covers ``as_of``. The dataset holds no open interest: the
current value is None and the history raises ``OpenInterestUnavailableError``.

Replaying trades (the paper exchange's clock, backtests): an order placed at an instant
fills at the open of the first candle that opens at or after it (``fill_price``), on the
finest timeframe the files hold at that instant (``replay_timeframe``: 15m from
2024-08-05, 1h from 2024-05-08, 4h from 2024-01-01); stops and targets are checked on
the same candles (``replay_candles``). A decision made at ``as_of`` from the candles
closed by then is filled after it: nothing it was made from comes after what it trades.

Files are read lazily, once per process (2.8 MB in all), and shared read-only.
"""

from __future__ import annotations

import csv
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

from strategies.market.exceptions import (
    OpenInterestUnavailableError,
    OutsideWindowError,
    UnknownSymbolError,
)
from strategies.market.snapshot import TIMEFRAME_MS, Candle
from strategies.market.sources import (
    OpenInterestPoint,
    check_timeframe,
    iso,
    to_ms,
)
from strategies.market.symbols import normalize_symbol

DATA_DIR = Path(__file__).resolve().parent.parent / "data" / "market"
DATASET_SYMBOLS: tuple[str, ...] = (
    "BTCUSDT",
    "ETHUSDT",
    "SOLUSDT",
    "XRPUSDT",
    "DOGEUSDT",
    "AVAXUSDT",
    "LINKUSDT",
)
FILE_TIMEFRAMES: tuple[str, ...] = ("15m", "1h", "4h")
DATASET_END = datetime(2024, 9, 5, tzinfo=UTC)
FUNDING_START = datetime(2024, 1, 1, tzinfo=UTC)
DATASET_CREDIT = "Source: Binance"

_CANDLES_PER_DAY = TIMEFRAME_MS["1d"] // TIMEFRAME_MS["4h"]


@dataclass(frozen=True)
class DataWindow:
    """The candles of one timeframe: the first opens at ``start``, the last closes at ``end``."""

    timeframe: str
    start: datetime
    end: datetime

    @property
    def first_close(self) -> datetime:
        """Return the instant the first candle closes (the earliest useful ``as_of``)."""
        return datetime.fromtimestamp(
            (to_ms(self.start) + TIMEFRAME_MS[self.timeframe]) / 1000, tz=UTC
        )

    def __str__(self) -> str:
        return f"{iso(to_ms(self.start))}..{iso(to_ms(self.end))}"


DATASET_WINDOWS: dict[str, DataWindow] = {
    "15m": DataWindow("15m", datetime(2024, 8, 5, tzinfo=UTC), DATASET_END),
    "1h": DataWindow("1h", datetime(2024, 5, 8, tzinfo=UTC), DATASET_END),
    "4h": DataWindow("4h", datetime(2024, 1, 1, tzinfo=UTC), DATASET_END),
    "1d": DataWindow("1d", datetime(2024, 1, 1, tzinfo=UTC), DATASET_END),
}


def dataset_window(timeframe: str) -> DataWindow:
    """Return the data window of ``timeframe`` (shared by every symbol)."""
    check_timeframe(timeframe)
    return DATASET_WINDOWS[timeframe]


@dataclass(frozen=True)
class _Series:
    open_times: tuple[int, ...]
    candles: tuple[Candle, ...]


@cache
def _series(symbol: str, timeframe: str) -> _Series:
    if timeframe == "1d":
        candles = aggregate_daily(_series(symbol, "4h").candles)
    else:
        candles = _read_candles(DATA_DIR / f"{symbol}-{timeframe}.csv")
    return _Series(tuple(candle.open_time for candle in candles), candles)


@cache
def _funding(symbol: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
    times: list[int] = []
    rates: list[float] = []
    with (DATA_DIR / f"{symbol}-funding-8h.csv").open(newline="") as handle:
        for row in csv.DictReader(handle):
            times.append(int(row["timestamp"]))
            rates.append(float(row["funding_rate"]))
    return tuple(times), tuple(rates)


def _read_candles(path: Path) -> tuple[Candle, ...]:
    with path.open(newline="") as handle:
        return tuple(
            Candle(
                open_time=int(row["timestamp"]),
                open=float(row["open"]),
                high=float(row["high"]),
                low=float(row["low"]),
                close=float(row["close"]),
                volume=float(row["volume"]),
            )
            for row in csv.DictReader(handle)
        )


def aggregate_daily(candles_4h: tuple[Candle, ...] | list[Candle]) -> tuple[Candle, ...]:
    """Return the complete 00:00-UTC days made of ``candles_4h`` (oldest first)."""
    day_ms = TIMEFRAME_MS["1d"]
    days: dict[int, list[Candle]] = {}
    for candle in candles_4h:
        days.setdefault(candle.open_time // day_ms * day_ms, []).append(candle)
    result = []
    for day_start, parts in sorted(days.items()):
        expected = [day_start + i * TIMEFRAME_MS["4h"] for i in range(_CANDLES_PER_DAY)]
        if [part.open_time for part in parts] != expected:
            continue
        result.append(
            Candle(
                open_time=day_start,
                open=parts[0].open,
                high=max(part.high for part in parts),
                low=min(part.low for part in parts),
                close=parts[-1].close,
                volume=sum(part.volume for part in parts),
            )
        )
    return tuple(result)


def replay_timeframe(at: datetime) -> str:
    """Return the finest timeframe of the files whose window holds ``at``.

    Raise ``OutsideWindowError`` before the first 4h candle opens.
    """
    for timeframe in FILE_TIMEFRAMES:
        if DATASET_WINDOWS[timeframe].start <= at:
            return timeframe
    raise OutsideWindowError(
        f"no candles at {iso(to_ms(at))}, before the dataset window {dataset_window('4h')}"
    )


@dataclass(frozen=True)
class Stretch:
    """A stretch of replayed time and the timeframe of the candles that cover it."""

    timeframe: str
    start: datetime
    end: datetime


def replay_stretches(start: datetime, end: datetime) -> list[Stretch]:
    """Return the stretches of ``start``..``end``, each on the finest timeframe held there."""
    stretches: list[Stretch] = []
    until = end
    for timeframe in FILE_TIMEFRAMES:  # finest first, so each covers up to the next finer
        begins = max(start, DATASET_WINDOWS[timeframe].start)
        if begins < until:
            stretches.append(Stretch(timeframe, begins, until))
            until = begins
        if begins <= start:
            break
    return stretches[::-1]


def replay_candles(symbol: str, start: datetime, end: datetime) -> list[tuple[str, Candle]]:
    """Return the candles of ``symbol`` that open at or after ``start`` and close by ``end``,
    each with its timeframe, oldest first, each stretch of time on the finest timeframe
    the files hold there."""
    symbol = normalize_symbol(symbol)
    candles: list[tuple[str, Candle]] = []
    for stretch in replay_stretches(start, min(end, DATASET_END)):
        tf_ms = TIMEFRAME_MS[stretch.timeframe]
        series = _series(symbol, stretch.timeframe)
        first = bisect_left(series.open_times, to_ms(stretch.start))
        last = bisect_right(series.open_times, to_ms(stretch.end) - tf_ms)
        candles.extend((stretch.timeframe, candle) for candle in series.candles[first:last])
    return candles


def fill_price(symbol: str, at: datetime) -> float:
    """Return the price an order placed at ``at`` fills at: the open of the first candle
    that opens at or after ``at`` (finest timeframe held there), or at the dataset's end,
    the last close."""
    symbol = normalize_symbol(symbol)
    if at < DATASET_END:
        timeframe = replay_timeframe(at)
        series = _series(symbol, timeframe)
        index = bisect_left(series.open_times, to_ms(at))
        if index < len(series.candles):
            return series.candles[index].open
    return _series(symbol, FILE_TIMEFRAMES[0]).candles[-1].close


def funding_between(symbol: str, start: datetime, end: datetime) -> list[tuple[int, float]]:
    """Return the funding settlements of ``symbol`` after ``start`` and by ``end``, as
    (instant in ms, rate per 8 hours), oldest first."""
    times, rates = _funding(normalize_symbol(symbol))
    first = bisect_right(times, to_ms(start))
    last = bisect_right(times, to_ms(end))
    return list(zip(times[first:last], rates[first:last], strict=True))


class DatasetSource:
    """Replay the bundled dataset at any ``as_of`` inside its windows, with no look-ahead."""

    name = "dataset"
    exchange = "binance"
    credit = DATASET_CREDIT
    # Everything is in memory once read: threads would only add overhead.
    max_concurrency = 1

    def default_as_of(self) -> datetime:
        """Return ``DATASET_END``, the instant the last candles close."""
        return DATASET_END

    def available_symbols(self) -> list[str]:
        """Return the seven dataset symbols, BTC first."""
        return list(DATASET_SYMBOLS)

    def fetch_candles(
        self,
        symbol: str,
        timeframe: str,
        limit: int,
        as_of: datetime,
        *,
        min_rows: int | None = None,
    ) -> list[Candle]:
        """Return up to ``limit`` candles closed at ``as_of``, oldest first.

        Raise ``OutsideWindowError`` when fewer than ``min_rows`` (default ``limit``) have
        closed by ``as_of``, or when ``as_of`` is after ``DATASET_END``.
        """
        symbol = self._symbol(symbol)
        tf_ms = check_timeframe(timeframe)
        if limit < 1:
            raise ValueError(f"limit must be at least 1, got {limit}")
        wanted = limit if min_rows is None else min_rows
        as_of_ms = self._as_of_ms(as_of, symbol, timeframe)
        series = _series(symbol, timeframe)
        closed = bisect_right(series.open_times, as_of_ms - tf_ms)
        if closed < wanted:
            window = dataset_window(timeframe)
            raise OutsideWindowError(
                f"{symbol} {timeframe}: {wanted} closed candles wanted at {iso(as_of_ms)}, "
                f"the dataset has {closed} by then (window {window}; the earliest as_of for "
                f"{wanted} candles is {iso(to_ms(window.start) + wanted * tf_ms)})"
            )
        return list(series.candles[max(0, closed - limit) : closed])

    def fetch_price(self, symbol: str, as_of: datetime) -> float:
        """Return the close of the last closed 15m candle (or the finest timeframe with one)."""
        symbol = self._symbol(symbol)
        as_of_ms = self._as_of_ms(as_of, symbol, "price")
        for timeframe in FILE_TIMEFRAMES:
            series = _series(symbol, timeframe)
            closed = bisect_right(series.open_times, as_of_ms - TIMEFRAME_MS[timeframe])
            if closed:
                return series.candles[closed - 1].close
        raise OutsideWindowError(
            f"{symbol}: no price at {iso(as_of_ms)}, before the first closed candle "
            f"(window {dataset_window('4h')})"
        )

    def fetch_fill_price(self, symbol: str, as_of: datetime) -> float:
        """Return the price a market order placed at ``as_of`` fills at (``fill_price``)."""
        symbol = self._symbol(symbol)
        self._as_of_ms(as_of, symbol, "price")
        return fill_price(symbol, as_of)

    def fetch_funding_rate(self, symbol: str, as_of: datetime) -> float | None:
        """Return the last funding rate settled at or before ``as_of`` (None before any)."""
        symbol = self._symbol(symbol)
        as_of_ms = self._as_of_ms(as_of, symbol, "funding")
        times, rates = _funding(symbol)
        settled = bisect_right(times, as_of_ms)
        return rates[settled - 1] if settled else None

    def fetch_open_interest(self, symbol: str, as_of: datetime) -> float | None:
        """Return None: the dataset has no open interest."""
        self._symbol(symbol)
        return None

    def fetch_open_interest_history(
        self, symbol: str, period: str, limit: int, as_of: datetime
    ) -> list[OpenInterestPoint]:
        """Raise ``OpenInterestUnavailableError``: the dataset has no open interest."""
        raise OpenInterestUnavailableError("the dataset source has no open-interest data")

    def _symbol(self, symbol: str) -> str:
        normalised = normalize_symbol(symbol)
        if normalised not in DATASET_SYMBOLS:
            raise UnknownSymbolError(
                f"{normalised} is not in the dataset (it has {', '.join(DATASET_SYMBOLS)})"
            )
        return normalised

    def _as_of_ms(self, as_of: datetime, symbol: str, what: str) -> int:
        as_of_ms = to_ms(as_of)
        if as_of_ms > to_ms(DATASET_END):
            window = DATASET_WINDOWS.get(what, DATASET_WINDOWS["4h"])
            raise OutsideWindowError(
                f"{symbol} {what}: as_of {iso(as_of_ms)} is after the dataset end "
                f"{iso(to_ms(DATASET_END))} (window {window})"
            )
        return as_of_ms
