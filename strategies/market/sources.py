"""The one interface every market source implements, and the factory that picks one.

Two sources exist: ``dataset`` (``strategies.market.dataset``, the bundled real Binance
candles replayed at an ``as_of`` instant) and ``live`` (``strategies.market.live``, any
ccxt exchange, Binance USDT-M futures by default). Both take and return normalised
symbols (``BTCUSDT``) and ``Candle`` objects, and both only ever return *closed* candles:
a candle is visible at ``as_of`` when ``open_time + timeframe <= as_of``.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

from strategies.market.snapshot import TIMEFRAME_MS, Candle

SOURCE_NAMES: tuple[str, ...] = ("dataset", "live")
DEFAULT_EXCHANGE = "binanceusdm"


@dataclass(frozen=True)
class OpenInterestPoint:
    """Open interest (in contracts) at ``timestamp`` (ms since the epoch, UTC)."""

    timestamp: int
    open_interest: float


@runtime_checkable
class MarketSource(Protocol):
    """What the coin selection and the snapshot builder need from a market source.

    ``as_of`` is a timezone-aware datetime; nothing after it is returned.
    """

    name: str
    exchange: str
    credit: str
    max_concurrency: int

    def default_as_of(self) -> datetime:
        """Return the instant a snapshot is taken at when none is given."""
        ...

    def available_symbols(self) -> list[str]:
        """Return the tradable symbols, most liquid first where the source knows it."""
        ...

    def fetch_candles(
        self,
        symbol: str,
        timeframe: str,
        limit: int,
        as_of: datetime,
        *,
        min_rows: int | None = None,
    ) -> list[Candle]:
        """Return up to ``limit`` closed candles at ``as_of``, oldest first.

        Fewer than ``min_rows`` (default ``limit``) is an error.
        """
        ...

    def fetch_price(self, symbol: str, as_of: datetime) -> float:
        """Return the price of ``symbol`` at ``as_of``."""
        ...

    def fetch_fill_price(self, symbol: str, as_of: datetime) -> float:
        """Return the price a market order placed at ``as_of`` fills at (a replay fills
        at the next candle's open; a live source at the current price)."""
        ...

    def fetch_funding_rate(self, symbol: str, as_of: datetime) -> float | None:
        """Return the funding rate per 8 hours at ``as_of``, or None when unknown."""
        ...

    def fetch_open_interest(self, symbol: str, as_of: datetime) -> float | None:
        """Return the open interest in contracts at ``as_of``, or None when unknown."""
        ...

    def fetch_open_interest_history(
        self, symbol: str, period: str, limit: int, as_of: datetime
    ) -> list[OpenInterestPoint]:
        """Return up to ``limit`` open-interest points ``period`` apart, oldest first.

        Raise ``OpenInterestUnavailableError`` when the source has no open interest.
        """
        ...


_SHARED: dict[Any, MarketSource] = {}
_SHARED_LOCK = threading.Lock()


def source_for(
    name: str,
    *,
    exchange: str = DEFAULT_EXCHANGE,
    api_urls: Mapping[str, str] | str | None = None,
    shared: bool = True,
    **options: Any,
) -> MarketSource:
    """Return the market source called ``name`` (``dataset`` or ``live``).

    ``exchange`` and ``api_urls`` apply to ``live`` only: ``api_urls`` overrides ccxt's
    ``urls['api']``, either entry by entry (a mapping) or, given one base URL such as
    ``http://127.0.0.1:8123``, by moving every entry to that host and keeping its path.
    Other ``options`` go to the source's constructor (timeouts, retries, cache TTL).

    With ``shared`` (the default) one instance per distinct set of arguments lives for the
    whole process, so the live source's markets and short cache serve every debate of a
    worker; ``shared=False`` builds a private one.
    """
    if not shared:
        return _new_source(name, exchange=exchange, api_urls=api_urls, **options)
    key = (name, exchange, _freeze(api_urls), _freeze(options))
    with _SHARED_LOCK:
        source = _SHARED.get(key)
        if source is None:
            source = _new_source(name, exchange=exchange, api_urls=api_urls, **options)
            _SHARED[key] = source
        return source


def _freeze(value: Any) -> Any:
    if isinstance(value, Mapping):
        return tuple(sorted((key, _freeze(item)) for key, item in value.items()))
    if isinstance(value, list | tuple):
        return tuple(_freeze(item) for item in value)
    return value


def _new_source(
    name: str,
    *,
    exchange: str,
    api_urls: Mapping[str, str] | str | None,
    **options: Any,
) -> MarketSource:
    if name == "dataset":
        from strategies.market.dataset import DatasetSource

        return DatasetSource(**options)
    if name == "live":
        # Imported here: ccxt costs half a second and 75 MB, which the dataset never needs.
        from strategies.market.live import LiveSource

        return LiveSource(exchange, api_urls=api_urls, **options)
    raise ValueError(f"unknown market source {name!r}: expected one of {', '.join(SOURCE_NAMES)}")


def require_utc(as_of: datetime) -> datetime:
    """Return ``as_of`` in UTC; refuse a naive datetime, whose zone would be a guess."""
    if as_of.tzinfo is None or as_of.utcoffset() is None:
        raise ValueError(f"as_of must be timezone-aware (UTC), got naive {as_of.isoformat()}")
    return as_of.astimezone(UTC)


def to_ms(as_of: datetime) -> int:
    """Return ``as_of`` in milliseconds since the epoch."""
    return int(require_utc(as_of).timestamp() * 1000)


def from_ms(timestamp: int) -> datetime:
    """Return the UTC datetime of ``timestamp`` (ms since the epoch)."""
    return datetime.fromtimestamp(timestamp / 1000, tz=UTC)


def iso(timestamp: int) -> str:
    """Return ``timestamp`` (ms) as compact ISO 8601 UTC, e.g. ``2024-09-05T00:00Z``."""
    moment = from_ms(timestamp)
    if moment.second or moment.microsecond:
        return moment.strftime("%Y-%m-%dT%H:%M:%S") + "Z"
    return moment.strftime("%Y-%m-%dT%H:%MZ")


def check_timeframe(timeframe: str) -> int:
    """Return the length of ``timeframe`` in ms; refuse unknown timeframes."""
    try:
        return TIMEFRAME_MS[timeframe]
    except KeyError:
        known = ", ".join(TIMEFRAME_MS)
        raise ValueError(f"unknown timeframe {timeframe!r}: expected one of {known}") from None
