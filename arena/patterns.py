"""Regular expressions that the OpenAPI schema publishes and the inputs enforce alike.

Each is a JSON Schema ``pattern`` (ECMA 262) written in the part of the syntax that
Python's ``re`` reads the same way (character classes, ``\\uXXXX`` escapes, groups,
lookaheads, no flags), so one text is both the schema's rule and the API's check.
"""

from __future__ import annotations

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
