"""Strategies: create, list, read, change, delete (SPEC 9)."""

from __future__ import annotations

from rest_framework import serializers

from arena.crud import Resource
from arena.inputs import shown_fields
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
    docs={
        "create": "Create a strategy.",
        "partial_update": "Change some fields of a strategy; the whole strategy is checked again.",
        "destroy": "Delete a strategy no pending or running debate and no schedule uses (409 "
        "otherwise).",
    },
)
