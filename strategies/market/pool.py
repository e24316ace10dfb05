"""The coin pool: an HTTP endpoint (configured per strategy) that returns ranked coins.

``GET <pool_url>`` must answer 2xx with JSON in one of these shapes, best-ranked first:

- a list of symbols: ``["BTCUSDT", "eth", "SOL/USDT"]``
- a list of objects with a ``symbol`` (or ``pair``) field: ``[{"symbol": "BTCUSDT", ...}]``
- either list under ``data`` or ``coins``: ``{"data": [...]}``, ``{"coins": [...]}``,
  also nested as ``{"data": {"coins": [...]}}`` (the original AI500 pool's shape)

Symbols are normalised (``strategies.market.symbols``); entries that cannot be read are
skipped and reported. A transport error, a timeout (``timeout_s``, default 5 s for the
whole request), a non-2xx status, invalid JSON or an unknown shape raise ``PoolError``,
which coin selection turns into its fallback.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import httpx

from strategies.market.exceptions import InvalidSymbolError, PoolError
from strategies.market.symbols import normalize_symbol

DEFAULT_POOL_TIMEOUT_S = 5.0
MAX_POOL_BYTES = 1_000_000
_LIST_KEYS = ("data", "coins")
_SYMBOL_KEYS = ("symbol", "pair")


@dataclass(frozen=True)
class PoolResult:
    """The pool's symbols in rank order, and the entries that could not be read."""

    symbols: tuple[str, ...]
    skipped: tuple[str, ...] = ()


def fetch_pool(url: str, *, timeout_s: float = DEFAULT_POOL_TIMEOUT_S) -> PoolResult:
    """Return the ranked symbols the pool at ``url`` answers.

    Raise ``PoolError`` when it fails, times out or answers something unusable.
    """
    # httpx's timeout bounds each phase (a read is one socket read), so the overall
    # deadline is checked between chunks as well.
    deadline = time.monotonic() + timeout_s
    body = bytearray()
    try:
        with (
            httpx.Client(timeout=timeout_s, follow_redirects=True) as client,
            client.stream("GET", url) as response,
        ):
            if not response.is_success:
                raise PoolError(f"coin pool {url} answered HTTP {response.status_code}")
            for chunk in response.iter_bytes():
                body += chunk
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout("overall deadline passed")
                if len(body) > MAX_POOL_BYTES:
                    raise PoolError(f"coin pool {url} answered more than {MAX_POOL_BYTES} bytes")
    except httpx.TimeoutException as error:
        raise PoolError(f"coin pool {url} timed out after {timeout_s:g} s") from error
    except httpx.HTTPError as error:
        raise PoolError(f"coin pool {url} failed: {type(error).__name__}: {error}") from error
    try:
        payload = json.loads(body)
    except ValueError as error:
        raise PoolError(f"coin pool {url} answered invalid JSON") from error
    return parse_pool(payload, url)


def parse_pool(payload: Any, url: str = "coin pool") -> PoolResult:
    """Return the symbols in a pool answer of any accepted shape (see the module doc)."""
    entries = _entries(payload)
    if entries is None:
        raise PoolError(
            f"coin pool {url} answered an unknown shape: expected a list, "
            '{"data": [...]} or {"coins": [...]}'
        )
    symbols: list[str] = []
    skipped: list[str] = []
    for entry in entries:
        raw = entry
        if isinstance(entry, dict):
            raw = next((entry[key] for key in _SYMBOL_KEYS if key in entry), None)
        try:
            symbol = normalize_symbol(raw) if isinstance(raw, str) else None
        except InvalidSymbolError:
            symbol = None
        if symbol is None:
            skipped.append(repr(entry)[:60])
        elif symbol not in symbols:
            symbols.append(symbol)
    return PoolResult(tuple(symbols), tuple(skipped))


def _entries(payload: Any, depth: int = 0) -> list[Any] | None:
    if isinstance(payload, list):
        return payload
    if isinstance(payload, dict) and depth < 2:
        for key in _LIST_KEYS:
            if key in payload:
                return _entries(payload[key], depth + 1)
    return None
