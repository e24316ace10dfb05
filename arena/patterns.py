"""Regular expressions that the OpenAPI schema publishes and the inputs enforce alike.

Each is a JSON Schema ``pattern`` (ECMA 262) written in the part of the syntax that
Python's ``re`` reads the same way (character classes, ``\\uXXXX`` escapes, groups,
lookaheads, no flags), so one text is both the schema's rule and the API's check. The
API matches a whole value (``re.fullmatch``: Python's ``$`` also matches before a final
newline), and no pattern uses ``\\d`` or ``\\s``, which Python reads as any Unicode digit
or space.
"""

from __future__ import annotations

from decimal import Decimal

# The characters Python's ``str.strip()`` removes, with which DRF trims text inputs.
WHITESPACE = (
    r"\t\n\u000b\u000c\r\u001c-\u001f \u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f"
    r"\u205f\u3000"
)
# Text without a NUL character (which PostgreSQL does not store in text), not empty.
NOT_EMPTY = r"^[^\u0000]+$"
# Text without NUL that is not blank: something is left once it is trimmed.
NOT_BLANK = rf"^[^\u0000]*[^\u0000{WHITESPACE}][^\u0000]*$"


def trimmed(text: str, *, blank: bool) -> str:
    """Return the pattern of ``text`` (a pattern without anchors) with whitespace around
    it, as a trimmed input reads it; ``blank``: whitespace alone also matches (but not the
    empty string, which a schema states apart)."""
    padded = rf"[{WHITESPACE}]*(?:{text})[{WHITESPACE}]*"
    return rf"^(?:[{WHITESPACE}]+|{padded})$" if blank else f"^{padded}$"


def either_case(word: str) -> str:
    """Return a pattern matching ``word`` (ASCII) in any mix of cases: ``[Uu][Ss]...``."""
    return "".join(f"[{c.upper()}{c.lower()}]" if c.isalpha() else c for c in word)


def decimal_pattern(low: Decimal, high: Decimal, places: int) -> str:
    """Return the pattern of the decimal strings from ``low`` to ``high`` (both at least
    0) with at most ``places`` decimals, written plainly: digits without a sign or a
    leading zero, then optionally a point and 1 to ``places`` digits (``"0"``, ``"12.5"``,
    ``"0.0004"``; not ``""``, ``"1."``, ``".5"``, ``"01"``, ``"1e3"``)."""
    below_low = low - Decimal(1).scaleb(-places)
    floor = rf"(?!(?:{_at_most(below_low, places)})$)" if below_low >= 0 else ""
    return rf"^{floor}(?:{_at_most(high, places)})$"


def _at_most(limit: Decimal, places: int) -> str:
    """Return the pattern (no anchors) of the plain decimal strings from 0 to ``limit``."""
    whole, _, fraction = f"{limit:.{places}f}".partition(".")
    any_fraction = rf"(?:\.[0-9]{{1,{places}}})?"
    options = [rf"{whole}(?:\.{_digits_at_most(fraction)})?"]
    if whole != "0":
        options.append(integer_at_most(int(whole) - 1) + any_fraction)
    return "|".join(options)


def integer_at_most(limit: int) -> str:
    """Return the pattern of the integers from 0 to ``limit``, without leading zeros."""
    digits = str(limit)
    options = ["0", digits]
    if len(digits) > 1:
        options.append(rf"[1-9][0-9]{{0,{len(digits) - 2}}}")
    for index, digit in enumerate(digits):
        smallest = 1 if index == 0 else 0
        if int(digit) > smallest:
            rest = len(digits) - index - 1
            options.append(rf"{digits[:index]}[{smallest}-{int(digit) - 1}][0-9]{{{rest}}}")
    return "(?:" + "|".join(dict.fromkeys(options)) + ")"


def _digits_at_most(limit: str) -> str:
    """Return the pattern of the strings of 1 to ``len(limit)`` digits that are at most
    ``limit`` once padded with zeros on the right (a fraction's digits)."""
    prefixes = ""
    for digit in reversed(limit):
        prefixes = f"{digit}(?:{prefixes})?" if prefixes else digit
    options = [prefixes]
    for index, digit in enumerate(limit):
        if digit != "0":
            rest = len(limit) - index - 1
            options.append(rf"{limit[:index]}[0-{int(digit) - 1}][0-9]{{0,{rest}}}")
    return "(?:" + "|".join(options) + ")"
