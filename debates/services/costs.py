"""The cost of a model call under the stored price table (``ModelPrice``)."""

from __future__ import annotations

from decimal import Decimal

from debates.models import ModelPrice
from debates.providers.base import ModelResponse
from debates.providers.pricing import FREE, Price, call_cost


def price_for(*, provider: str, model: str) -> Price:
    """Return the price of ``model`` of ``provider``: its own row, else the provider's
    row for any model, else no cost at all."""
    rows = {
        name: Price(*figures)
        for name, *figures in ModelPrice.objects.filter(
            provider=provider, model_name__in=(model, "")
        ).values_list(
            "model_name",
            "input_usd_per_mtok",
            "cached_input_usd_per_mtok",
            "output_usd_per_mtok",
            "cache_write_usd_per_mtok",
        )
    }
    row = rows.get(model, rows.get(""))
    return FREE if row is None else Price(*row)


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
