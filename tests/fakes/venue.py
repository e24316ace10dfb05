"""What the fake exchanges share: a fake venue's HTTP plumbing, prices from the dataset,
and the arithmetic of a USDT-margined perpetual account.

``FakeVenue`` is a real HTTP server on 127.0.0.1 (``BackgroundServer``) that records every
request (``requests``, ``paths()``), answers it by ``(method, path)`` through ``routes``
(``ROUTES`` names a method per endpoint), and obeys faults queued per path: ``fail_next``
(an HTTP status and the venue's own error body, ``error_body``), ``delay_next``,
``drop_next`` (close the connection unanswered) and ``drop_after_next`` (handle the
request, so an order is placed, then close the connection unanswered). ``max_in_flight``
tells how many requests were ever served at once. A request's parameters merge its query
string with a form body or a JSON object body; a JSON body is also kept parsed
(``RecordedRequest.json``), a list included (OKX's batch orders).

Prices come from the bundled dataset (``strategies/data/market``, read with the csv
module) as it stood at the fake's ``now``: the close of the last closed 15m candle (or of
the finest timeframe that has one), unless a test sets one with ``set_price``.

``Position.fill`` applies a fill to a position (netting, flipping, realising profit and
loss) and ``open_funds`` sums the unrealised profit and the initial margin of the open
positions, for every fake account alike.
"""

from __future__ import annotations

import base64
import csv
import hashlib
import hmac
import json
import threading
import time
from bisect import bisect_right
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from functools import cache, wraps
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from strategies.market.dataset import DATA_DIR, DATASET_END, DATASET_SYMBOLS
from tests.fakes.background import BackgroundServer

# The bundled dataset the venues answer from, and its last instant (their clock's start).
DEFAULT_NOW = DATASET_END
SYMBOLS = DATASET_SYMBOLS
INTERVAL_MS: dict[str, int] = {
    "5m": 5 * 60_000,
    "15m": 15 * 60_000,
    "30m": 30 * 60_000,
    "1h": 60 * 60_000,
    "2h": 2 * 60 * 60_000,
    "4h": 4 * 60 * 60_000,
    "6h": 6 * 60 * 60_000,
    "12h": 12 * 60 * 60_000,
    "1d": 24 * 60 * 60_000,
}
Row = tuple[int, str, str, str, str, str]


@dataclass(frozen=True)
class RecordedRequest:
    """One request as the fake received it; ``params`` merges the query string with a form
    body or a JSON object body, ``json`` is the JSON body parsed (None without one)."""

    method: str
    path: str
    params: dict[str, Any]
    headers: dict[str, str]
    body: str
    query: str = ""
    json: Any = None


@dataclass
class Fault:
    """What to do instead of (or before) answering one request to a path."""

    status: int | None = None
    delay_s: float = 0.0
    drop: bool = False
    body: Any = None
    # Handle the request first (an order is placed), then drop the connection.
    drop_after: bool = False


@dataclass
class DatasetMarket:
    """One pair's candles and funding rates from the dataset."""

    klines: dict[str, list[Row]] = field(default_factory=dict)
    open_times: dict[str, list[int]] = field(default_factory=dict)
    funding_times: list[int] = field(default_factory=list)
    funding_rates: list[str] = field(default_factory=list)
    hourly_volume_prefix: list[float] = field(default_factory=list)


@dataclass
class Position:
    """A position of one coin and position side: ``amount`` in contracts, negative when
    short."""

    amount: Decimal = Decimal("0")
    entry_price: Decimal = Decimal("0")

    def fill(self, signed: Decimal, price: Decimal, contract_size: Decimal = Decimal(1)) -> Decimal:
        """Apply a fill of ``signed`` contracts at ``price``; return the realised profit."""
        amount = self.amount
        if amount == 0 or (amount > 0) == (signed > 0):
            total = amount + signed
            self.entry_price = (self.entry_price * abs(amount) + price * abs(signed)) / abs(total)
            self.amount = total
            return Decimal("0")
        closed = min(abs(signed), abs(amount))
        direction = 1 if amount > 0 else -1
        realized = (price - self.entry_price) * closed * direction * contract_size
        self.amount = amount + signed
        if self.amount == 0:
            self.entry_price = Decimal("0")
        elif (self.amount > 0) != (amount > 0):
            self.entry_price = price
        return realized


