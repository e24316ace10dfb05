"""The coin pool: an HTTP endpoint (configured per strategy) that returns ranked coins.

``GET <pool_url>`` must answer 2xx with JSON in one of these shapes, best-ranked first:

- a list of symbols: ``["BTCUSDT", "eth", "SOL/USDT"]``
- a list of objects with a ``symbol`` (or ``pair``) field: ``[{"symbol": "BTCUSDT", ...}]``
- either list under ``data`` or ``coins``: ``{"data": [...]}``, ``{"coins": [...]}``,
  also nested as ``{"data": {"coins": [...]}}`` (the original AI500 pool's shape)

Symbols are normalised (``strategies.market.symbols``); entries that cannot be read are
skipped and counted (what they held is not repeated: it is the pool's text, not ours). A
transport error, a timeout (``timeout_s``, default 5 s for the whole request), a non-2xx
status, invalid JSON or an unknown shape raise ``PoolError``, which coin selection turns
into its fallback.

The pool is called under the outbound policy (``arena.outbound``): a URL that resolves
to an internal address is refused, at save and at the call, and redirects are followed
only on the pool's own host (at most ``MAX_REDIRECTS``).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

import httpx

from arena.outbound import OutboundRefused, guarded_transport, url_origin
from strategies.market.exceptions import InvalidSymbolError, PoolError
from strategies.market.symbols import normalize_symbol

DEFAULT_POOL_TIMEOUT_S = 5.0
MAX_POOL_BYTES = 1_000_000
MAX_REDIRECTS = 3
_LIST_KEYS = ("data", "coins")
_SYMBOL_KEYS = ("symbol", "pair")


@dataclass(frozen=True)
class PoolResult:
    """The pool's symbols in rank order, and how many entries could not be read."""

    symbols: tuple[str, ...]
    skipped: int = 0


def fetch_pool(url: str, *, timeout_s: float = DEFAULT_POOL_TIMEOUT_S) -> PoolResult:
    """Return the ranked symbols the pool at ``url`` answers.

    Raise ``PoolError`` when it fails, times out or answers something unusable.
    """
    # httpx's timeout bounds each phase (a read is one socket read), so the overall
    # deadline is checked between chunks as well.
    deadline = time.monotonic() + timeout_s
    try:
        with httpx.Client(
            transport=guarded_transport(), timeout=timeout_s, follow_redirects=False
        ) as client:
            body = _get(client, url, deadline)
    except OutboundRefused as error:
        raise PoolError(f"coin pool {url} refused: {error}") from None
    except httpx.TimeoutException as error:
        raise PoolError(f"coin pool {url} timed out after {timeout_s:g} s") from error
    except httpx.HTTPError as error:
        raise PoolError(f"coin pool {url} failed: {type(error).__name__}: {error}") from error
    try:
        payload = json.loads(body)
    except ValueError as error:
        raise PoolError(f"coin pool {url} answered invalid JSON") from error
    return parse_pool(payload, url)


def _get(client: httpx.Client, url: str, deadline: float) -> bytes:
    """Return the body of ``GET url``, following redirects on the same host only."""
    origin = url_origin(url)
    for _ in range(MAX_REDIRECTS + 1):
        with client.stream("GET", url) as response:
            if response.next_request is not None:
                target = str(response.next_request.url)
                if url_origin(target) != origin:
                    raise PoolError(
                        f"coin pool {url} redirected to another host, which is not followed"
                    )
                url = target
                continue
            if not response.is_success:
                raise PoolError(f"coin pool {url} answered HTTP {response.status_code}")
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout("overall deadline passed")
                if len(body) > MAX_POOL_BYTES:
                    raise PoolError(f"coin pool {url} answered more than {MAX_POOL_BYTES} bytes")
            return bytes(body)
    raise PoolError(f"coin pool {url} redirected more than {MAX_REDIRECTS} times")


def parse_pool(payload: Any, url: str = "coin pool") -> PoolResult:
    """Return the symbols in a pool answer of any accepted shape (see the module doc)."""
    entries = _entries(payload)
    if entries is None:
        raise PoolError(
            f"coin pool {url} answered an unknown shape: expected a list, "
            '{"data": [...]} or {"coins": [...]}'
        )
    symbols: list[str] = []
    skipped = 0
    for entry in entries:
        raw = entry
        if isinstance(entry, dict):
            raw = next((entry[key] for key in _SYMBOL_KEYS if key in entry), None)
        try:
            symbol = normalize_symbol(raw) if isinstance(raw, str) else None
        except InvalidSymbolError:
            symbol = None
        if symbol is None:
            skipped += 1
        elif symbol not in symbols:
            symbols.append(symbol)
    return PoolResult(tuple(symbols), skipped)


def _entries(payload: Any, depth: int = 0) -> list[Any] | None:
    if isinstance(payload, list):
        return payload
    if isinstance(payload, dict) and depth < 2:
        for key in _LIST_KEYS:
            if key in payload:
                return _entries(payload[key], depth + 1)
    return None
