"""Representations of backtests, shared by the REST API, the live events and the CLI."""

from __future__ import annotations

from functools import cache
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from backtests.models import ACTIVE_STATUSES, TERMINAL_STATUSES, Backtest
from debates.serializers import decimals_shown
from strategies.market.dataset import DATASET_END, DATASET_WINDOWS, replay_candles

# What a client may do with a backtest in each state.
ACTIONS = {"cancel": ACTIVE_STATUSES, "delete": TERMINAL_STATUSES}


@cache
def dataset_price_decimals(symbol: str) -> int:
    """Return the most decimals the bundled candles of ``symbol`` show: its own precision,
    as a debate's snapshot gives it from the candles it holds (``price_decimals``)."""
    candles = replay_candles(symbol, DATASET_WINDOWS["4h"].start, DATASET_END)
    return decimals_shown(
        price
        for _, candle in candles
        for price in (candle.open, candle.high, candle.low, candle.close)
    )


def available_actions(backtest: Backtest) -> list[str]:
    """Return the actions a client may take now, in a stable order."""
    return [name for name, sources in ACTIONS.items() if backtest.status in sources]


def state(backtest: Backtest) -> dict[str, Any]:
    """Return what a ``status`` event carries: the state and what may be done next."""
    data: dict[str, Any] = {
        "status": backtest.status,
        "available_actions": available_actions(backtest),
    }
    if backtest.error:
        data["error"] = backtest.error
    return data


class ProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField(source="steps_done")
    total = serializers.IntegerField(source="steps_total")


class BacktestListSerializer(serializers.ModelSerializer):
    strategy = serializers.IntegerField(source="strategy_id", allow_null=True, read_only=True)
    progress = ProgressSerializer(source="*", read_only=True)
    available_actions = serializers.SerializerMethodField()
    headline = serializers.JSONField(
        read_only=True, help_text="Each rule's final equity, total return and max drawdown."
    )

    class Meta:
        model = Backtest
        fields = [
            "id",
            "name",
            "status",
            "available_actions",
            "progress",
            "strategy",
            "symbol",
            "start",
            "end",
            "interval_minutes",
            "headline",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields

    def get_available_actions(self, obj: Backtest) -> list[str]:
        return available_actions(obj)


class BacktestDetailSerializer(BacktestListSerializer):
    participants = serializers.JSONField(read_only=True)
    price_decimals = serializers.SerializerMethodField(
        help_text="The decimals of each traded coin's prices, to round its trades' prices to."
    )
    event_id = serializers.SerializerMethodField()

    class Meta(BacktestListSerializer.Meta):
        fields = [
            *BacktestListSerializer.Meta.fields,
            "participants",
            "max_rounds",
            "prompt_variant",
            "horizon_minutes",
            "starting_balance",
            "fee_rate",
            "slippage_bps",
            "coins",
            "book",
            "cache",
            "level",
            "weighting",
            "baseline",
            "report",
            "price_decimals",
            "event_id",
        ]
        read_only_fields = fields

    @extend_schema_field({"type": "object", "additionalProperties": {"type": "integer"}})
    def get_price_decimals(self, obj: Backtest) -> dict[str, int]:
        rules = (obj.report or {}).get("rules", [])
        symbols = {trade["symbol"] for rule in rules for trade in rule.get("trades", [])}
        return {symbol: dataset_price_decimals(symbol) for symbol in sorted(symbols)}

    def get_event_id(self, obj: Backtest) -> str:
        return self.context.get("event_id", "")