Handler = Callable[[Any, RecordedRequest], tuple[int, Any]]


def signed(handler: Handler) -> Handler:
    """Make ``handler`` a signed endpoint: a request is answered once the venue's
    ``refuse_unsigned`` lets it through (with credentials set: its key, passphrase and
    signature, as the venue checks them)."""

    @wraps(handler)
    def checked(fake: FakeVenue, request: RecordedRequest) -> tuple[int, Any]:
        refused = fake.refuse_unsigned(request)
        return handler(fake, request) if refused is None else refused

    return checked


class FakeVenue(BackgroundServer):
    """A fake exchange's HTTP side and clock; a subclass names its endpoints (``ROUTES``),
    its order paths (``ORDER_PATHS``) and its error body (``error_body``)."""

    label = "exchange"
    ROUTES: dict[tuple[str, str], str] = {}
    ORDER_PATHS: tuple[str, ...] = ()

    def __init__(
        self,
        now: datetime = DEFAULT_NOW,
        *,
        symbols: tuple[str, ...] = SYMBOLS,
        data_dir: Path = DATA_DIR,
    ) -> None:
        super().__init__()
        self.now_ms = int(now.timestamp() * 1000)
        self.symbols = symbols
        self.requests: list[RecordedRequest] = []
        self.faults: dict[str, list[Fault]] = {}
        self.routes: dict[tuple[str, str], Handler] = {
            key: getattr(type(self), name) for key, name in self.ROUTES.items()
        }
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        self.dataset = {symbol: load_market(data_dir, symbol) for symbol in symbols}
        self.prices: dict[str, Decimal] = {}

    def refuse_unsigned(self, request: RecordedRequest) -> tuple[int, Any] | None:
        """Return the venue's answer to a request of a signed endpoint that it refuses
        (no key, a wrong one, a bad signature), or None to answer it."""
        return None

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        """Return the request handler bound to this venue."""
        return _handler_class(self)

    def error_body(self, status: int) -> Any:
        """Return the venue's error body for an HTTP ``status`` (``fail_next``'s default)."""
        raise NotImplementedError

    # the clock and prices

    def set_now(self, now: datetime) -> None:
        """Move the fake's clock; prices follow the dataset."""
        self.now_ms = int(now.timestamp() * 1000)

    def set_price(self, symbol: str, price: Decimal | str | None) -> None:
        """Set the price of ``symbol`` (its last trade), or go back to the dataset's."""
        with self.lock:
            if price is None:
                self.prices.pop(symbol, None)
            else:
                self.prices[symbol] = Decimal(str(price))

    def price(self, symbol: str) -> Decimal:
        """Return the price of ``symbol`` at ``now``."""
        if symbol in self.prices:
            return self.prices[symbol]
        return Decimal(self._last_close(symbol))

    def closed(self, symbol: str, interval: str, at_ms: int) -> list[Row]:
        """Return the candles of ``symbol`` closed at ``at_ms``."""
        market = self.dataset[symbol]
        stop = bisect_right(market.open_times[interval], at_ms - INTERVAL_MS[interval])
        return market.klines[interval][:stop]

    def _last_close(self, symbol: str) -> str:
        """Return the dataset's close of the last candle of ``symbol`` closed at ``now``
        (``price`` answers, unless a test set one)."""
        for interval in ("15m", "1h", "4h"):
            closed = self.closed(symbol, interval, self.now_ms)
            if closed:
                return closed[-1][4]
        return "0"

    def day_rows(self, symbol: str) -> list[Row]:
        """Return the finest closed candles of the last 24 hours, at least one."""
        day_ago = self.now_ms - INTERVAL_MS["1d"]
        for interval in ("15m", "1h", "4h"):
            rows = [row for row in self.closed(symbol, interval, self.now_ms) if row[0] >= day_ago]
            if rows:
                return rows
        return [(self.now_ms, "0", "0", "0", "0", "0")]

    # faults and inspection

    def fail_next(self, path: str, status: int = 503, times: int = 1, body: Any = None) -> None:
        """Answer the next ``times`` requests to ``path`` with HTTP ``status`` and ``body``,
        by default the venue's own error for the status."""
        if body is None:
            body = self.error_body(status)
        self._queue(path, [Fault(status=status, body=body) for _ in range(times)])

    def delay_next(self, path: str, seconds: float, times: int = 1) -> None:
        """Hold the next ``times`` requests to ``path`` for ``seconds`` before answering."""
        self._queue(path, [Fault(delay_s=seconds) for _ in range(times)])

    def drop_next(self, path: str, times: int = 1) -> None:
        """Close the connection without an answer on the next ``times`` requests to ``path``."""
        self._queue(path, [Fault(drop=True) for _ in range(times)])

    def drop_after_next(self, path: str, times: int = 1) -> None:
        """Handle the next ``times`` requests to ``path`` (placing the order), then drop them."""
        self._queue(path, [Fault(drop_after=True) for _ in range(times)])

    def order_requests(self) -> list[RecordedRequest]:
        """Return the order placements received (``POST`` to an order path), in order."""
        with self.lock:
            return [r for r in self.requests if r.method == "POST" and r.path in self.ORDER_PATHS]

    def paths(self) -> list[str]:
        """Return the paths requested so far, in order."""
        with self.lock:
            return [request.path for request in self.requests]

    def sent(self, method: str, path: str) -> list[dict[str, Any]]:
        """Return the parameters of the requests received on ``method`` ``path``."""
        with self.lock:
            return [r.params for r in self.requests if (r.method, r.path) == (method, path)]

    def _queue(self, path: str, faults: list[Fault]) -> None:
        with self.lock:
            self.faults.setdefault(path, []).extend(faults)

    def _next_fault(self, path: str) -> Fault | None:
        with self.lock:
            queue = self.faults.get(path)
            return queue.pop(0) if queue else None

    def dispatch(self, request: RecordedRequest) -> tuple[int, Any] | None:
        """Record ``request`` and return (status, JSON body), or None to drop the connection."""
        with self.lock:
            self.requests.append(request)
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            return self._answer(request)
        finally:
            with self.lock:
                self.in_flight -= 1

    def _answer(self, request: RecordedRequest) -> tuple[int, Any] | None:
        fault = self._next_fault(request.path)
        if fault is not None:
            if fault.delay_s:
                time.sleep(fault.delay_s)
            if fault.drop:
                return None
            if fault.status is not None:
                return fault.status, fault.body
        handler = self.routes.get((request.method, request.path))
        if handler is None:
            return 404, self.error_body(404)
        answer = handler(self, request)
        if fault is not None and fault.drop_after:
            return None
        return answer


