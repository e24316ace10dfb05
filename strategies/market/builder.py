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
from functools import partial
from typing import Any

from strategies.market.coins import MAX_CANDIDATES, SOURCE_TAGS, CoinSelection, SelectedCoin
from strategies.market.concurrency import run_requests
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
        coins = _checked_coins(self.coins)
        timeframes = _checked_timeframes(self.timeframes)
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
    notes = _Notes(list(spec.notes))
    coins: list[CoinSnapshot] = []
    for index, (coin, fetched) in enumerate(
        zip(spec.coins, _fetch(spec, source, as_of), strict=True)
    ):
        failure = next(
            (fetched[key] for key in (*spec.timeframes, "price") if _failed(fetched[key])), None
        )
        if failure is None:
            coins.append(_coin_snapshot(spec, coin, fetched, notes))
        elif index == 0:
            raise failure  # without its primary coin the debate has nothing to decide
        else:
            notes.lines.append(f"{coin.symbol} dropped: {failure}")
    return MarketSnapshot(
        source=source.name,
        exchange=source.exchange,
        as_of=as_of.strftime("%Y-%m-%dT%H:%M:%SZ"),
        coins=tuple(coins),
        credit=source.credit,
        notes=notes.closed(coins, spec.oi_duration, source.name),
    )


def _fetch(spec: SnapshotSpec, source: MarketSource, as_of: datetime) -> list[dict[str, Any]]:
    """Return, per coin, what each of its requests gave (a value or a ``MarketDataError``),
    all requests run side by side."""
    requests = [
        (index, what, task)
        for index, coin in enumerate(spec.coins)
        for what, task in _requests(spec, source, coin.symbol, as_of).items()
    ]
    outcomes = run_requests([task for _, _, task in requests], source.max_concurrency)
    fetched: list[dict[str, Any]] = [{} for _ in spec.coins]
    for (index, what, _), outcome in zip(requests, outcomes, strict=True):
        fetched[index][what] = outcome
    return fetched


def _requests(
    spec: SnapshotSpec, source: MarketSource, symbol: str, as_of: datetime
) -> dict[str, Callable[[], Any]]:
    """Return the requests of one coin by what they fetch: each timeframe's candles, the
    price, and the funding and open interest the spec asks for."""
    requests: dict[str, Callable[[], Any]] = {
        tf: partial(
            source.fetch_candles,
            symbol,
            tf,
            history_rows(spec.rows_for(tf)),
            as_of,
            min_rows=spec.rows_for(tf),
        )
        for tf in spec.timeframes
    }
    requests["price"] = partial(source.fetch_price, symbol, as_of)
    if spec.include_funding:
        requests["funding"] = partial(source.fetch_funding_rate, symbol, as_of)
    if spec.include_open_interest:
        requests["oi"] = partial(source.fetch_open_interest, symbol, as_of)
        requests["oi_growth"] = partial(
            open_interest_growth, source, symbol, spec.oi_duration, as_of
        )
    return requests


@dataclass
class _Notes:
    """The notes of a snapshot as its coins are built: ``lines`` in coin order, and what
    is said once for all coins after them."""

    lines: list[str]
    short_warmup: dict[str, list[str]] = field(default_factory=dict)
    oi_missing: list[str] = field(default_factory=list)

    def optional(self, value: Any, what: str) -> Any:
        """Return ``value``, or None with a note when it is an error."""
        if _failed(value):
            self.lines.append(f"{what} unavailable: {value}")
            return None
        return value

    def closed(self, coins: list[CoinSnapshot], oi_duration: str, source: str) -> tuple[str, ...]:
        """Return every note: the coins' own, then those said once for all of them."""
        lines = list(self.lines)
        lines.extend(
            f"indicator warm-up shortened by the data window: {label} for {', '.join(symbols)}"
            for label, symbols in self.short_warmup.items()
        )
        if any(coin.open_interest_change_pct is not None for coin in coins):
            lines.append(f"open-interest change is over the last {oi_duration}")
        if self.oi_missing:
            lines.append(
                f"open-interest growth not available on the {source} source "
                f"for {', '.join(self.oi_missing)}"
            )
        return tuple(lines)


def _coin_snapshot(
    spec: SnapshotSpec, coin: SelectedCoin, fetched: dict[str, Any], notes: _Notes
) -> CoinSnapshot:
    """Return the snapshot of a coin whose candles and price were fetched."""
    return CoinSnapshot(
        symbol=coin.symbol,
        source_tag=coin.source_tag,
        price=fetched["price"],
        timeframes=tuple(
            _view(spec, timeframe, fetched[timeframe], coin.symbol, notes)
            for timeframe in spec.timeframes
        ),
        funding_rate=notes.optional(fetched.get("funding"), f"{coin.symbol} funding"),
        open_interest=notes.optional(fetched.get("oi"), f"{coin.symbol} open interest"),
        open_interest_change_pct=_oi_change(fetched.get("oi_growth"), coin.symbol, notes),
    )


def _view(
    spec: SnapshotSpec, timeframe: str, candles: list[Candle], symbol: str, notes: _Notes
) -> TimeframeView:
    """Return the rows shown of ``timeframe`` and its indicators over every candle."""
    rows = spec.rows_for(timeframe)
    if len(candles) < history_rows(rows):
        label = f"{timeframe} ({len(candles)} candles)"
        notes.short_warmup.setdefault(label, []).append(symbol)
    return TimeframeView(
        timeframe=timeframe,
        candles=tuple(candles[-rows:]),
        indicators=compute_indicators(candles, spec.indicators),
    )


def _oi_change(growth: Any, symbol: str, notes: _Notes) -> float | None:
    """Return the open-interest change in percent; a source without the history is
    noted once for all its coins, any other failure per coin."""
    if growth is None:
        return None
    if isinstance(growth, OpenInterestUnavailableError):
        notes.oi_missing.append(symbol)
        return None
    found = notes.optional(growth, f"{symbol} open-interest growth")
    return None if found is None else found.change_pct


def _failed(value: Any) -> bool:
    return isinstance(value, MarketDataError)


def _checked_coins(items: Iterable[SelectedCoin | Iterable[str]]) -> tuple[SelectedCoin, ...]:
    """Return ``items`` as coins; refuse too few, too many or the same one twice."""
    coins = tuple(_coin(item) for item in items)
    if not 1 <= len(coins) <= MAX_CANDIDATES:
        raise ValueError(f"a snapshot needs 1 to {MAX_CANDIDATES} coins, got {len(coins)}")
    symbols = [coin.symbol for coin in coins]
    if len(set(symbols)) != len(symbols):
        raise ValueError(f"duplicate coins in {', '.join(symbols)}")
    return coins


def _checked_timeframes(timeframes: Iterable[str]) -> tuple[str, ...]:
    """Return ``timeframes`` in ``TIMEFRAMES`` order; refuse none or an unknown one."""
    given = tuple(timeframes)
    if not given or any(tf not in TIMEFRAMES for tf in given):
        raise ValueError(f"timeframes must be some of {', '.join(TIMEFRAMES)}, got {list(given)}")
    return tuple(tf for tf in TIMEFRAMES if tf in given)


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
