"""Build the market snapshot a debate looks at, from any market source.

``build_snapshot(spec, source)`` fetches, for every candidate coin, the closed candles of
each timeframe (the rows shown plus ``WARMUP_ROWS`` of warm-up for the indicators, where
the data allows), the price, and optionally the funding rate and open interest (with its
growth over ``oi_duration`` where the source has history), all at ``spec.as_of`` (the
source's "now" when None). Requests run concurrently up to the source's
``max_concurrency``.

A coin other than the first whose data cannot be had is dropped, with a note; a failure
on the first coin (the debate's primary) raises. Missing funding or open interest is
None, with a note. Notes from coin selection (``spec.notes``) come first.

``as_of`` is recorded (and used) to the whole second, rounded down, so the stored ISO
string is exactly the instant the data was taken at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from strategies.market.coins import MAX_CANDIDATES, SOURCE_TAGS, CoinSelection, SelectedCoin
from strategies.market.concurrency import run_all
from strategies.market.exceptions import MarketDataError, OpenInterestUnavailableError
from strategies.market.indicators import (
    INDICATOR_NAMES,
    check_indicators,
    compute_indicators,
    history_rows,
)
from strategies.market.oi import check_duration, open_interest_growth
from strategies.market.snapshot import (
    TIMEFRAMES,
    Candle,
    CoinSnapshot,
    MarketSnapshot,
    TimeframeView,
)
from strategies.market.sources import MarketSource, require_utc, source_for
from strategies.market.symbols import normalize_symbol

DEFAULT_TIMEFRAMES: tuple[str, ...] = ("15m", "1h", "4h")
DEFAULT_ROWS = 20
MAX_ROWS = 200

__all__ = ["DEFAULT_ROWS", "MAX_ROWS", "SnapshotSpec", "build_snapshot", "source_for"]


@dataclass(frozen=True)
class SnapshotSpec:
    """What to put in a snapshot.

    ``coins`` are ``SelectedCoin`` or ``(symbol, tag)`` pairs, primary first; ``rows`` is
    the number of candles shown, one number for every timeframe or one per timeframe.
    """

    coins: tuple[SelectedCoin, ...]
    timeframes: tuple[str, ...] = DEFAULT_TIMEFRAMES
    rows: int | Mapping[str, int] = DEFAULT_ROWS
    indicators: tuple[str, ...] = INDICATOR_NAMES
    include_funding: bool = True
    include_open_interest: bool = True
    oi_duration: str = "24h"
    as_of: datetime | None = None
    notes: tuple[str, ...] = field(default_factory=tuple)

    def __post_init__(self) -> None:
        coins = tuple(_coin(item) for item in self.coins)
        if not 1 <= len(coins) <= MAX_CANDIDATES:
            raise ValueError(f"a snapshot needs 1 to {MAX_CANDIDATES} coins, got {len(coins)}")
        symbols = [coin.symbol for coin in coins]
        if len(set(symbols)) != len(symbols):
            raise ValueError(f"duplicate coins in {', '.join(symbols)}")
        unknown = [tf for tf in self.timeframes if tf not in TIMEFRAMES]
        if unknown or not self.timeframes:
            raise ValueError(
                f"timeframes must be some of {', '.join(TIMEFRAMES)}, got {list(self.timeframes)}"
            )
        timeframes = tuple(tf for tf in TIMEFRAMES if tf in self.timeframes)
        rows = {tf: _rows_for(self.rows, tf) for tf in timeframes}
        check_duration(self.oi_duration)
        object.__setattr__(self, "coins", coins)
        object.__setattr__(self, "timeframes", timeframes)
        object.__setattr__(self, "rows", rows)
        object.__setattr__(self, "indicators", check_indicators(self.indicators))
        object.__setattr__(self, "notes", tuple(self.notes))
        if self.as_of is not None:
            object.__setattr__(self, "as_of", require_utc(self.as_of))

    @classmethod
    def from_selection(cls, selection: CoinSelection, **settings: Any) -> SnapshotSpec:
        """Return a spec for the coins of ``selection``, carrying its notes."""
        return cls(coins=selection.coins, notes=selection.notes, **settings)

    def rows_for(self, timeframe: str) -> int:
        """Return the number of candles shown for ``timeframe``."""
        rows = self.rows
        assert isinstance(rows, Mapping)
        return rows[timeframe]


def build_snapshot(spec: SnapshotSpec, source: MarketSource) -> MarketSnapshot:
    """Return the snapshot of ``spec.coins`` from ``source`` at ``spec.as_of``."""
    as_of = (spec.as_of or source.default_as_of()).replace(microsecond=0)
    tasks: list[Callable[[], Any]] = []
    slots: list[tuple[int, str]] = []

    def add(index: int, what: str, task: Callable[[], Any]) -> None:
        tasks.append(task)
        slots.append((index, what))

    for index, coin in enumerate(spec.coins):
        symbol = coin.symbol
        for timeframe in spec.timeframes:
            add(
                index,
                timeframe,
                lambda s=symbol, tf=timeframe: source.fetch_candles(
                    s, tf, history_rows(spec.rows_for(tf)), as_of, min_rows=spec.rows_for(tf)
                ),
            )
        add(index, "price", lambda s=symbol: source.fetch_price(s, as_of))
        if spec.include_funding:
            add(index, "funding", lambda s=symbol: source.fetch_funding_rate(s, as_of))
        if spec.include_open_interest:
            add(index, "oi", lambda s=symbol: source.fetch_open_interest(s, as_of))
            add(
                index,
                "oi_growth",
                lambda s=symbol: open_interest_growth(source, s, spec.oi_duration, as_of),
            )
    outcomes = run_all(tasks, source.max_concurrency)
    results: list[dict[str, Any]] = [{} for _ in spec.coins]
    for (index, what), outcome in zip(slots, outcomes, strict=True):
        if isinstance(outcome, Exception) and not isinstance(outcome, MarketDataError):
            raise outcome
        results[index][what] = outcome

    notes = list(spec.notes)
    coins: list[CoinSnapshot] = []
    short_warmup: dict[str, list[str]] = {}
    oi_missing: list[str] = []
    for index, coin in enumerate(spec.coins):
        result = results[index]
        failure = next(
            (
                result[key]
                for key in (*spec.timeframes, "price")
                if isinstance(result[key], Exception)
            ),
            None,
        )
        if failure is not None:
            if index == 0:
                raise failure
            notes.append(f"{coin.symbol} dropped: {failure}")
            continue
        views = []
        for timeframe in spec.timeframes:
            candles: list[Candle] = result[timeframe]
            rows = spec.rows_for(timeframe)
            if len(candles) < history_rows(rows):
                short_warmup.setdefault(f"{timeframe} ({len(candles)} candles)", []).append(
                    coin.symbol
                )
            views.append(
                TimeframeView(
                    timeframe=timeframe,
                    candles=tuple(candles[-rows:]),
                    indicators=compute_indicators(candles, spec.indicators),
                )
            )
        funding = _optional(result.get("funding"), f"{coin.symbol} funding", notes)
        open_interest = _optional(result.get("oi"), f"{coin.symbol} open interest", notes)
        growth = result.get("oi_growth")
        change = None
        if isinstance(growth, OpenInterestUnavailableError):
            oi_missing.append(coin.symbol)
        elif growth is not None:
            change = _optional(growth, f"{coin.symbol} open-interest growth", notes)
            change = None if change is None else change.change_pct
        coins.append(
            CoinSnapshot(
                symbol=coin.symbol,
                source_tag=coin.source_tag,
                price=result["price"],
                timeframes=tuple(views),
                funding_rate=funding,
                open_interest=open_interest,
                open_interest_change_pct=change,
            )
        )
    for label, symbols in short_warmup.items():
        notes.append(
            f"indicator warm-up shortened by the data window: {label} for {', '.join(symbols)}"
        )
    if any(coin.open_interest_change_pct is not None for coin in coins):
        notes.append(f"open-interest change is over the last {spec.oi_duration}")
    if oi_missing:
        notes.append(
            f"open-interest growth not available on the {source.name} source "
            f"for {', '.join(oi_missing)}"
        )
    return MarketSnapshot(
        source=source.name,
        exchange=source.exchange,
        as_of=as_of.strftime("%Y-%m-%dT%H:%M:%SZ"),
        coins=tuple(coins),
        credit=source.credit,
        notes=tuple(notes),
    )


def _coin(item: SelectedCoin | Iterable[str]) -> SelectedCoin:
    if isinstance(item, SelectedCoin):
        symbol, tag = item.symbol, item.source_tag
    else:
        symbol, tag = item
    if tag not in SOURCE_TAGS:
        raise ValueError(f"unknown source tag {tag!r} for {symbol}: expected one of {SOURCE_TAGS}")
    return SelectedCoin(normalize_symbol(symbol), tag)


def _rows_for(rows: int | Mapping[str, int], timeframe: str) -> int:
    value = rows.get(timeframe, DEFAULT_ROWS) if isinstance(rows, Mapping) else rows
    if not isinstance(value, int) or not 1 <= value <= MAX_ROWS:
        raise ValueError(f"rows for {timeframe} must be between 1 and {MAX_ROWS}, got {value!r}")
    return value


def _optional(value: Any, what: str, notes: list[str]) -> Any:
    if isinstance(value, Exception):
        notes.append(f"{what} unavailable: {value}")
        return None
    return value
