"""The live market source: an exchange through ccxt (Binance USDT-M futures by default).

Concurrency: the snapshot builder and the open-interest ranking fan requests out over a
thread pool (``max_concurrency`` threads, default 8), calling this source's plain
synchronous methods. Threads rather than ``ccxt.async_support`` because everything around
this code is synchronous (Celery tasks, Django services) and an event loop per snapshot
would have to own its aiohttp session, markets and cache; threads keep one small
interface for both sources. ccxt's maintainers advise one exchange instance per thread
(an instance's rate limiter and HTTP session are not thread-safe), so the source keeps a
pool of instances that borrow the markets of the first one (loaded once, under a lock),
and a rate limiter of its own shared by all of them (one request start per
``exchange.rateLimit`` ms, 50 ms for Binance: about 20 requests a second).

An API URL override (``api_urls``, an operator's setting) must obey the outbound policy
(``arena.outbound``), and no redirect is followed. Every request has a timeout
(``timeout_s``, default 10 s) and is retried on
``ccxt.NetworkError`` (timeouts, dropped connections, 5xx, 429) and on the rest of
``ccxt.OperationFailed`` (Binance's -1000/-1001 "internal error, please try again", empty
or garbled answers; safe because every call here is a read) up to ``attempts`` times in
all, with exponential backoff and jitter; then ``SourceUnavailableError`` is raised.
Other errors (bad request, unknown symbol) are not retried.

Only closed candles are returned: klines are asked for with ``endTime`` set to the open
time of the last candle closed at ``as_of``, and anything still open is dropped again.

Cache: results are kept ``cache_ttl_s`` (default 15 s) per (symbol, timeframe) for
candles and per symbol for tickers, funding and open interest, so the debates of one
worker taking snapshots at about the same time share their requests. A cached candle
list is reused only for the same last closed candle, so the TTL never hides a new one.

Price, funding rate and open interest are the exchange's current values (its 24h
ticker's last price, ``premiumIndex`` ``lastFundingRate``, ``openInterest``): ``as_of``
bounds candles and open-interest history only, as an exchange cannot answer "the
funding rate at an earlier instant" from these endpoints.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar
from urllib.parse import urlsplit

import ccxt

from arena.outbound import OutboundRefused, ccxt_session, check_url
from strategies.market.exceptions import (
    MarketDataError,
    OpenInterestUnavailableError,
    OutsideWindowError,
    SourceUnavailableError,
    UnknownSymbolError,
)
from strategies.market.snapshot import Candle
from strategies.market.sources import (
    OpenInterestPoint,
    check_timeframe,
    iso,
    to_ms,
)
from strategies.market.symbols import QUOTE, from_ccxt, normalize_symbol, to_ccxt

DEFAULT_TIMEOUT_S = 10.0
DEFAULT_ATTEMPTS = 3
DEFAULT_BACKOFF_S = 0.5
DEFAULT_CACHE_TTL_S = 15.0
DEFAULT_MAX_CONCURRENCY = 8
# ccxt's binance fetch_ohlcv asks for at most 1000 klines per request; one is spare.
MAX_CANDLES = 999

T = TypeVar("T")


@dataclass(frozen=True)
class _CandleEntry:
    expires_at: float
    last_open_time: int
    requested: int
    candles: tuple[Candle, ...]


class _Throttle:
    """Space request starts ``interval_s`` apart across all threads."""

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s
        self._lock = threading.Lock()
        self._next_at = 0.0

    def wait(self) -> None:
        if self.interval_s <= 0:
            return
        with self._lock:
            now = time.monotonic()
            start = max(now, self._next_at)
            self._next_at = start + self.interval_s
        if start > now:
            time.sleep(start - now)


class LiveSource:
    """Market data from a ccxt exchange, closed candles only, cached briefly."""

    name = "live"

    def __init__(
        self,
        exchange: str = "binanceusdm",
        *,
        api_urls: Mapping[str, str] | str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
        attempts: int = DEFAULT_ATTEMPTS,
        backoff_s: float = DEFAULT_BACKOFF_S,
        cache_ttl_s: float = DEFAULT_CACHE_TTL_S,
        max_concurrency: int = DEFAULT_MAX_CONCURRENCY,
        min_request_interval_s: float | None = None,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        exchange_class = getattr(ccxt, exchange, None)
        if exchange not in ccxt.exchanges or exchange_class is None:
            raise ValueError(f"unknown ccxt exchange {exchange!r}")
        _check_overrides(api_urls)
        if attempts < 1:
            raise ValueError(f"attempts must be at least 1, got {attempts}")
        self.exchange = exchange
        self.max_concurrency = max_concurrency
        self._exchange_class = exchange_class
        self._api_urls = api_urls
        self._config = {
            "timeout": int(timeout_s * 1000),
            # Our own limiter spans all instances; ccxt's would count per instance.
            "enableRateLimit": False,
            "options": {"fetchCurrencies": False},
            **(config or {}),
        }
        self._attempts = attempts
        self._backoff_s = backoff_s
        self._ttl_s = cache_ttl_s
        self._lock = threading.Lock()
        self._markets_lock = threading.Lock()
        self._idle: list[ccxt.Exchange] = []
        self._primary = self._new_exchange()
        self.credit = f"Source: {self._primary.name}"
        interval = (
            self._primary.rateLimit / 1000
            if min_request_interval_s is None
            else min_request_interval_s
        )
        self._throttle = _Throttle(interval)
        self._markets: dict[str, str] | None = None
        self._candles: dict[tuple[str, str], _CandleEntry] = {}
        self._values: dict[tuple[str, str], tuple[float, Any]] = {}

    # MarketSource

    def default_as_of(self) -> datetime:
        """Return the current time (UTC)."""
        return datetime.now(UTC)

    def available_symbols(self) -> list[str]:
        """Return the active USDT-margined perpetuals, highest 24h quote volume first."""
        markets = self._load_markets()
        volumes = self._cached(("tickers", "*"), self._ticker_volumes)
        return sorted(markets, key=lambda symbol: (-volumes.get(symbol, -1.0), symbol))

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

        Raise ``OutsideWindowError`` when the exchange has fewer than ``min_rows``
        (default ``limit``) closed candles by then.
        """
        unified = self._unified(symbol)
        symbol = from_ccxt(unified)
        tf_ms = check_timeframe(timeframe)
        if not 1 <= limit <= MAX_CANDLES:
            raise ValueError(f"limit must be between 1 and {MAX_CANDLES}, got {limit}")
        as_of_ms = to_ms(as_of)
        last_open = as_of_ms // tf_ms * tf_ms - tf_ms
        candles = self._cached_candles(symbol, timeframe, limit, last_open)
        if candles is None:
            raw = self._call(
                f"{symbol} {timeframe} candles",
                lambda exchange: exchange.fetch_ohlcv(
                    unified, timeframe, limit=limit + 1, params={"until": last_open}
                ),
            )
            candles = tuple(
                Candle(
                    open_time=int(row[0]),
                    open=float(row[1]),
                    high=float(row[2]),
                    low=float(row[3]),
                    close=float(row[4]),
                    volume=float(row[5] or 0.0),
                )
                for row in raw
                if row[0] <= last_open
            )
            with self._lock:
                self._candles[(symbol, timeframe)] = _CandleEntry(
                    time.monotonic() + self._ttl_s, last_open, limit, candles
                )
        wanted = limit if min_rows is None else min_rows
        if len(candles) < wanted:
            raise OutsideWindowError(
                f"{symbol} {timeframe}: {wanted} closed candles wanted at {iso(as_of_ms)}, "
                f"{self.exchange} has {len(candles)} by then"
            )
        return list(candles[-limit:])

    def fetch_price(self, symbol: str, as_of: datetime) -> float:
        """Return the last traded price (24h ticker)."""
        unified = self._unified(symbol)
        ticker = self._cached(
            ("ticker", unified),
            lambda: self._call(f"{symbol} ticker", lambda ex: ex.fetch_ticker(unified)),
        )
        price = ticker.get("last") or ticker.get("close")
        if price is None:
            raise MarketDataError(f"{self.exchange} returned no price for {from_ccxt(unified)}")
        return float(price)

    def fetch_fill_price(self, symbol: str, as_of: datetime) -> float:
        """Return the price a market order placed now fills at: the last traded price."""
        return self.fetch_price(symbol, as_of)

    def fetch_funding_rate(self, symbol: str, as_of: datetime) -> float | None:
        """Return the current funding rate per 8 hours, or None when the exchange has none."""
        unified = self._unified(symbol)
        if not self._primary.has.get("fetchFundingRate"):
            return None
        funding = self._cached(
            ("funding", unified),
            lambda: self._call(f"{symbol} funding", lambda ex: ex.fetch_funding_rate(unified)),
        )
        rate = funding.get("fundingRate")
        return None if rate is None else float(rate)

    def fetch_open_interest(self, symbol: str, as_of: datetime) -> float | None:
        """Return the current open interest in contracts, or None when the exchange has none."""
        unified = self._unified(symbol)
        if not self._primary.has.get("fetchOpenInterest"):
            return None
        interest = self._cached(
            ("open_interest", unified),
            lambda: self._call(
                f"{symbol} open interest", lambda ex: ex.fetch_open_interest(unified)
            ),
        )
        amount = interest.get("openInterestAmount")
        return None if amount is None else float(amount)

    def fetch_open_interest_history(
        self, symbol: str, period: str, limit: int, as_of: datetime
    ) -> list[OpenInterestPoint]:
        """Return up to ``limit`` open-interest points ``period`` apart up to ``as_of``."""
        unified = self._unified(symbol)
        if not self._primary.has.get("fetchOpenInterestHistory"):
            raise OpenInterestUnavailableError(
                f"{self.exchange} has no open-interest history ({from_ccxt(unified)})"
            )
        as_of_ms = to_ms(as_of)
        history = self._cached(
            ("open_interest_history", f"{unified} {period} {limit} {as_of_ms // 60_000}"),
            lambda: self._call(
                f"{symbol} open-interest history",
                lambda ex: ex.fetch_open_interest_history(
                    unified, period, limit=limit, params={"until": as_of_ms}
                ),
            ),
        )
        points = [
            OpenInterestPoint(int(entry["timestamp"]), float(entry["openInterestAmount"]))
            for entry in history
            if entry.get("timestamp") is not None
            and entry.get("openInterestAmount") is not None
            and entry["timestamp"] <= as_of_ms
        ]
        return sorted(points, key=lambda point: point.timestamp)[-limit:]

    # internals

    def _new_exchange(self) -> ccxt.Exchange:
        exchange = self._exchange_class({**self._config, "session": ccxt_session()})
        if self._api_urls is not None:
            exchange.urls["api"] = override_api_urls(exchange.urls["api"], self._api_urls)
        return exchange

    @contextmanager
    def _borrow(self) -> Iterator[ccxt.Exchange]:
        with self._lock:
            exchange = self._idle.pop() if self._idle else None
        if exchange is None:
            exchange = self._new_exchange()
            exchange.set_markets_from_exchange(self._primary)
        try:
            yield exchange
        finally:
            with self._lock:
                self._idle.append(exchange)

    def _load_markets(self) -> dict[str, str]:
        with self._markets_lock:
            if self._markets is None:
                self._retry("markets", lambda: self._primary.load_markets())
                self._markets = {
                    from_ccxt(market["symbol"]): market["symbol"]
                    for market in self._primary.markets.values()
                    if market.get("swap")
                    and market.get("linear")
                    and market.get("quote") == QUOTE
                    and market.get("settle") == QUOTE
                    and market.get("active") is not False
                    and _is_plain(market["symbol"])
                }
            return self._markets

    def _unified(self, symbol: str) -> str:
        normalised = normalize_symbol(symbol)
        markets = self._load_markets()
        if normalised not in markets:
            raise UnknownSymbolError(
                f"{normalised} ({to_ccxt(normalised)}) is not an active {QUOTE} perpetual "
                f"on {self.exchange}"
            )
        return markets[normalised]

    def _ticker_volumes(self) -> dict[str, float]:
        tickers = self._call("tickers", lambda exchange: exchange.fetch_tickers())
        volumes: dict[str, float] = {}
        for unified, ticker in tickers.items():
            if not _is_plain(unified) or not unified.endswith(f":{QUOTE}"):
                continue
            volumes[from_ccxt(unified)] = float(ticker.get("quoteVolume") or 0.0)
        return volumes

    def _cached_candles(
        self, symbol: str, timeframe: str, limit: int, last_open: int
    ) -> tuple[Candle, ...] | None:
        with self._lock:
            entry = self._candles.get((symbol, timeframe))
        if (
            entry is not None
            and entry.expires_at > time.monotonic()
            and entry.last_open_time == last_open
            and entry.requested >= limit
        ):
            return entry.candles
        return None

    def _cached(self, key: tuple[str, str], load: Callable[[], T]) -> T:
        now = time.monotonic()
        with self._lock:
            hit = self._values.get(key)
        if hit is not None and hit[0] > now:
            return hit[1]
        value = load()
        with self._lock:
            self._values[key] = (time.monotonic() + self._ttl_s, value)
        return value

    def _call(self, what: str, request: Callable[[ccxt.Exchange], T]) -> T:
        self._load_markets()

        def attempt() -> T:
            with self._borrow() as exchange:
                return request(exchange)

        return self._retry(what, attempt)

    def _retry(self, what: str, attempt: Callable[[], T]) -> T:
        for number in range(1, self._attempts + 1):
            self._throttle.wait()
            try:
                return attempt()
            except ccxt.BadSymbol as error:
                raise UnknownSymbolError(f"{self.exchange} {what}: {error}") from error
            except ccxt.OperationFailed as error:
                if number == self._attempts:
                    raise SourceUnavailableError(
                        f"{self.exchange} {what}: no answer after {self._attempts} attempts "
                        f"({type(error).__name__}: {error})"
                    ) from error
                delay = self._backoff_s * 2 ** (number - 1)
                time.sleep(delay * (1 + random.random() / 4))
            except ccxt.BaseError as error:
                raise MarketDataError(
                    f"{self.exchange} {what}: {type(error).__name__}: {error}"
                ) from error
        raise AssertionError("unreachable")


def _check_overrides(api_urls: Mapping[str, str] | str | None) -> None:
    """Raise ``SourceUnavailableError`` if an API URL override breaks the outbound policy."""
    if api_urls is None:
        return
    for url in [api_urls] if isinstance(api_urls, str) else api_urls.values():
        try:
            check_url(url)
        except OutboundRefused as error:
            raise SourceUnavailableError(f"the market API URL {url} is refused: {error}") from None


def _is_plain(unified: str) -> bool:
    """Return whether ``unified`` is a perpetual (no expiry suffix after the settle asset)."""
    return "-" not in unified.partition(":")[2]


def override_api_urls(urls: Any, override: Mapping[str, str] | str) -> Any:
    """Return ccxt ``urls['api']`` moved to ``override``'s host, or updated from a mapping."""
    if isinstance(override, Mapping):
        return {**urls, **override} if isinstance(urls, Mapping) else urls
    base = override.rstrip("/")
    if isinstance(urls, str):
        return base + urlsplit(urls).path
    if isinstance(urls, Mapping):
        return {key: override_api_urls(value, base) for key, value in urls.items()}
    return urls
