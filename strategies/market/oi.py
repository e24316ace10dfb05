"""Open-interest growth and the ``oi_top`` ranking.

Growth over a duration (``1h``, ``4h``, ``24h``) is the change, in percent, from the
open interest one duration before the latest history point to that latest point. It is
read from the source's open-interest history, sampled at ``OI_PERIODS[duration]``
(Binance ``/futures/data/openInterestHist``: 5m points for 1h, 15m for 4h, 1h for 24h).

The ranking looks at the ``universe_size`` (default 30) most liquid symbols of the source
(its ``available_symbols`` order: 24h quote volume on the live source), asks for their
histories concurrently and keeps the ``limit`` with the highest growth (falling open
interest ranks last; ties go to the alphabetically first symbol). A symbol without
enough history is left out and noted. A source with no open interest at all (the dataset)
raises ``OpenInterestUnavailableError``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from strategies.market.concurrency import run_requests
from strategies.market.exceptions import (
    MarketDataError,
    OpenInterestUnavailableError,
    SourceUnavailableError,
)
from strategies.market.sources import MarketSource, iso, require_utc
from strategies.market.symbols import normalize_symbols

OI_DURATIONS: tuple[str, ...] = ("1h", "4h", "24h")
OI_DURATION_MS: dict[str, int] = {"1h": 3_600_000, "4h": 14_400_000, "24h": 86_400_000}
# (history period, number of points spanning the duration plus one)
OI_PERIODS: dict[str, tuple[str, int]] = {"1h": ("5m", 13), "4h": ("15m", 17), "24h": ("1h", 25)}
OI_UNIVERSE_SIZE = 30


@dataclass(frozen=True)
class OpenInterestGrowth:
    """Open interest of ``symbol`` at its latest point and its growth over ``duration``."""

    symbol: str
    duration: str
    open_interest: float
    change_pct: float


@dataclass(frozen=True)
class OpenInterestRanking:
    """Symbols by open-interest growth, highest first, and what was left out and why."""

    entries: tuple[OpenInterestGrowth, ...]
    notes: tuple[str, ...] = ()

    @property
    def symbols(self) -> list[str]:
        """Return the ranked symbols."""
        return [entry.symbol for entry in self.entries]


def check_duration(duration: str) -> str:
    """Return ``duration`` if it is one of ``OI_DURATIONS``; refuse it otherwise."""
    if duration not in OI_DURATIONS:
        known = ", ".join(OI_DURATIONS)
        raise ValueError(f"unknown open-interest duration {duration!r}: expected one of {known}")
    return duration


def open_interest_growth(
    source: MarketSource, symbol: str, duration: str, as_of: datetime
) -> OpenInterestGrowth:
    """Return the open-interest growth of ``symbol`` over ``duration`` up to ``as_of``.

    Raise ``OpenInterestUnavailableError`` when the history does not reach back one
    duration or starts at zero.
    """
    period, points = OI_PERIODS[check_duration(duration)]
    history = source.fetch_open_interest_history(symbol, period, points, require_utc(as_of))
    if not history:
        raise OpenInterestUnavailableError(f"{symbol}: no open-interest history")
    latest = history[-1]
    target = latest.timestamp - OI_DURATION_MS[duration]
    earlier = [point for point in history if point.timestamp <= target]
    if not earlier:
        raise OpenInterestUnavailableError(
            f"{symbol}: open-interest history starts at {iso(history[0].timestamp)}, "
            f"less than {duration} before {iso(latest.timestamp)}"
        )
    base = earlier[-1]
    if base.open_interest <= 0:
        raise OpenInterestUnavailableError(
            f"{symbol}: open interest was zero at {iso(base.timestamp)}"
        )
    change = (latest.open_interest - base.open_interest) / base.open_interest * 100.0
    return OpenInterestGrowth(symbol, duration, latest.open_interest, change)


def rank_open_interest_growth(
    source: MarketSource,
    *,
    duration: str,
    limit: int,
    as_of: datetime | None = None,
    universe: Sequence[str] | None = None,
    universe_size: int = OI_UNIVERSE_SIZE,
) -> OpenInterestRanking:
    """Return the ``limit`` symbols of the universe with the highest open-interest growth.

    Raise ``OpenInterestUnavailableError`` when the source has no open interest for any
    of them, ``SourceUnavailableError`` when none could be fetched.
    """
    check_duration(duration)
    if limit < 1:
        raise ValueError(f"limit must be at least 1, got {limit}")
    moment = source.default_as_of() if as_of is None else require_utc(as_of)
    symbols = _universe(source, universe, universe_size)
    outcomes = run_requests(
        [partial(open_interest_growth, source, symbol, duration, moment) for symbol in symbols],
        source.max_concurrency,
    )
    entries = [outcome for outcome in outcomes if isinstance(outcome, OpenInterestGrowth)]
    errors = [outcome for outcome in outcomes if isinstance(outcome, MarketDataError)]
    if not entries:
        raise _nothing_ranked(errors, len(symbols))
    entries.sort(key=lambda entry: (-entry.change_pct, entry.symbol))
    notes = tuple(f"open interest skipped: {error}" for error in errors)
    return OpenInterestRanking(tuple(entries[:limit]), notes)


def _universe(source: MarketSource, universe: Sequence[str] | None, size: int) -> list[str]:
    """Return the symbols to rank: ``universe`` when given, else the source's ``size``
    most liquid; refuse an empty list."""
    if universe is not None:
        symbols = list(normalize_symbols(universe))
    else:
        symbols = source.available_symbols()[:size]
    if not symbols:
        raise OpenInterestUnavailableError(f"the {source.name} source lists no symbols")
    return symbols


def _nothing_ranked(errors: list[MarketDataError], count: int) -> MarketDataError:
    """Return the error of a ranking in which none of ``count`` symbols had a growth:
    the source has no open interest for them, or it could not be fetched."""
    if not all(isinstance(error, OpenInterestUnavailableError) for error in errors):
        return SourceUnavailableError(
            f"no open interest could be fetched for {count} symbols, e.g. {errors[0]}"
        )
    messages = {str(error) for error in errors}
    if len(messages) == 1:
        return OpenInterestUnavailableError(messages.pop())
    return OpenInterestUnavailableError(
        f"no usable open-interest history for any of {count} symbols, e.g. {errors[0]}"
    )
