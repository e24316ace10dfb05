"""What a debate and a schedule are made of, and how what a client gives is checked.

A debate (SPEC 5.1), a schedule's template (SPEC 11) and a backtest's share their fields
and rules (``TemplateInputSerializer``): an owned strategy; 2 to 6 seats, each of the
owner's AI models that may be called now (enabled, with a key unless keyless), seated
as the mode and the role-to-model map say (``debates.services.modes``); rounds 2..5; a
primary coin the strategy's market source can serve; an owned trader when it executes
automatically. A debate adds the judge, the replay instant, the pace and a person's
seat (``DebateInputSerializer``); a schedule its replay and token budgets
(``ScheduleInputSerializer``). Every bad field is named; the values a serializer
returns are the ones to store, objects for ids, the seats checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from arena.exceptions import ValidationError
from arena.inputs import (
    MAX_ID,
    IdField,
    OwnedField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictFloatField,
    StrictIntegerField,
    StrictSerializer,
    requires_when,
)
from debates.engine.judge import JUDGE_COUNTS
from debates.engine.personalities import PERSONALITIES
from debates.models import (
    MAX_HUMAN_TURN_TIMEOUT_MINUTES,
    AIModel,
    CacheMode,
    Debate,
    DebateLevel,
    DebateMode,
    OIDuration,
    Pace,
    Personality,
    SeatKind,
    Weighting,
)
from debates.services.modes import (
    JUDGE,
    MAX_OUTPUT_TOKENS,
    MODEL_COUNTS,
    Refuse,
    SeatPlan,
    model_refusal,
    planned_judge,
    seat_plan,
)
from strategies.models import MarketSource, PromptVariant, Strategy
from strategies.services import SymbolField
from strategies.snapshots import outside_replay_window, unservable_symbol

MIN_PARTICIPANTS, MAX_PARTICIPANTS = 2, 6
# What a schedule's or a backtest's debates take, having no judge and no person's seat.
TEMPLATE_WEIGHTINGS = [Weighting.CONFIDENCE, Weighting.CALIBRATED]
MODEL_SEAT_KINDS = [SeatKind.MODEL]
MIN_ROUNDS, MAX_ROUNDS = 2, 5
# The trader a debate executes on, as its model declares it (trading's model: this app
# imports nothing of trading).
TRADER = Debate.trader.field.related_model


# The rules of a debate's fields that the schema cannot state (they need stored objects
# or compare values), as the descriptions of a debate's, schedule's and backtest's
# create say them; each refusal is a 400 naming the field.
TEMPLATE_RULES = (
    "Rules the schema cannot state (400 naming the field): the strategy, the trader and "
    "each AI model named are yours, and each model may be called now (enabled, with its "
    "key unless keyless, not retired); a model seat names its AI model unless the mode or "
    "role_model_map seats it, and where they seat it names none (but the first seat of the "
    "homogeneous or temperature mode when mode_models is empty); the primary coin is one "
    "the strategy's market source has; a temperature_range is [lowest, highest]."
)


class NotEnoughParticipants(ValidationError):
    """Fewer than two participants were given; ``fields`` still names every bad field."""

    code = "not_enough_participants"


@dataclass(frozen=True)
class Seat:
    """One checked seat: a model playing a personality, or (``ai_model`` None) the
    debate's owner in a human seat."""

    ai_model: AIModel | None
    personality: str
    temperature: float | None = None

    @property
    def kind(self) -> str:
        return SeatKind.MODEL if self.ai_model is not None else SeatKind.HUMAN

    def as_template(self) -> dict[str, Any]:
        """Return the seat as a schedule or a backtest stores it (model seats only)."""
        assert self.ai_model is not None, "only model seats are stored in templates"
        return {"ai_model": self.ai_model.pk, "personality": self.personality}


class SeatInputSerializer(StrictSerializer):
    """A seat of a schedule's or a backtest's debates: an AI model's."""

    kind = StrictChoiceField(
        choices=MODEL_SEAT_KINDS,
        required=False,
        help_text="model (the only kind: a human seat is for a debate started by hand).",
    )
    ai_model = IdField(
        required=False,
        allow_null=True,
        help_text="One of your AI models, enabled, with a key unless simulated; none where "
        "the mode or role_model_map seats the models.",
    )
    personality = StrictChoiceField(choices=Personality.choices)


class ParticipantInputSerializer(SeatInputSerializer):
    """A seat of a debate started by hand: an AI model's, or the owner's."""

    # A human seat has no AI model.
    schema_rules = (
        {
            "anyOf": [
                {"properties": {"kind": {"not": {"enum": [SeatKind.HUMAN]}}}},
                {"properties": {"ai_model": {"not": {"type": "integer"}}}},
            ]
        },
    )

    kind = StrictChoiceField(
        choices=SeatKind.choices,
        required=False,
        help_text="model (default) or human: the seat is yours, you write its turns and "
        "its vote (at most one).",
    )
    ai_model = IdField(
        required=False,
        allow_null=True,
        help_text="One of your AI models, enabled, with a key unless simulated; none for a "
        "human seat, nor where the debate's mode or role_model_map seats the models.",
    )


