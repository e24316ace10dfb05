"""Representations of debates, shared by the REST API, live events and ``run_debate``.

A payload has the same shape wherever it appears (SPEC 6 and 7), so it is built here
once. Querysets given to these serializers come from ``debates.selectors``, which
prefetch everything they touch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from django.core.exceptions import ImproperlyConfigured
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from debates.engine.personalities import PERSONALITIES
from debates.engine.plan import STEP_STATUSES, Plan, Step
from debates.models import (
    Debate,
    Decision,
    JudgeCall,
    JudgeCallKind,
    JudgeScore,
    Message,
    ParseStatus,
    Participant,
    StepStatus,
    Vote,
)
from debates.providers.pricing import usd_text
from debates.selectors import Spend, debate_rows, debate_spend
from debates.state import DecisionFacts, available_actions, debate_plan, step_outcome


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
            "reasoning_tokens": {"type": "integer"},
            "cached_input_tokens": {"type": "integer"},
            "cost_usd": {"type": "string", "format": "decimal"},
            "estimated": {
                "type": "boolean",
                "description": "The tokens are the simulated model's estimate.",
            },
        },
        "required": [
            "prompt_tokens",
            "completion_tokens",
            "reasoning_tokens",
            "cached_input_tokens",
            "cost_usd",
            "estimated",
        ],
    }
)
class UsageField(serializers.Field):
    """Token usage of a stored model call: the completion tokens count the reasoning
    tokens among them; ``estimated``: the simulated model estimated them."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(source="*", read_only=True, **kwargs)

    def to_representation(self, value: Any) -> dict[str, Any]:
        return {
            "prompt_tokens": value.prompt_tokens,
            "completion_tokens": value.completion_tokens,
            "reasoning_tokens": value.reasoning_tokens,
            "cached_input_tokens": value.cached_input_tokens,
            "cost_usd": usd_text(value.cost_usd),
            "estimated": value.tokens_estimated,
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
    estimated_tokens = serializers.IntegerField(
        help_text="Tokens the simulated model estimated rather than a provider counted."
    )
    tokens = serializers.IntegerField(help_text="Prompt plus completion tokens.")
    cost_usd = serializers.DecimalField(max_digits=16, decimal_places=10)
    dropped_calls = serializers.IntegerField(
        help_text="Calls answered after their debate had left their step: counted, not used."
    )
    dropped_cost_usd = serializers.DecimalField(
        max_digits=16, decimal_places=10, help_text="What the dropped calls cost."
    )


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

    @extend_schema_field({"allOf": [{"$ref": "#/components/schemas/Execution"}], "nullable": True})
    def get_execution(self, obj: Decision) -> dict[str, Any] | None:
        execution = getattr(obj, "execution", None)
        if execution is None:
            return None
        if _execution_representation is None:
            raise ImproperlyConfigured("no representation of executions is registered")
        return _execution_representation(execution)


class MadeDecisionSerializer(DecisionSerializer):
    """A decision the consensus has just stored: it has no execution yet, and none is
    read."""

    def get_execution(self, obj: Decision) -> None:
        return None


# A decision's execution is trading's (``traders``): its representation is registered
# by that app once it is ready, so that this app imports nothing of trading.
_execution_representation: Callable[[Any], dict[str, Any]] | None = None


def execution_representation_register(represent: Callable[[Any], dict[str, Any]]) -> None:
    """Represent each decision's execution with ``represent`` (the trading app's)."""
    global _execution_representation
    _execution_representation = represent


class JudgeCallSerializer(serializers.ModelSerializer):
    """A stored judge call, without its prompt (the admin shows that)."""

    usage = UsageField()

    class Meta:
        model = JudgeCall
        fields = [
            "id",
            "kind",
            "round",
            "judge",
            "temperature",
            "status",
            "content",
            "parse_status",
            "result",
            "error",
            "usage",
            "latency_ms",
            "attempts",
            "cached",
            "created_at",
        ]
        read_only_fields = fields


class JudgeScoreSerializer(serializers.ModelSerializer):
    participant = serializers.IntegerField(source="participant_id", read_only=True)

    class Meta:
        model = JudgeScore
        fields = ["participant", "score", "items", "agreement", "judges", "missing"]
        read_only_fields = fields


class RoundSummarySerializer(serializers.Serializer):
    """The judge's summary of a round, read from its call; ``text`` is empty and
    ``missing`` says why when there is none (later rounds then got the full history)."""

    round = serializers.IntegerField()
    status = serializers.CharField()
    text = serializers.CharField(allow_blank=True)
    tally = serializers.DictField(child=serializers.DictField(child=serializers.IntegerField()))
    missing = serializers.CharField(allow_blank=True)

    def to_representation(self, call: JudgeCall) -> dict[str, Any]:
        result = call.result if isinstance(call.result, dict) else {}
        usable = call.status == StepStatus.OK and call.parse_status != ParseStatus.FAILED
        missing = ""
        if call.status == StepStatus.ERROR:
            missing = f"the judge call failed: {(call.error or {}).get('code', 'unknown')}"
        elif not usable:
            missing = "the judge's answer held no usable summary"
        return {
            "round": call.round,
            "status": call.parse_status if call.status == StepStatus.OK else "error",
            "text": result.get("text", "") if usable else "",
            "tally": result.get("tally", {}),
            "missing": missing,
        }


class JudgeSerializer(serializers.Serializer):
    """A debate's judge: its settings, the round summaries, the scores and every call."""

    ai_model = serializers.IntegerField(source="judge_model_id")
    ai_model_name = serializers.CharField(source="judge_model.name")
    simulated = serializers.SerializerMethodField()
    count = serializers.IntegerField(source="judge_count")
    summaries = serializers.SerializerMethodField()
    scores = JudgeScoreSerializer(source="judge_scores", many=True)
    calls = JudgeCallSerializer(source="judge_calls", many=True)

    def get_simulated(self, obj: Debate) -> bool:
        return obj.judge_model.provider == "simulated"

    @extend_schema_field(RoundSummarySerializer(many=True))
    def get_summaries(self, obj: Debate) -> list[dict[str, Any]]:
        calls = [c for c in obj.judge_calls.all() if c.kind == JudgeCallKind.ROUND_SUMMARY]
        return RoundSummarySerializer(calls, many=True).data


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
    outcome = serializers.DictField(
        allow_null=True,
        help_text="What a step no turn or ballot records stored beside its status (else "
        "null): the execution's `{code, message}` when it was refused, `{reason}` when it "
        "was skipped, `{execution}` (its id) when it ran.",
    )


# The fields of the state that come from the plan of steps (``PlannedDebate``).
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
    steps = serializers.SerializerMethodField()
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
            "human_due_at",
            "error",
        ]
        read_only_fields = fields

    @extend_schema_field(StepSerializer(many=True))
    def get_steps(self, obj: PlannedDebate) -> list[dict[str, Any]]:
        # Plain dicts already (``Step.to_dict``): a serializer per step would only copy
        # them, for two thirds of the time a page of the list takes.
        return obj.steps

    def to_representation(self, instance: Debate) -> dict[str, Any]:
        planned = instance if isinstance(instance, PlannedDebate) else PlannedDebate(instance)
        return super().to_representation(planned)


