"""Normalisation of the loose values models write: symbols, actions, numbers, punctuation.

Number rules (each documented because models are inconsistent):

- A number may be a JSON number or a string such as ``"75"``, ``" 75.5 "``, ``"75%"`` or
  ``"10x"``; full-width digits are accepted. Booleans, NaN and infinities are not numbers.
- ``confidence`` is on the 0..100 scale; a ``%`` sign is ignored and the value is clamped
  to 0..100 with no rescaling, so ``0.75`` stays 0.75 (it is not read as 75).
- ``leverage`` may carry an ``x`` suffix; it is rounded to the nearest integer, halves
  going down (the cautious side), and must then be at least 1.
- ``position_pct`` is a fraction of the balance: ``"30%"`` and ``30`` both mean 0.30, a
  bare number up to 1 is already a fraction (1 means the whole balance); the result must
  lie in (0, 1].
- ``stop_loss`` and ``take_profit`` are fractions of the price: ``"3%"`` and ``3`` both
  mean 0.03, a bare number below 1 is already a fraction; the result must lie in (0, 1).
  A bare number above 100 is rejected: it is almost always a price, not a distance.
"""

from __future__ import annotations

import math
import re
import unicodedata
from decimal import ROUND_HALF_DOWN, Decimal
from typing import Any

from debates.engine.types import Action

_SEPARATORS = re.compile(r"[\s/_\-.]+")
_SYMBOL = re.compile(r"[A-Z0-9]{1,20}")
_QUOTE = "USDT"


def normalise_symbol(raw: object) -> str | None:
    """Return ``raw`` as an exchange symbol such as ``BTCUSDT``, or None if it is not one.

    ``btc``, ``BTC/USDT``, ``BTC-USDT``, ``BTC/USDT:USDT`` and ``BTCUSDT-PERP`` all give
    ``BTCUSDT``; a bare base coin gets the USDT quote appended.
    """
    if not isinstance(raw, str):
        return None
    text = unicodedata.normalize("NFKC", raw).strip().upper()
    text = text.split(":", 1)[0]
    text = _SEPARATORS.sub("", text)
    for suffix in ("PERP", "SWAP"):
        if text.endswith(suffix) and len(text) > len(suffix):
            text = text[: -len(suffix)]
    if text.endswith(_QUOTE + "P"):
        text = text[:-1]
    if not text.endswith(_QUOTE):
        text += _QUOTE
    if text == _QUOTE or not _SYMBOL.fullmatch(text):
        return None
    return text


_ACTION_SYNONYMS: dict[str, Action] = {
    **{action.value: action for action in Action},
    **dict.fromkeys(
        ("long", "buy", "go_long", "enter_long", "long_entry", "open_buy", "做多", "开多"),
        Action.OPEN_LONG,
    ),
    **dict.fromkeys(
        ("short", "sell", "go_short", "enter_short", "short_entry", "open_sell", "做空", "开空"),
        Action.OPEN_SHORT,
    ),
    **dict.fromkeys(("exit_long", "close_buy", "平多"), Action.CLOSE_LONG),
    **dict.fromkeys(("exit_short", "close_sell", "cover", "平空"), Action.CLOSE_SHORT),
    **dict.fromkeys(("keep", "hold_position", "持有", "持仓"), Action.HOLD),
    **dict.fromkeys(
        ("no_trade", "no_action", "stay_out", "stand_aside", "wait_and_see", "观望", "等待"),
        Action.WAIT,
    ),
}


def normalise_action(raw: object) -> Action | None:
    """Return the action ``raw`` names (case, spaces and dashes ignored), or None."""
    if not isinstance(raw, str):
        return None
    key = unicodedata.normalize("NFKC", raw).strip().lower()
    key = re.sub(r"[\s\-]+", "_", key).strip("_.,;:!'\"")
    return _ACTION_SYNONYMS.get(key)