class SeatsField(serializers.ListField):
    """A debate's seats, 2 to 6 (fewer: ``not_enough_participants``)."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("help_text", f"{MIN_PARTICIPANTS} to {MAX_PARTICIPANTS} seats.")
        super().__init__(min_length=MIN_PARTICIPANTS, max_length=MAX_PARTICIPANTS, **kwargs)

    def to_internal_value(self, data: Any) -> list[Any]:
        seats = super().to_internal_value(data)
        if not MIN_PARTICIPANTS <= len(seats) <= MAX_PARTICIPANTS:
            few = len(seats) < MIN_PARTICIPANTS
            raise serializers.ValidationError(
                f"A debate needs {MIN_PARTICIPANTS} to {MAX_PARTICIPANTS} participants; "
                f"got {len(seats)}.",
                code=NotEnoughParticipants.code if few else "invalid",
            )
        return seats


@extend_schema_field(
    {
        "type": "object",
        "properties": {
            role: {"type": "integer", "minimum": 1, "maximum": MAX_ID}
            for role in (*PERSONALITIES, JUDGE)
        },
        "additionalProperties": False,
    }
)
class RoleModelMapField(serializers.DictField):
    """``{personality or "judge": ai_model}``; another key is refused by the seat plan."""


class JudgeInputSerializer(StrictSerializer):
    ai_model = IdField(help_text="One of your AI models; the judge never votes.")
    count = StrictIntegerField(
        required=False,
        one_of=JUDGE_COUNTS,
        help_text="1 (default) or 3 scoring calls at spread temperatures, median per item.",
    )


@extend_schema_serializer(component_name="MaxOutputTokensInput")
class MaxOutputTokensSerializer(StrictSerializer):
    participants = StrictIntegerField(
        required=False, min_value=1, max_value=MAX_OUTPUT_TOKENS, help_text="Each seat's cap."
    )
    judge = StrictIntegerField(
        required=False, min_value=1, max_value=MAX_OUTPUT_TOKENS, help_text="The judge's cap."
    )


class SeatingInputSerializer(StrictSerializer):
    """Which model sits in each seat (``debates.services.modes``) and each role's
    output cap: a debate's, and a schedule's for its debates."""

    mode = StrictChoiceField(
        choices=DebateMode.choices,
        required=False,
        help_text="custom (default: each seat its own model), homogeneous (one model in "
        "every seat), temperature (one model, the seats at temperatures over "
        "temperature_range), adversarial (bull and contrarian on mode_models[0], bear "
        "and risk_manager on [1], the judge on [2]).",
    )
    mode_models = serializers.ListField(
        child=IdField(),
        required=False,
        max_length=3,
        help_text="The AI models the mode seats: [A] or [A, B, C].",
    )
    temperature_range = serializers.ListField(
        child=StrictFloatField(min_value=0, max_value=2),
        required=False,
        min_length=2,
        max_length=2,
        allow_null=True,
        help_text="[lowest, highest] temperature of the temperature mode (0.2 to 1.0); "
        "null: none given.",
    )
    role_model_map = RoleModelMapField(
        child=IdField(),
        required=False,
        help_text='{personality or "judge": ai_model}: that model in every such seat.',
    )
    max_output_tokens = MaxOutputTokensSerializer(required=False)


SEATING_FIELDS = tuple(SeatingInputSerializer().fields)


def _mode_rule() -> dict[str, Any]:
    """Return the schema rule of a create: how many ``mode_models`` each mode takes, and
    a ``temperature_range`` only in the temperature mode (``debates.services.modes``)."""
    cases = []
    for mode, (fewest, most) in MODEL_COUNTS.items():
        others = [other for other in MODEL_COUNTS if other != mode]
        models: dict[str, Any] = {"maxItems": most, **({"minItems": fewest} if fewest else {})}
        case: dict[str, Any] = {
            "properties": {"mode": {"not": {"enum": others}}, "mode_models": models}
        }
        if mode != DebateMode.TEMPERATURE:  # absent or null
            case["properties"]["temperature_range"] = {"not": {"type": "array"}}
        # custom, the default, is the only mode that may be left out
        required = [*([] if mode == DebateMode.CUSTOM else ["mode"])]
        required += ["mode_models"] if fewest else []
        if required:
            case["required"] = required
        cases.append(case)
    return {"anyOf": cases}


MODE_RULE = _mode_rule()


class TemplateInputSerializer(SeatingInputSerializer):
    """A debate's settings, checked against the owner's objects (``context["owner"]``);
    ``validate`` adds ``seats``, the checked seats, and the mode's stored fields."""

    schema_rules = (requires_when("auto_execute", [True], "trader", default=False), MODE_RULE)

    name = StrictCharField(max_length=200)
    strategy = OwnedField(Strategy, help_text="One of your strategies.")
    symbol = SymbolField(
        required=False,
        allow_blank=True,
        help_text="Primary coin (BTC, BTCUSDT, BTC/USDT...); empty: from the strategy.",
    )
    participants = SeatsField(child=SeatInputSerializer())
    max_rounds = StrictIntegerField(required=False, min_value=MIN_ROUNDS, max_value=MAX_ROUNDS)
    interval_minutes = StrictIntegerField(required=False, min_value=1)
    prompt_variant = StrictChoiceField(choices=PromptVariant.choices, required=False)
    auto_execute = StrictBooleanField(required=False)
    trader = OwnedField(
        TRADER, required=False, allow_null=True, help_text="Required when auto_execute is true."
    )
    cache = StrictChoiceField(
        choices=CacheMode.choices,
        required=False,
        help_text="The model-call cache: off (default), use (answer calls made before "
        "from it) or refresh (call again and keep the new answers).",
    )
    weighting = StrictChoiceField(
        choices=TEMPLATE_WEIGHTINGS,
        required=False,
        help_text="How the consensus weighs a vote: confidence (default) or calibrated "
        "(confidence times the voter's shrunk hit rate from earlier reviews).",
    )
    level = StrictChoiceField(
        choices=DebateLevel.choices,
        required=False,
        help_text="L2: the full debate; L1: the openings only, as the ballots; auto: gated "
        "after the openings (disagreement, low confidence, high impact, a failure or a human "
        "seat go on to L2; past the daily token budget a non-forced L2 is lowered to L1). "
        "Default: L2 for a debate, auto for a schedule's.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Return ``attrs`` with the values to store, or refuse every bad field."""
        errors: dict[str, list[str]] = {}
        self.check(attrs, lambda name, message: errors.setdefault(name, []).append(message))
        if errors:
            raise serializers.ValidationError(errors)
        return attrs

    def check(self, attrs: dict[str, Any], refuse: Refuse) -> None:
        """Refuse with ``refuse(field, message)`` what the fields allow alone but not
        together, or not with the owner's objects; add the values to store to ``attrs``."""
        symbol = attrs.get("symbol")
        refusal = unservable_symbol(attrs["strategy"], symbol) if symbol else None
        if refusal is not None:
            refuse("symbol", refusal)
        if attrs.get("auto_execute") is True and attrs.get("trader") is None:
            refuse("trader", "Required when auto_execute is true.")
        if attrs.get("weighting") == Weighting.JUDGE and attrs.get("judge") is None:
            refuse("weighting", "Weighting by judge needs a judge.")
        seating = {name: attrs.get(name) for name in SEATING_FIELDS}
        plan = seat_plan(self.context["owner"], attrs["participants"], seating, refuse)
        attrs.update(plan.stored)
        attrs["seats"] = self._seats(attrs["participants"], plan, refuse)

    def _seats(self, given: list[dict[str, Any]], plan: SeatPlan, refuse: Refuse) -> list[Seat]:
        """Return the seats, with the models and temperatures ``plan`` gives them."""
        chosen = [i for i in plan.models if i is not None]
        models = {
            m.pk: m for m in AIModel.objects.filter(owner=self.context["owner"], pk__in=chosen)
        }
        seats: list[Seat] = []
        for index, seat in enumerate(given):
            where, personality = f"participants[{index}]", seat["personality"]
            if seat.get("kind") == SeatKind.HUMAN:
                self._check_human(given, index, refuse)
                seats.append(Seat(None, personality))
                continue
            model = models.get(plan.models[index])
            refusal = model_refusal(model, plan.models[index])
            if refusal:
                refuse(f"{where}.ai_model", refusal)
            else:
                seats.append(Seat(model, personality, plan.temperatures[index]))
        return seats

    def _check_human(self, given: list[dict[str, Any]], index: int, refuse: Refuse) -> None:
        """Refuse a second human seat, or one with a model (only a debate started by hand
        takes one: its seats are ``ParticipantInputSerializer``)."""
        where = f"participants[{index}]"
        first = next(i for i, seat in enumerate(given) if seat.get("kind") == SeatKind.HUMAN)
        if first != index:
            refuse(
                f"{where}.kind",
                f"A debate has at most one human seat; participants[{first}] is one.",
            )
        if given[index].get("ai_model") is not None:
            refuse(f"{where}.ai_model", "A human seat has no AI model.")


@extend_schema_serializer(component_name="DebateCreateInput")
class DebateInputSerializer(TemplateInputSerializer):
    """A debate as a client gives it (SPEC 5.1)."""

    schema_rules = (
        *TemplateInputSerializer.schema_rules,
        requires_when("weighting", [Weighting.JUDGE], "judge", default=Weighting.CONFIDENCE),
    )

    participants = SeatsField(child=ParticipantInputSerializer())
    weighting = StrictChoiceField(
        choices=Weighting.choices,
        required=False,
        help_text="How the consensus weighs a vote: confidence (default), judge "
        "(confidence times the judge's score of the voter; needs a judge) or calibrated "
        "(confidence times the voter's shrunk hit rate from earlier reviews).",
    )

    enable_oi_ranking = StrictBooleanField(required=False)
    oi_ranking_limit = StrictIntegerField(required=False, min_value=1, max_value=10)
    oi_duration = StrictChoiceField(choices=OIDuration.choices, required=False)
    as_of = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="Replay instant for a strategy on the dataset market source.",
    )
    judge = JudgeInputSerializer(
        required=False,
        allow_null=True,
        help_text="An optional judge: it summarises each round but the last, and "
        "scores the participants after the votes.",
    )
    human_turn_timeout_minutes = StrictIntegerField(
        required=False,
        min_value=1,
        max_value=MAX_HUMAN_TURN_TIMEOUT_MINUTES,
        help_text="Minutes the person in a human seat has for each turn and the vote "
        "before it is skipped (30 by default).",
    )
    pace = StrictChoiceField(
        choices=Pace.choices,
        required=False,
        help_text="auto (default): the steps follow one another; manual: the debate "
        "stops after each step until POST .../advance.",
    )

    def check(self, attrs: dict[str, Any], refuse: Refuse) -> None:
        super().check(attrs, refuse)
        strategy, as_of = attrs["strategy"], attrs.get("as_of")
        if as_of is not None and strategy.market_source == MarketSource.DATASET:
            refusal = outside_replay_window(strategy, as_of)
            if refusal is not None:
                refuse("as_of", refusal)
        self._judge(attrs, attrs.pop("judge", None), refuse)
        attrs.pop("participants")

    def _judge(self, attrs: dict[str, Any], judge: dict[str, Any] | None, refuse: Refuse) -> None:
        """Check the judge's model; store it and its count, or the model the mode and
        the map give the judge of a debate that has one."""
        attrs["judge_model"], attrs["judge_count"] = None, 1
        if judge is None:
            return
        owner, given = self.context["owner"], judge["ai_model"]
        model = AIModel.objects.filter(owner=owner, pk=given).first()
        refusal = model_refusal(model, given)
        if refusal:
            refuse("judge.ai_model", refusal)
        attrs["judge_model"], attrs["judge_count"] = model, judge.get("count", 1)
        named = planned_judge(attrs)
        if model is not None and named not in (None, model.pk):
            attrs["judge_model"] = AIModel.objects.get(owner=owner, pk=named)


