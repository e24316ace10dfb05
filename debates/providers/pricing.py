"""What a model call costs: list prices per million tokens and the arithmetic on them.

Providers bill input and output tokens at separate prices, and the input their prompt
cache serves at a lower one (Anthropic also bills writing to its cache, above the input
price); some bill less off their peak hours (DeepSeek: half, outside its weekday peaks).
The list prices of the models the catalogue knows are in ``catalogue.toml``
(``catalog.ModelEntry.price``); the stored price table (``debates.models.ModelPrice``),
which an operator edits in the admin, overrides them. The simulated model and answers
from the model-call cache cost nothing. No Django here.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import UTC, datetime
from decimal import Decimal
from typing import NamedTuple

MILLION = Decimal(1_000_000)
COST_PLACES = Decimal("0.0000000001")
"""Costs are kept to 1e-10 USD: exact for any price given to 4 decimal places."""


class Price(NamedTuple):
    """USD per million tokens: input, input served from the cache, output, cache writes.

    ``cache_write`` None means cache writes cost the input price.
    """

    input: Decimal
    cached_input: Decimal
    output: Decimal
    cache_write: Decimal | None = None


FREE = Price(Decimal(0), Decimal(0), Decimal(0), Decimal(0))
FRIDAY = 4


def in_hours(at: datetime, hours: Iterable[tuple[int, int]]) -> bool:
    """Say whether instant ``at`` falls on a weekday (UTC) within one of ``hours``,
    (start, end) minutes of the UTC day, the end excluded."""
    moment = at.astimezone(UTC)
    minute = moment.hour * 60 + moment.minute
    return moment.weekday() <= FRIDAY and any(start <= minute < end for start, end in hours)


def call_cost(
    price: Price,
    *,
    prompt_tokens: int,
    completion_tokens: int,
    cached_input_tokens: int = 0,
    cache_write_tokens: int = 0,
) -> Decimal:
    """Return the USD cost of one call under ``price``.

    ``prompt_tokens`` counts all input; the ``cached_input_tokens`` and
    ``cache_write_tokens`` in it are billed at their own prices, the rest at ``input``.
    """
    cached = min(cached_input_tokens, prompt_tokens)
    written = min(cache_write_tokens, prompt_tokens - cached)
    plain = prompt_tokens - cached - written
    write_price = price.input if price.cache_write is None else price.cache_write
    micro = (
        plain * price.input
        + cached * price.cached_input
        + written * write_price
        + completion_tokens * price.output
    )
    return (micro / MILLION).quantize(COST_PLACES)


def usd_text(cost: Decimal) -> str:
    """Return ``cost`` as its JSON string: fixed point, no trailing zeros ("0.003345", "0")."""
    return format(cost.normalize(), "f") if cost else "0"
