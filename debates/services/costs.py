"""The cost of a model call under the stored price table (``ModelPrice``).

A model the table does not price costs the catalogue's list price (``catalogue.toml``)
at the hour of the call.
Each process reads the whole table at most once a minute (``PRICE_TABLE_TTL_S``) rather
than once a call: a price changed in the admin applies to every call made from a minute
later on.
"""

from __future__ import annotations

import threading
import time
from datetime import datetime
from decimal import Decimal

from django.utils import timezone

from debates.models import ModelPrice
from debates.providers.base import ModelResponse
from debates.providers.catalog import catalogue_price
from debates.providers.pricing import FREE, Price, call_cost
from debates.providers.simulated import PROVIDER as SIMULATED

PRICE_TABLE_TTL_S = 60.0

_lock = threading.Lock()
_table: tuple[float, dict[tuple[str, str], Price]] | None = None


def _prices() -> dict[tuple[str, str], Price]:
    global _table
    with _lock:
        if _table is None or time.monotonic() - _table[0] > PRICE_TABLE_TTL_S:
            rows = ModelPrice.objects.values_list(
                "provider", "model_name", *ModelPrice.PRICE_COLUMNS
            )
            _table = (time.monotonic(), {(p, m): Price(*figures) for p, m, *figures in rows})
        return _table[1]


def prices_forget() -> None:
    """Drop this process's copy of the price table, so the next call reads it again."""
    global _table
    with _lock:
        _table = None


def price_for(*, provider: str, model: str, at: datetime | None = None) -> Price:
    """Return the price of ``model`` of ``provider`` for a call at ``at`` (now by
    default): its own row, else the catalogue's list price at that hour, else the
    provider's row for any model, else no cost at all."""
    table = _prices()
    return (
        table.get((provider, model))
        or catalogue_price(provider, model, at or timezone.now())
        or table.get((provider, ""), FREE)
    )


def response_cost(response: ModelResponse) -> Decimal:
    """Return what ``response`` cost: nothing for the simulated model or a cache answer."""
    if response.simulated or response.cached:
        return Decimal(0)
    return call_cost(
        price_for(provider=response.provider, model=response.model),
        prompt_tokens=response.prompt_tokens,
        completion_tokens=response.completion_tokens,
        cached_input_tokens=response.cached_input_tokens,
        cache_write_tokens=response.cache_write_tokens,
    )


def cost_at_most(
    *, provider: str, model: str, prompt_tokens: int, completion_tokens: int
) -> Decimal:
    """Return the most a call of ``model`` with ``prompt_tokens`` in and
    ``completion_tokens`` out can cost now: every input token at the dearer of the input
    and cache-write prices; nothing for the simulated model."""
    if provider == SIMULATED:
        return Decimal(0)
    price = price_for(provider=provider, model=model)
    writes = price.cache_write if price.cache_write is not None else price.input
    dearest = price._replace(input=max(price.input, writes))
    return call_cost(dearest, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens)
