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
from debates.engine.plan import STEP_STATUSES
from debates.models import Debate, Decision, Message, Participant, Vote
from debates.providers.pricing import usd_text
from debates.selectors import Spend, debate_spend
from debates.state import available_actions, debate_plan
from traders.serializers import ExecutionSerializer


class ParticipantSerializer(serializers.ModelSerializer):
    ai_model = serializers.IntegerField(source="ai_model_id", allow_null=True, read_only=True)
    ai_model_name = serializers.CharField(source="ai_model.name", allow_null=True, read_only=True)
    provider = serializers.CharField(source="ai_model.provider", allow_null=True, read_only=True)
    simulated = serializers.SerializerMethodField()
    emoji = serializers.SerializerMethodField()
    color = serializers.SerializerMethodField()
    temperature = serializers.SerializerMethodField(
        help_text="The seat's temperature: its own (the temperature mode), else its model's."
    )

    class Meta:
        model = Participant
        fields = [
            "id",
            "kind",
            "ai_model",
            "ai_model_name",
            "provider",
            "simulated",
            "personality",
            "emoji",
            "color",
            "speak_order",
            "temperature",
        ]
        read_only_fields = fields

    def get_temperature(self, obj: Participant) -> float | None:
        if obj.temperature is not None:
            return obj.temperature
        return obj.ai_model.temperature if obj.ai_model is not None else None

    def get_simulated(self, obj: Participant) -> bool:
        return obj.ai_model is not None and obj.ai_model.provider == "simulated"

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
            "cached_input_tokens": {"type": "integer"},
            "cost_usd": {"type": "string", "format": "decimal"},
        },
        "required": ["prompt_tokens", "completion_tokens", "cached_input_tokens", "cost_usd"],
    }
)
class UsageField(serializers.Field):
    """Token usage of a stored model call."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, value: Any) -> dict[str, Any]:
        return {
            "prompt_tokens": value.prompt_tokens,
            "completion_tokens": value.completion_tokens,
            "cached_input_tokens": value.cached_input_tokens,
            "cost_usd": usd_text(value.cost_usd),
        }


class SpendSerializer(serializers.Serializer):
    """What a set of model calls used and cost (``debates.selectors.Spend.to_dict``)."""

    calls = serializers.IntegerField(help_text="Calls that went to a model.")
    cached_calls = serializers.IntegerField(help_text="Calls answered from the cache.")
    attempts = serializers.IntegerField()
    prompt_tokens = serializers.IntegerField()
    completion_tokens = serializers.IntegerField()
    cached_input_tokens = serializers.IntegerField(
        help_text="Input tokens served from the providers' prompt caches."
    )
    tokens = serializers.IntegerField(help_text="Prompt plus completion tokens.")
    cost_usd = serializers.DecimalField(max_digits=16, decimal_places=10)


class DaySpendSerializer(SpendSerializer):
    day = serializers.DateField(help_text="A UTC day.")


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


class StepSerializer(serializers.Serializer):
    """One step of a debate's plan (``debates.engine.plan``)."""

    index = serializers.IntegerField()
    kind = serializers.CharField()
    round = serializers.IntegerField(allow_null=True)
    speaker = serializers.IntegerField(allow_null=True, help_text="The participant's id.")
    status = serializers.ChoiceField(choices=STEP_STATUSES)


# The fields of the state that come from the plan of steps (``_Planned``).
PLAN_FIELDS = ("current_step", "steps", "user_action_required", "can_advance", "available_actions")


class StateSerializer(serializers.ModelSerializer):
    """The state fields of a debate and its plan of steps: what a ``status`` event carries.

    The plan is computed once per representation (``debates.state.debate_plan``).
    """

    current_speaker = serializers.IntegerField(
        source="current_speaker_id", allow_null=True, read_only=True
    )
    current_step = serializers.IntegerField(
        allow_null=True, read_only=True, help_text="The index of the step the debate is at."
    )
    steps = StepSerializer(many=True, read_only=True)
    user_action_required = serializers.BooleanField(read_only=True)
    can_advance = serializers.BooleanField(read_only=True)
    available_actions = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = Debate
        fields = [
            "status",
            "phase",
            "pace",
            "current_round",
            "current_speaker",
            "level_used",
            *PLAN_FIELDS,
            "error",
        ]
        read_only_fields = fields

    def to_representation(self, instance: Debate) -> dict[str, Any]:
        return super().to_representation(_Planned(instance))


class _Planned:
    """A debate with its plan of steps computed once, read as the debate's attributes."""

    def __init__(self, debate: Debate) -> None:
        plan = debate_plan(debate)
        self._debate = debate
        self.current_step = plan.current_step
        self.steps = [step.to_dict() for step in plan.steps]
        self.user_action_required = plan.user_action_required
        self.can_advance = plan.can_advance
        self.available_actions = available_actions(debate, plan)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._debate, name)


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
            "human_turn_timeout_minutes",
            "steps_released",
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
    tokens = serializers.SerializerMethodField(help_text="Prompt plus completion tokens.")
    cost_usd = serializers.SerializerMethodField(help_text="What the debate's calls cost.")
    spend = serializers.SerializerMethodField()
    event_id = serializers.SerializerMethodField()

    class Meta(DebateListSerializer.Meta):
        fields = [
            *DebateListSerializer.Meta.fields,
            "enable_oi_ranking",
            "oi_ranking_limit",
            "oi_duration",
            "market_snapshot",
            "level",
            "level_reasons",
            "forced",
            "stopped_early",
            "mode",
            "mode_models",
            "temperature_range",
            "role_model_map",
            "max_output_tokens",
            "participants",
            "messages",
            "votes",
            "decisions",
            "tokens",
            "cost_usd",
            "spend",
            "event_id",
        ]
        read_only_fields = fields

    @extend_schema_field(SpendSerializer)
    def get_spend(self, obj: Debate) -> dict[str, Any]:
        return self._spend(obj).to_dict()

    def get_tokens(self, obj: Debate) -> int:
        return self._spend(obj).tokens

    @extend_schema_field({"type": "string", "format": "decimal"})
    def get_cost_usd(self, obj: Debate) -> str:
        return usd_text(self._spend(obj).cost_usd)

    def _spend(self, obj: Debate) -> Spend:
        cache = self.context.setdefault("spend", {})
        if obj.pk not in cache:
            cache[obj.pk] = debate_spend(debate_id=obj.pk)
        return cache[obj.pk]

    @extend_schema_field(StrategySummarySerializer(allow_null=True))
    def get_strategy(self, obj: Debate) -> dict[str, Any] | None:
        return StrategySummarySerializer(obj.strategy).data if obj.strategy else None

    def get_event_id(self, obj: Debate) -> str:
        return self.context.get("event_id", "")
