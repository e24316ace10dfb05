"""What every wire format shares: the request it builds, the reply it reads, and the
rules for reading a reply's JSON (``openai_compat`` and ``anthropic`` use them).

A reply that cannot be used is a ``TerminalProviderError`` with code
``malformed_response``: repeating the same call would get the same answer.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from debates.providers.base import TerminalProviderError

MALFORMED = "malformed_response"
OUTPUT_CAP_EXHAUSTED = "output_cap_exhausted"


@dataclass(frozen=True)
class WireRequest:
    """The HTTP request one wire format builds for one call."""

    url: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class HttpReply:
    """A complete HTTP answer: status, headers (lower-case names) and body bytes."""

    status: int
    headers: httpx.Headers
    body: bytes


@dataclass(frozen=True)
class ParsedAnswer:
    """What a wire format extracts from a successful reply."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    request_id: str
    finish_reason: str
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0


class OutputCapExhausted(TerminalProviderError):
    """An empty answer cut at the output cap: the model spent the cap on reasoning.

    ``reasoning_tokens`` is what the provider reported spending on it (0 when it does
    not say); ``cap`` the output cap of the call, when known.
    """

    def __init__(self, *, reasoning_tokens: int, cap: int | None = None, attempts: int = 0):
        self.reasoning_tokens = reasoning_tokens
        self.cap = cap
        spent = f"{cap}-token output cap" if cap else "output cap"
        super().__init__(
            f"the answer is empty: the model spent the {spent} "
            f"({reasoning_tokens} reasoning tokens) before answering",
            code=OUTPUT_CAP_EXHAUSTED,
            attempts=attempts,
        )


Parser = Callable[[HttpReply], ParsedAnswer]


def load_json_object(body: bytes) -> dict[str, Any]:
    """Return ``body`` decoded as a JSON object, or raise a ``malformed_response`` error."""
    try:
        data = json.loads(body)
    except ValueError:
        raise TerminalProviderError("answer is not JSON", code=MALFORMED) from None
    if not isinstance(data, dict):
        raise TerminalProviderError("answer is not a JSON object", code=MALFORMED)
    return data


def answer_text(text: object, missing: str) -> str:
    """Return ``text`` when it holds more than white space, else raise ``missing``."""
    if not isinstance(text, str) or not text.strip():
        raise TerminalProviderError(missing, code=MALFORMED)
    return text


def usage_of(data: dict[str, Any]) -> dict[str, Any]:
    """Return the reply's ``usage`` object, empty when it has none."""
    usage = data.get("usage")
    return usage if isinstance(usage, dict) else {}


def as_count(value: object) -> int:
    """Return a token count from a usage field, 0 when it is missing or not a number."""
    if isinstance(value, bool):
        return 0
    if isinstance(value, int | float):
        return max(0, int(value))
    return 0


def request_id(data: dict[str, Any], reply: HttpReply, header: str) -> str:
    """Return the provider's id of the answer: the body's ``id``, else header ``header``."""
    return str(data.get("id") or reply.headers.get(header) or "")