def open_funds(
    positions: Iterable[tuple[str, Position]],
    price: Callable[[str], Decimal],
    leverage: Callable[[str], int],
    contract_size: Callable[[str], Decimal] = lambda symbol: Decimal(1),
) -> tuple[Decimal, Decimal]:
    """Return the unrealised profit and the initial margin of the open ``positions``,
    given as (symbol, position) pairs."""
    unrealized = Decimal("0")
    margin = Decimal("0")
    for symbol, position in positions:
        if not position.amount:
            continue
        size = contract_size(symbol)
        unrealized += (price(symbol) - position.entry_price) * position.amount * size
        margin += abs(position.amount) * size * position.entry_price / leverage(symbol)
    return unrealized, margin


def hmac_sha256(secret: str, payload: str) -> bytes:
    """Return the HMAC-SHA256 digest of ``payload`` under ``secret``."""
    return hmac.new(secret.encode(), payload.encode(), hashlib.sha256).digest()


def same_signature(expected: bytes, given: str, *, encoding: str) -> bool:
    """Say whether ``given`` is ``expected`` in ``encoding`` (``hex`` or ``base64``)."""
    text = expected.hex() if encoding == "hex" else base64.b64encode(expected).decode()
    return hmac.compare_digest(text, given)


@cache
def load_market(data_dir: Path, symbol: str) -> DatasetMarket:
    """Read one pair's files once per process; instances share the result read-only."""
    market = DatasetMarket()
    for interval in ("15m", "1h", "4h"):
        with (data_dir / f"{symbol}-{interval}.csv").open(newline="") as handle:
            reader = csv.reader(handle)
            next(reader)
            market.klines[interval] = [(int(t), o, h, low, c, v) for t, o, h, low, c, v in reader]
    market.klines["1d"] = _daily(market.klines["4h"])
    for interval, rows in market.klines.items():
        market.open_times[interval] = [row[0] for row in rows]
    with (data_dir / f"{symbol}-funding-8h.csv").open(newline="") as handle:
        reader = csv.reader(handle)
        next(reader)
        for timestamp, rate in reader:
            market.funding_times.append(int(timestamp))
            market.funding_rates.append(rate)
    prefix = [0.0]
    for row in market.klines["1h"]:
        prefix.append(prefix[-1] + float(row[5]))
    market.hourly_volume_prefix = prefix
    return market