class PlannedDebate:
    """A debate with its plan of steps (computed once, unless given), read as the
    debate's attributes; ``decisions`` as ``debates.state.available_actions`` takes them."""

    def __init__(
        self,
        debate: Debate,
        plan: Plan | None = None,
        decisions: Iterable[DecisionFacts] | None = None,
    ) -> None:
        plan = debate_plan(debate) if plan is None else plan
        self._debate = debate
        self.current_step = plan.current_step
        self.steps = [_step_shown(debate, step) for step in plan.steps]
        self.user_action_required = plan.user_action_required
        self.can_advance = plan.can_advance
        self.available_actions = available_actions(debate, plan, decisions)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._debate, name)


def _step_shown(debate: Debate, step: Step) -> dict[str, Any]:
    """Return a step as the state shows it: ``Step.to_dict``, with ``outcome`` what its
    stored outcome (``Debate.step_outcomes``) holds beside the status, or None."""
    stored = step_outcome(debate, step.key)
    detail = {k: v for k, v in stored.items() if k != "status"} if isinstance(stored, dict) else {}
    return {**step.to_dict(), "outcome": detail or None}


class DebatePageSerializer(serializers.ListSerializer):
    """A page of the list: ``debate_rows`` serves each row, stored or rendered here."""

    def to_representation(self, data: Any) -> list[dict[str, Any]]:
        debates = list(data)  # one owner's (``debate_list``)
        if not debates:
            return []
        return debate_rows(
            [debate.pk for debate in debates],
            lambda debate, plan: self.child.to_representation(PlannedDebate(debate, plan)),
            owner_id=debates[0].owner_id,
        )


