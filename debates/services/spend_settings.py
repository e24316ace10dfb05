"""What a user may spend and what calls cost: a user's own daily budget and caps, and the
price table, changed through the API and the admin.

A user's budget (``TokenBudget``) holds a soft daily token budget and hard daily caps on
tokens and in USD, which ``debates.services.budgets`` enforces. The price table
(``ModelPrice``) is staff's: a row overrides the catalogue's list price of its model
(``debates.services.costs``); each process reads it again within a minute, this one at
once.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django.db import IntegrityError, transaction
from drf_spectacular.utils import extend_schema_serializer

from arena.exceptions import ValidationError
from arena.inputs import (
    StrictCharField,
    StrictChoiceField,
    StrictDecimalField,
    StrictIntegerField,
    StrictSerializer,
    validate,
)
from debates.models import ModelPrice, TokenBudget
from debates.providers.catalog import PROVIDERS
from debates.providers.simulated import PROVIDER as SIMULATED
from debates.selectors import model_price_get
from debates.services.costs import prices_forget

USD = {"max_digits": 12, "decimal_places": 4, "min_value": Decimal(0)}
"""A USD amount as the budget and the price table store it: at least 0, 4 decimals, given
as a JSON string ("2.50"), as the API answers amounts."""


MODEL_TAKEN = "The price table has a row for this provider and model already."
PRICED_PROVIDERS = [provider for provider in PROVIDERS if provider != SIMULATED]
"""The providers a price applies to: the simulated model costs nothing."""


@extend_schema_serializer(component_name="BudgetInput")
class BudgetInputSerializer(StrictSerializer):
    """A user's own daily budget and caps; null removes one."""

    daily_token_budget = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        help_text="Tokens a UTC day past which an auto debate runs lighter.",
    )
    daily_token_cap = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        help_text="Tokens a UTC day past which no model call starts.",
    )
    daily_usd_cap = StrictDecimalField(
        required=False,
        allow_null=True,
        help_text="USD a UTC day past which no model call starts.",
        **USD,
    )


def token_budget_update(*, owner: Any, changes: Mapping[str, Any]) -> TokenBudget:
    """Change the user's daily budget and caps (``BudgetInputSerializer``); refuse bad
    input with ``validation_error`` naming each bad field, changing nothing. A call
    reserving its tokens next reads the new caps."""
    data = validate(BudgetInputSerializer, changes, partial=True)
    with transaction.atomic():
        budget, _ = TokenBudget.objects.select_for_update().get_or_create(owner=owner)
        for name, value in data.items():
            setattr(budget, name, value)
        budget.save()
    return budget


@extend_schema_serializer(component_name="ModelPriceInput")
class ModelPriceInputSerializer(StrictSerializer):
    """A row of the price table: USD per million tokens of one provider's model."""

    model = ModelPrice

    provider = StrictChoiceField(choices=PRICED_PROVIDERS)
    model_name = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=100,
        help_text="Empty: any model of the provider without a row of its own.",
    )
    input_usd_per_mtok = StrictDecimalField(**USD)
    cached_input_usd_per_mtok = StrictDecimalField(
        help_text="Input served from the provider's prompt cache.", **USD
    )
    output_usd_per_mtok = StrictDecimalField(**USD)
    cache_write_usd_per_mtok = StrictDecimalField(
        required=False,
        allow_null=True,
        help_text="Writing to the prompt cache; null: the input price.",
        **USD,
    )


def model_price_create(*, data: Mapping[str, Any]) -> ModelPrice:
    """Add a row to the price table; refuse bad input, or a second row for one model,
    naming the field."""
    values = validate(ModelPriceInputSerializer, data)
    return _saved(ModelPrice(**values))


def model_price_update(*, price_id: int, changes: Mapping[str, Any]) -> ModelPrice:
    """Change some columns of a row of the price table."""
    price = model_price_get(price_id=price_id)
    values = validate(ModelPriceInputSerializer, changes, partial=True, instance=price)
    for name, value in values.items():
        setattr(price, name, value)
    return _saved(price)


def model_price_delete(*, price_id: int) -> None:
    """Remove a row of the price table: its model costs its catalogue price again."""
    with transaction.atomic():
        model_price_get(price_id=price_id).delete()
        transaction.on_commit(prices_forget)


def _saved(price: ModelPrice) -> ModelPrice:
    """Store a row of the price table, once per provider and model; this process reads
    the table again after the commit."""
    taken = ModelPrice.objects.filter(provider=price.provider, model_name=price.model_name)
    if taken.exclude(pk=price.pk).exists():
        raise ValidationError(fields={"model_name": [MODEL_TAKEN]})
    try:
        with transaction.atomic():
            price.save()
            transaction.on_commit(prices_forget)
    except IntegrityError:  # a row for the same model stored at the same moment
        raise ValidationError(fields={"model_name": [MODEL_TAKEN]}) from None
    return price
