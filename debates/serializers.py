"""Representations of debates, shared by the REST API, live events and ``run_debate``.

A payload has the same shape wherever it appears (SPEC 6 and 7), so it is built here
once. Querysets given to these serializers come from ``debates.selectors``, which
prefetch everything they touch.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from debates.engine.personalities import PERSONALITIES
from debates.models import Debate, Decision, Message, Participant, Vote
from debates.state import available_actions
from traders.serializers import ExecutionSerializer


class ParticipantSerializer(serializers.ModelSerializer):
    ai_model = serializers.IntegerField(source="ai_model_id", read_only=True)
    ai_model_name = serializers.CharField(source="ai_model.name", read_only=True)
    provider = serializers.CharField(source="ai_model.provider", read_only=True)
    simulated = serializers.SerializerMethodField()
    emoji = serializers.SerializerMethodField()
    color = serializers.SerializerMethodField()

    class Meta:
        model = Participant
        fields = [
            "id",
            "ai_model",
            "ai_model_name",
            "provider",
            "simulated",
            "personality",
            "emoji",
            "color",
            "speak_order",
        ]
        read_only_fields = fields

    def get_simulated(self, obj: Participant) -> bool:
        return obj.ai_model.provider == "simulated"

    def get_emoji(self, obj: Participant) -> str:
        return PERSONALITIES[obj.personality].emoji

    def get_color(self, obj: Participant) -> str:
        return PERSONALITIES[obj.personality].color


@extend_schema_field(
    {
        "type": "object",
        "properties": {
            "prompt_tokens": {"type": "integer"},
            "completion_tokens": {"type": "integer"},
        },
        "required": ["prompt_tokens", "completion_tokens"],
    }
)
class UsageField(serializers.Field):
    """Token usage of a stored model call."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, value: Any) -> dict[str, int]:
        return {
            "prompt_tokens": value.prompt_tokens,
            "completion_tokens": value.completion_tokens,
        }


class MessageSerializer(serializers.ModelSerializer):
    participant = serializers.IntegerField(source="participant_id", read_only=True)
    usage = UsageField()

    class Meta:
        model = Message
        fields = [
            "id",
            "round",
            "participant",
            "message_type",
            "status",
            "content",
            "reasoning",
            "decisions",
            "parse_status",
            "dropped",
            "error",
            "usage",
            "latency_ms",
            "attempts",
            "cached",
            "created_at",
        ]
        read_only_fields = fields


class VoteSerializer(serializers.ModelSerializer):
    participant = serializers.IntegerField(source="participant_id", read_only=True)
    action = serializers.SerializerMethodField()

    class Meta:
        model = Vote
        fields = [
            "id",
            "participant",
            "symbol",
            "action",
            "confidence",
            "leverage",
            "position_pct",
            "stop_loss",
            "take_profit",
            "reasoning",
            "abstained",
            "abstain_reason",
        ]
        read_only_fields = fields

    def get_action(self, obj: Vote) -> str | None:
        return obj.action or None


class DecisionSerializer(serializers.ModelSerializer):
    execution = serializers.SerializerMethodField()

    class Meta:
        model = Decision
        fields = [
            "id",
            "symbol",
            "action",
            "confidence",
            "leverage",
            "position_pct",
            "stop_loss",
            "take_profit",
            "scores",
            "clamps",
            "defaults",
            "reason",
            "supporters",
            "voters",
            "is_primary",
            "execution",
        ]
        read_only_fields = fields

    @extend_schema_field(ExecutionSerializer(allow_null=True))
    def get_execution(self, obj: Decision) -> dict[str, Any] | None:
        execution = getattr(obj, "execution", None)
        return ExecutionSerializer(execution).data if execution else None


class StrategySummarySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    name = serializers.CharField()
    coin_source = serializers.CharField()
    market_source = serializers.CharField()
    timeframes = serializers.ListField(child=serializers.CharField())
    min_confidence = serializers.IntegerField()


class StateSerializer(serializers.ModelSerializer):
    """The state fields of a debate: what a ``status`` event carries."""

    current_speaker = serializers.IntegerField(
        source="current_speaker_id", allow_null=True, read_only=True
    )
    available_actions = serializers.SerializerMethodField()

    class Meta:
        model = Debate
        fields = [
            "status",
            "phase",
            "current_round",
            "current_speaker",
            "available_actions",
            "error",
        ]
        read_only_fields = fields

    def get_available_actions(self, obj: Debate) -> list[str]:
        return available_actions(obj)


class DebateListSerializer(StateSerializer):
    strategy = serializers.IntegerField(source="strategy_id", allow_null=True, read_only=True)
    trader = serializers.IntegerField(source="trader_id", allow_null=True, read_only=True)

    class Meta(StateSerializer.Meta):
        fields = [
            "id",
            "name",
            *StateSerializer.Meta.fields,
            "symbol",
            "symbols",
            "max_rounds",
            "prompt_variant",
            "interval_minutes",
            "auto_execute",
            "trader",
            "strategy",
            "schedule",
            "as_of",
            "cache",
            "weighting",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class DebateDetailSerializer(DebateListSerializer):
    strategy = serializers.SerializerMethodField()
    participants = ParticipantSerializer(many=True, read_only=True)
    messages = MessageSerializer(many=True, read_only=True)
    votes = VoteSerializer(many=True, read_only=True)
    decisions = DecisionSerializer(many=True, read_only=True)
    event_id = serializers.SerializerMethodField()

    class Meta(DebateListSerializer.Meta):
        fields = [
            *DebateListSerializer.Meta.fields,
            "enable_oi_ranking",
            "oi_ranking_limit",
            "oi_duration",
            "market_snapshot",
            "participants",
            "messages",
            "votes",
            "decisions",
            "event_id",
        ]
        read_only_fields = fields

    @extend_schema_field(StrategySummarySerializer(allow_null=True))
    def get_strategy(self, obj: Debate) -> dict[str, Any] | None:
        return StrategySummarySerializer(obj.strategy).data if obj.strategy else None

    def get_event_id(self, obj: Debate) -> str:
        return self.context.get("event_id", "")