@extend_schema_serializer(component_name="ScheduleInput")
class ScheduleInputSerializer(TemplateInputSerializer):
    """A schedule's template, as a client gives it (SPEC 11)."""

    enabled = StrictBooleanField(required=False)
    replay_as_of = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="Dataset replay: the as_of of the next firing, advanced by each firing.",
    )
    daily_token_budget = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        help_text="Tokens a UTC day past which a firing's debate runs lighter.",
    )
    daily_token_cap = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        help_text="Tokens a UTC day past which no model call of the schedule starts.",
    )

    def check(self, attrs: dict[str, Any], refuse: Refuse) -> None:
        super().check(attrs, refuse)
        for name, messages in replay_refusals(
            attrs["strategy"], attrs.get("trader"), attrs
        ).items():
            for message in messages:
                refuse(name, message)
        # A template keeps each seat as given: each firing seats the models again.
        attrs["participants"] = [
            {"ai_model": seat.get("ai_model"), "personality": seat["personality"]}
            for seat in attrs["participants"]
        ]
        del attrs["seats"]


def replay_refusals(
    strategy: Strategy | None, trader: Any | None, values: dict[str, Any]
) -> dict[str, list[str]]:
    """Return what is wrong with a replay schedule (nothing when it does not replay)."""
    as_of = values.get("replay_as_of")
    if not isinstance(as_of, datetime) or as_of.tzinfo is None or strategy is None:
        return {}
    errors: dict[str, list[str]] = {}
    if strategy.market_source != MarketSource.DATASET:
        errors["replay_as_of"] = [
            f"A replay needs a strategy on the dataset; {strategy.name} reads live prices."
        ]
    else:
        refusal = outside_replay_window(strategy, as_of)
        if refusal is not None:
            errors["replay_as_of"] = [refusal]
    if values.get("auto_execute") is True and trader is not None and not trader.is_dataset_paper:
        errors["trader"] = ["A replay executes only on a paper trader priced from the dataset."]
    return errors
