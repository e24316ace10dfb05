"""Symbols: one normalised form, ``BTCUSDT``, and its ccxt unified twin ``BTC/USDT:USDT``.

Everything the service stores or passes around is the normalised form: the base asset in
upper case followed by ``USDT`` (only USDT-margined perpetuals are traded). ccxt speaks
unified symbols (``BASE/QUOTE:SETTLE``); ``to_ccxt`` and ``from_ccxt`` convert at the edge.

User input is normalised by ``normalize_symbol``; these all give ``BTCUSDT``::

    btc   BTC   btcusdt   BTC/USDT   btc-usdt   BTC_USDT   BTC/USDT:USDT   " BTCUSDT "

and anything else is refused with ``InvalidSymbolError`` (never stored raw): empty input,
characters other than letters and digits around one separator, a quote or settle asset
other than USDT (``ETH/BTC``, ``BTC/USDC``, and bare ``BTCUSDC`` or ``BTCUSD``, whose
suffix names another quote asset), ``USDT`` alone, or a base longer than 16 characters.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from strategies.market.exceptions import InvalidSymbolError

QUOTE = "USDT"
MAX_BASE_LENGTH = 16
MAX_SYMBOL_LENGTH = MAX_BASE_LENGTH + len(QUOTE)

_ASSET = re.compile(r"[A-Z0-9]+")
# Bare input ending in one of these is a pair in another quote asset, not a base asset.
_OTHER_QUOTES = ("FDUSD", "BUSD", "USDC", "USD")


def normalize_symbol(raw: str) -> str:
    """Return the normalised form (``BTCUSDT``) of a user-given symbol.

    Raise ``InvalidSymbolError`` naming the input when it is malformed.
    """
    if not isinstance(raw, str):
        raise InvalidSymbolError(f"symbol must be text, got {type(raw).__name__}")
    text = raw.strip().upper()
    if not text:
        raise InvalidSymbolError("symbol is empty")
    if "/" in text:
        base, quote = _split_unified(raw, text)
    elif "-" in text or "_" in text:
        parts = re.split(r"[-_]", text)
        if len(parts) != 2:
            raise InvalidSymbolError(f"malformed symbol {raw!r}: use BTC, BTCUSDT or BTC/USDT")
        base, quote = parts
    else:
        base, quote = _split_bare(raw, text)
    if quote != QUOTE:
        raise InvalidSymbolError(f"unsupported symbol {raw!r}: only {QUOTE} pairs are traded")
    _check_base(raw, base)
    return base + QUOTE


def normalize_symbols(raw_symbols: Iterable[str]) -> tuple[str, ...]:
    """Return the normalised symbols in input order without duplicates.

    Raise ``InvalidSymbolError`` on the first malformed one.
    """
    result: list[str] = []
    for raw in raw_symbols:
        symbol = normalize_symbol(raw)
        if symbol not in result:
            result.append(symbol)
    return tuple(result)


def base_asset(symbol: str) -> str:
    """Return the base asset of a normalised symbol (``BTC`` for ``BTCUSDT``)."""
    return normalize_symbol(symbol)[: -len(QUOTE)]


def to_ccxt(symbol: str) -> str:
    """Return the ccxt unified perpetual symbol (``BTC/USDT:USDT``) of ``symbol``."""
    base = base_asset(symbol)
    return f"{base}/{QUOTE}:{QUOTE}"


def from_ccxt(unified: str) -> str:
    """Return the normalised symbol of a ccxt unified symbol (``BTC/USDT:USDT``)."""
    return normalize_symbol(unified)


def _split_unified(raw: str, text: str) -> tuple[str, str]:
    pair, _, settle = text.partition(":")
    if ":" in text and settle != QUOTE:
        raise InvalidSymbolError(
            f"unsupported symbol {raw!r}: only {QUOTE}-settled contracts are traded"
        )
    parts = pair.split("/")
    if len(parts) != 2:
        raise InvalidSymbolError(f"malformed symbol {raw!r}: use BTC/USDT or BTC/USDT:USDT")
    return parts[0], parts[1]


def _split_bare(raw: str, text: str) -> tuple[str, str]:
    if text.endswith(QUOTE) and len(text) > len(QUOTE):
        return text[: -len(QUOTE)], QUOTE
    for other in _OTHER_QUOTES:
        if text.endswith(other) and len(text) > len(other):
            raise InvalidSymbolError(
                f"unsupported symbol {raw!r}: looks like a {other} pair; "
                f"only {QUOTE} pairs are traded"
            )
    return text, QUOTE


def _check_base(raw: str, base: str) -> None:
    if not base or not _ASSET.fullmatch(base):
        raise InvalidSymbolError(
            f"malformed symbol {raw!r}: the base asset must be letters and digits"
        )
    if base == QUOTE:
        raise InvalidSymbolError(f"malformed symbol {raw!r}: {QUOTE} is the quote asset")
    if len(base) > MAX_BASE_LENGTH:
        raise InvalidSymbolError(
            f"malformed symbol {raw!r}: base asset longer than {MAX_BASE_LENGTH} characters"
        )