# Full-width ASCII forms (U+FF01..U+FF5E) map to ASCII; smart quotes to straight ones.
_PUNCTUATION = {code: code - 0xFEE0 for code in range(0xFF01, 0xFF5F)}
_PUNCTUATION.update(
    {
        0x3000: " ",
        0x3001: ",",
        0x201C: '"',
        0x201D: '"',
        0x201E: '"',
        0x201F: '"',
        0x2033: '"',
        0x2018: "'",
        0x2019: "'",
        0x201A: "'",
        0x201B: "'",
        0x2032: "'",
        0x3010: "[",
        0x3011: "]",
    }
)


def field_key(key: object) -> str:
    """Return a JSON key as the parsers look it up: lower case, with runs of spaces and
    dashes made one underscore (``"Stop-Loss"`` gives ``stop_loss``)."""
    return re.sub(r"[\s\-]+", "_", str(key).strip().lower())


def ascii_punctuation(text: str) -> str:
    """Return ``text`` with full-width punctuation and smart quotes made ASCII."""
    return text.translate(_PUNCTUATION)


_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def parse_number(raw: Any, *, suffixes: str = "") -> tuple[float, str] | None:
    """Return ``(value, suffix)`` for a JSON number or numeric string, else None.

    ``suffixes`` lists the single characters allowed after the number (such as ``%``);
    the suffix found is returned lower-cased, or ``""``.
    """
    if isinstance(raw, bool):  # an int to Python, never a number to a model
        return None
    if isinstance(raw, int | float):
        value = float(raw) if abs(raw) < 1e300 else math.inf
        return (value, "") if math.isfinite(value) else None
    if isinstance(raw, str) and len(raw) <= 40:
        return _number_text(raw, suffixes)
    return None


def _number_text(raw: str, suffixes: str) -> tuple[float, str] | None:
    """Return ``(value, suffix)`` for a numeric string, else None."""
    text = unicodedata.normalize("NFKC", raw).strip().lower()
    suffix = ""
    if text and text[-1] in suffixes:
        suffix, text = text[-1], text[:-1].rstrip()
    if not _NUMBER.fullmatch(text):
        return None
    value = float(text)
    return (value, suffix) if math.isfinite(value) else None


def parse_confidence(raw: Any) -> float | None:
    """Return a confidence clamped to 0..100, or None when ``raw`` is not a number."""
    parsed = parse_number(raw, suffixes="%")
    if parsed is None:
        return None
    return min(100.0, max(0.0, parsed[0]))


# No exchange offers more; a larger figure is a misreading, not a leverage.
MAX_READABLE_LEVERAGE = 125


def parse_leverage(raw: Any) -> int | None:
    """Return a leverage in 1..MAX_READABLE_LEVERAGE, or None when ``raw`` is not one."""
    parsed = parse_number(raw, suffixes="x×")
    if parsed is None or not parsed[0] < MAX_READABLE_LEVERAGE + 1:
        return None
    rounded = int(Decimal(repr(parsed[0])).to_integral_value(rounding=ROUND_HALF_DOWN))
    return rounded if 1 <= rounded <= MAX_READABLE_LEVERAGE else None


def parse_position_pct(raw: Any) -> float | None:
    """Return a position size as a fraction in (0, 1], or None when ``raw`` is not one."""
    value = _fraction(raw, bare_one_is_percent=False)
    return value if value is not None and 0 < value <= 1 else None


def parse_price_distance(raw: Any) -> float | None:
    """Return a stop-loss or take-profit distance as a fraction in (0, 1), or None."""
    value = _fraction(raw, bare_one_is_percent=True)
    return value if value is not None and 0 < value < 1 else None


def _fraction(raw: Any, *, bare_one_is_percent: bool) -> float | None:
    parsed = parse_number(raw, suffixes="%")
    if parsed is None:
        return None
    value, suffix = parsed
    if suffix == "%":
        return value / 100
    if value > 100:
        return None
    is_percent = value >= 1 if bare_one_is_percent else value > 1
    return value / 100 if is_percent else value
