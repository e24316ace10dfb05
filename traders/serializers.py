"""Representations of trader objects, shared by the REST API and live events."""

from rest_framework import serializers

from traders.models import Execution, HistoryEntry, Order, Position


class ExecutionSerializer(serializers.ModelSerializer):
    decision = serializers.IntegerField(source="decision_id", read_only=True)
    debate = serializers.IntegerField(source="decision.debate_id", read_only=True)
    trader = serializers.IntegerField(source="trader_id", read_only=True)

    class Meta:
        model = Execution
        fields = [
            "id",
            "decision",
            "debate",
            "trader",
            "status",
            "trigger",
            "symbol",
            "action",
            "client_order_id",
            "exchange_order_id",
            "leverage",
            "requested_quantity",
            "filled_quantity",
            "average_price",
            "fee",
            "stop_loss_price",
            "take_profit_price",
            "stop_loss_order_id",
            "take_profit_order_id",
            "adjustments",
            "staleness",
            "approval_deadline",
            "error",
            "note",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class PositionSerializer(serializers.ModelSerializer):
    class Meta:
        model = Position
        fields = [
            "id",
            "symbol",
            "side",
            "status",
            "quantity",
            "entry_price",
            "leverage",
            "margin",
            "stop_loss_price",
            "take_profit_price",
            "close_price",
            "close_reason",
            "foreign",
            "realized_pnl",
            "fees",
            "opened_at",
            "closed_at",
        ]
        read_only_fields = fields


class OrderSerializer(serializers.ModelSerializer):
    class Meta:
        model = Order
        fields = [
            "id",
            "client_order_id",
            "exchange_order_id",
            "symbol",
            "side",
            "type",
            "reduce_only",
            "quantity",
            "trigger_price",
            "status",
            "filled_quantity",
            "average_price",
            "fee",
            "error",
            "execution",
            "position",
            "created_at",
        ]
        read_only_fields = fields


class HistoryEntrySerializer(serializers.ModelSerializer):
    trader = serializers.IntegerField(source="trader_id", read_only=True)

    class Meta:
        model = HistoryEntry
        fields = ["id", "trader", "kind", "symbol", "message", "position", "created_at"]
        read_only_fields = fields