def _daily(rows_4h: list[Row]) -> list[Row]:
    """Return daily candles made of six 4h candles from 00:00 UTC, as Binance aligns them."""
    day = INTERVAL_MS["1d"]
    result: list[Row] = []
    index = 0
    while index + 6 <= len(rows_4h):
        group = rows_4h[index : index + 6]
        start = group[0][0]
        if start % day or group[-1][0] != start + 5 * INTERVAL_MS["4h"]:
            index += 1
            continue
        volume = 0.0
        for row in group:
            volume += float(row[5])
        result.append(
            (
                start,
                group[0][1],
                repr(max(float(row[2]) for row in group)),
                repr(min(float(row[3]) for row in group)),
                group[-1][4],
                repr(volume),
            )
        )
        index += 6
    return result


def _handler_class(fake: FakeVenue) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_GET(self) -> None:
            self._serve()

        def do_POST(self) -> None:
            self._serve()

        def do_PUT(self) -> None:
            self._serve()

        def do_DELETE(self) -> None:
            self._serve()

        def _serve(self) -> None:
            answer = fake.dispatch(self._request())
            if answer is None:
                self.close_connection = True
                return
            status, payload = answer
            # A text answer is sent as it is: a venue's gateway page rather than JSON.
            textual = isinstance(payload, str)
            data = payload.encode() if textual else json.dumps(payload).encode()
            try:
                self.send_response(status)
                self.send_header("Content-Type", "text/html" if textual else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True

        def _request(self) -> RecordedRequest:
            split = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length).decode() if length else ""
            params: dict[str, Any] = dict(parse_qsl(split.query))
            parsed = None
            if body and "json" in (self.headers.get("Content-Type") or ""):
                try:
                    parsed = json.loads(body)
                except ValueError:
                    parsed = None
                if isinstance(parsed, dict):
                    params.update(parsed)
            elif body:
                params.update(parse_qsl(body))
            return RecordedRequest(
                method=self.command,
                path=split.path,
                params=params,
                headers=dict(self.headers.items()),
                body=body,
                query=split.query,
                json=parsed,
            )

        def log_message(self, format: str, *args: Any) -> None:
            return

    return _Handler