class DebateListSerializer(StateSerializer):
    strategy = serializers.IntegerField(source="strategy_id", allow_null=True, read_only=True)
    trader = serializers.IntegerField(source="trader_id", allow_null=True, read_only=True)

    class Meta(StateSerializer.Meta):
        list_serializer_class = DebatePageSerializer
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
            "origin",
            "schedule",
            "backtest",
            "as_of",
            "cache",
            "weighting",
            "human_turn_timeout_minutes",
            "steps_released",
            "awaits_book",
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
    judge = serializers.SerializerMethodField()
    tokens = serializers.SerializerMethodField(help_text="Prompt plus completion tokens.")
    cost_usd = serializers.SerializerMethodField(help_text="What the debate's calls cost.")
    spend = serializers.SerializerMethodField()
    event_id = serializers.SerializerMethodField()

    class Meta(DebateListSerializer.Meta):
        list_serializer_class = serializers.ListSerializer
        fields = [
            *DebateListSerializer.Meta.fields,
            "enable_oi_ranking",
            "oi_ranking_limit",
            "oi_duration",
            "market_snapshot",
            "book",
            "track_record",
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
            "judge",
            "tokens",
            "cost_usd",
            "spend",
            "event_id",
        ]
        read_only_fields = fields

    @extend_schema_field(JudgeSerializer(allow_null=True))
    def get_judge(self, obj: Debate) -> dict[str, Any] | None:
        return JudgeSerializer(obj).data if obj.judge_model_id else None

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

    def to_representation(self, instance: Debate) -> dict[str, Any]:
        data = super().to_representation(instance)
        snapshot = with_price_decimals(data["market_snapshot"])
        if not self.context.get("include_snapshot"):
            snapshot = snapshot_without_candles(snapshot)
        data["market_snapshot"] = snapshot
        return data


def with_price_decimals(snapshot: dict[str, Any] | None) -> dict[str, Any] | None:
    """Return a stored snapshot whose coins each say how many decimals their prices have
    (``price_decimals``, the most any of their candles shows), so a client can round a
    fill, a stop or a target to the coin's own precision."""
    if not snapshot:
        return snapshot
    coins = [{**coin, "price_decimals": price_decimals(coin)} for coin in snapshot.get("coins", [])]
    return {**snapshot, "coins": coins}


def price_decimals(coin: dict[str, Any]) -> int:
    """Return the most decimals a coin's candle prices show (at most 8; 2 without any)."""
    return decimals_shown(
        float(candle.get(key, 0.0))
        for frame in coin.get("timeframes", [])
        for candle in frame.get("candles", [])
        for key in ("open", "high", "low", "close")
    )


def decimals_shown(prices: Iterable[float]) -> int:
    """Return the most decimals any of ``prices`` shows (at most 8; 2 without any)."""
    most = None
    for value in prices:
        text = repr(float(value))
        decimals = 0 if "e" in text or text.endswith(".0") else len(text.split(".")[1])
        most = decimals if most is None else max(most, decimals)
    return 2 if most is None else min(most, 8)


def snapshot_without_candles(snapshot: dict[str, Any] | None) -> dict[str, Any] | None:
    """Return a stored market snapshot with each timeframe's raw candles left out (its
    summary, prices and indicators stay): what the detail shows by default."""
    if not snapshot:
        return snapshot
    coins = [
        {
            **coin,
            "timeframes": [
                {key: value for key, value in frame.items() if key != "candles"}
                for frame in coin.get("timeframes", [])
            ],
        }
        for coin in snapshot.get("coins", [])
    ]
    return {**snapshot, "coins": coins}
