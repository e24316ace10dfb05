"""Strategies: create, list, read, change, delete (SPEC 9)."""

from __future__ import annotations

from rest_framework import serializers

from arena.crud import Resource
from arena.inputs import CHANGE_RULES, shown_fields
from strategies.models import Strategy
from strategies.services import (
    StrategyInputSerializer,
    strategy_create,
    strategy_delete,
    strategy_update,
)


class StrategySerializer(serializers.ModelSerializer):
    # A plain string: empty when the coin source needs no pool, which is no URI.
    pool_url = serializers.CharField(read_only=True)

    class Meta:
        model = Strategy
        fields = ["id", *shown_fields(StrategyInputSerializer), "created_at", "updated_at"]
        read_only_fields = fields


STRATEGIES = Resource(
    model=Strategy,
    route="strategies",
    name="strategy",
    input=StrategyInputSerializer,
    output=StrategySerializer,
    create=strategy_create,
    update=strategy_update,
    delete=strategy_delete,
    example={"name": "Majors", "static_coins": ["BTC", "ETH"]},
    docs={
        "create": "Create a strategy.\n\nRules the schema cannot state (400 naming the "
        "field): a coin is listed once, whatever its notation; the excluded coins leave a "
        "static coin to debate; a pool URL's host is one the outbound policy lets the "
        "service call (no internal address unless an operator allows it).",
        "partial_update": f"Change some fields of a strategy.\n\n{CHANGE_RULES} The "
        "create's rules the schema cannot state apply too.",
        "destroy": "Delete a strategy no pending or running debate and no schedule uses (409 "
        "otherwise).",
    },
)
