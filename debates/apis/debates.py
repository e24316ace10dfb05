"""The debate endpoints of SPEC 6 (the live stream is served by its own view).

Every operation is scoped to the requesting user: another user's debate is a 404 for
every verb. Representations come from ``debates.serializers``, the same ones the live
events carry.
"""

from __future__ import annotations

from django.http import HttpResponse, HttpResponseNotModified
from django.utils.cache import parse_etags
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from arena.apis import JsonApi, error_responses, paginated_response
from arena.inputs import (
    IdField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictFloatField,
    StrictIntegerField,
    StrictSerializer,
    requires_when,
    validate,
)
from debates.engine.judge import JUDGE_COUNTS
from debates.engine.personalities import PERSONALITIES
from debates.models import (
    MAX_HUMAN_TURN_TIMEOUT_MINUTES,
    CacheMode,
    DebateLevel,
    DebateMode,
    DebateStatus,
    OIDuration,
    Pace,
    SeatKind,
    Weighting,
)
from debates.selectors import (
    debate_detail_rendered,
    debate_get,
    debate_list,
    debate_representation,
)
from debates.serializers import (
    DebateDetailSerializer,
    DebateListSerializer,
    MessageSerializer,
    VoteSerializer,
)
from debates.services import (
    DebateInput,
    debate_advance,
    debate_cancel,
    debate_create,
    debate_delete,
    debate_retry,
    debate_retry_step,
    debate_start,
)
from debates.services.modes import MAX_OUTPUT_TOKENS
from strategies.models import PromptVariant

TAGS = ["debates"]


class DebateListApi(JsonApi):
    """List the user's debates, newest first."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    class FilterSerializer(serializers.Serializer):
        status = StrictChoiceField(choices=DebateStatus.choices, required=False)

    @extend_schema(
        operation_id="debates_list",
        tags=TAGS,
        parameters=[FilterSerializer],
        responses={200: DebateListSerializer(many=True), **error_responses(400, 404)},
    )
    def get(self, request: Request) -> Response:
        filters = validate(self.FilterSerializer, request.query_params)
        debates = debate_list(owner=request.user, status=filters.get("status"))
        return paginated_response(
            request=request, view=self, queryset=debates, serializer_class=DebateListSerializer
        )


class ParticipantInputSerializer(StrictSerializer):
    kind = StrictChoiceField(
        choices=SeatKind.choices,
        required=False,
        help_text="model (default) or human: the seat is yours, you write its turns and "
        "its vote (at most one; a debate started by hand only, not a schedule or a backtest).",
    )
    ai_model = IdField(
        required=False,
        allow_null=True,
        help_text="One of your AI models, enabled, with a key unless simulated; none for a "
        "human seat, nor where the debate's mode or role_model_map seats the models.",
    )
    personality = StrictChoiceField(choices=list(PERSONALITIES))


class JudgeInputSerializer(StrictSerializer):
    ai_model = IdField(help_text="One of your AI models; the judge never votes.")
    count = StrictIntegerField(
        required=False,
        min_value=1,
        max_value=3,
        help_text="1 (default) or 3 scoring calls at spread temperatures, median per item.",
    )

    def validate_count(self, value: int) -> int:
        if value not in JUDGE_COUNTS:
            raise serializers.ValidationError("Must be 1 or 3.")
        return value


@extend_schema_serializer(component_name="MaxOutputTokensInput")
class MaxOutputTokensSerializer(StrictSerializer):
    participants = StrictIntegerField(
        required=False, min_value=1, max_value=MAX_OUTPUT_TOKENS, help_text="Each seat's cap."
    )
    judge = StrictIntegerField(
        required=False, min_value=1, max_value=MAX_OUTPUT_TOKENS, help_text="The judge's cap."
    )


# The seating fields of a debate's input, the same for a schedule's: which model sits in
# each seat (debates.services.modes) and each role's output cap.
class SeatingInputSerializer(StrictSerializer):
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
    role_model_map = serializers.DictField(
        child=IdField(),
        required=False,
        help_text='{personality or "judge": ai_model}: that model in every such seat.',
    )
    max_output_tokens = MaxOutputTokensSerializer(required=False)


class DebateCreateApi(JsonApi):
    """Create a pending debate (SPEC 5.1); nothing is written when any field is bad."""

    @extend_schema_serializer(component_name="DebateCreateInput")
    class InputSerializer(SeatingInputSerializer):
        schema_rules = (requires_when("auto_execute", [True], "trader", default=False),)

        name = StrictCharField(max_length=200)
        strategy = IdField(help_text="One of your strategies.")
        symbol = StrictCharField(
            required=False,
            allow_blank=True,
            max_length=40,
            help_text="Primary coin (BTC, BTCUSDT, BTC/USDT...); empty: from the strategy.",
        )
        participants = serializers.ListField(
            child=ParticipantInputSerializer(), help_text="2 to 6 seats."
        )
        max_rounds = StrictIntegerField(required=False, min_value=2, max_value=5)
        interval_minutes = StrictIntegerField(required=False, min_value=1)
        prompt_variant = StrictChoiceField(choices=PromptVariant.choices, required=False)
        auto_execute = StrictBooleanField(required=False)
        trader = IdField(
            required=False, allow_null=True, help_text="Required when auto_execute is true."
        )
        enable_oi_ranking = StrictBooleanField(required=False)
        oi_ranking_limit = StrictIntegerField(required=False, min_value=1, max_value=10)
        oi_duration = StrictChoiceField(choices=OIDuration.choices, required=False)
        as_of = serializers.DateTimeField(
            required=False,
            allow_null=True,
            help_text="Replay instant for a strategy on the dataset market source.",
        )
        cache = StrictChoiceField(
            choices=CacheMode.choices,
            required=False,
            help_text="The model-call cache: off (default), use (answer calls made before "
            "from it) or refresh (call again and keep the new answers).",
        )
        level = StrictChoiceField(
            choices=DebateLevel.choices,
            required=False,
            help_text="L2 (default): the full debate; L1: the openings only, as the ballots; "
            "auto: gated after the openings (disagreement, low confidence, high impact, a "
            "failure or a human seat go on to L2; past the daily token budget a non-forced L2 "
            "is lowered to L1).",
        )
        judge = JudgeInputSerializer(
            required=False,
            allow_null=True,
            help_text="An optional judge: it summarises each round but the last, and "
            "scores the participants after the votes.",
        )
        weighting = StrictChoiceField(
            choices=Weighting.choices,
            required=False,
            help_text="How the consensus weighs a vote: confidence (default), judge "
            "(confidence times the judge's score of the voter; needs a judge) or calibrated "
            "(confidence times the voter's shrunk hit rate from earlier reviews).",
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

    @extend_schema(
        operation_id="debates_create",
        tags=TAGS,
        request=InputSerializer,
        responses={201: DebateDetailSerializer, **error_responses(400, 429)},
    )
    def post(self, request: Request) -> Response:
        data = validate(self.InputSerializer, request.data)
        debate = debate_create(owner=request.user, data=DebateInput(**data))
        detail = debate_representation(debate_id=debate.pk, owner=request.user)
        return Response(detail, status=status.HTTP_201_CREATED)


class PersonalityListApi(JsonApi):
    """List the five personalities a participant can play."""

    @extend_schema_serializer(component_name="Personality")
    class OutputSerializer(serializers.Serializer):
        id = serializers.CharField()
        name = serializers.CharField()
        emoji = serializers.CharField()
        color = serializers.CharField()
        description = serializers.CharField()

    @extend_schema(
        operation_id="debates_personalities_list",
        tags=TAGS,
        responses={200: OutputSerializer(many=True), **error_responses()},
    )
    def get(self, request: Request) -> Response:
        personalities = [personality.to_dict() for personality in PERSONALITIES.values()]
        return Response(self.OutputSerializer(personalities, many=True).data)


class DebateDetailApi(JsonApi):
    """Return a debate with its participants, messages, votes, decisions and state.

    The market snapshot comes without its raw candles unless ``?include=snapshot``. The
    answer carries an ``ETag``; ``If-None-Match`` with it is a ``304`` while the debate
    has not changed.
    """

    class FilterSerializer(StrictSerializer):
        include = StrictChoiceField(
            choices=["snapshot"],
            required=False,
            help_text="snapshot: the market snapshot with its raw candles.",
        )

    @extend_schema(
        operation_id="debates_retrieve",
        tags=TAGS,
        parameters=[FilterSerializer],
        responses={
            200: DebateDetailSerializer,
            304: OpenApiResponse(description="Not modified since the ETag given."),
            **error_responses(400, 404),
        },
    )
    def get(self, request: Request, debate_id: int) -> HttpResponse:
        filters = validate(self.FilterSerializer, request.query_params)
        rendered = debate_detail_rendered(
            debate_id=debate_id,
            owner=request.user,
            include_snapshot=filters.get("include") == "snapshot",
        )
        headers = {"ETag": rendered.etag, "Cache-Control": "private, no-cache"}
        if rendered.etag in parse_etags(request.headers.get("If-None-Match", "")):
            return HttpResponseNotModified(headers=headers)
        return HttpResponse(rendered.body, content_type="application/json", headers=headers)


class DebateDeleteApi(JsonApi):
    """Delete a pending or finished debate and everything it holds (409 while active)."""

    @extend_schema(
        operation_id="debates_destroy",
        tags=TAGS,
        responses={204: None, **error_responses(404, 409)},
    )
    def delete(self, request: Request, debate_id: int) -> Response:
        debate_delete(debate_id=debate_id, owner=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class DebateStartApi(JsonApi):
    """Start a pending debate: snapshot the market and hand the rounds to the workers."""

    @extend_schema(
        operation_id="debates_start",
        tags=TAGS,
        request=None,
        responses={200: DebateDetailSerializer, **error_responses(404, 409, 429)},
    )
    def post(self, request: Request, debate_id: int) -> Response:
        debate_start(debate_id=debate_id, owner=request.user)
        return Response(debate_representation(debate_id=debate_id, owner=request.user))


class DebateCancelApi(JsonApi):
    """Cancel a pending or running debate; no model call starts after it."""

    @extend_schema(
        operation_id="debates_cancel",
        tags=TAGS,
        request=None,
        responses={200: DebateDetailSerializer, **error_responses(404, 409)},
    )
    def post(self, request: Request, debate_id: int) -> Response:
        debate_cancel(debate_id=debate_id, owner=request.user)
        return Response(debate_representation(debate_id=debate_id, owner=request.user))


class DebateRetryApi(JsonApi):
    """Resume a failed debate from the step that failed, keeping every stored turn."""

    @extend_schema(
        operation_id="debates_retry",
        tags=TAGS,
        request=None,
        responses={200: DebateDetailSerializer, **error_responses(404, 409)},
    )
    def post(self, request: Request, debate_id: int) -> Response:
        debate_retry(debate_id=debate_id, owner=request.user)
        return Response(debate_representation(debate_id=debate_id, owner=request.user))


class DebateAdvanceApi(JsonApi):
    """Go on with a debate held before its next step (the manual pace's "continue")."""

    @extend_schema(
        operation_id="debates_advance",
        tags=TAGS,
        request=None,
        responses={200: DebateDetailSerializer, **error_responses(404, 409)},
    )
    def post(self, request: Request, debate_id: int) -> Response:
        debate_advance(debate_id=debate_id, owner=request.user)
        return Response(debate_representation(debate_id=debate_id, owner=request.user))


class DebateRetryStepApi(JsonApi):
    """Run the current failed step again, alone, reusing everything stored."""

    @extend_schema(
        operation_id="debates_retry_step",
        tags=TAGS,
        request=None,
        responses={200: DebateDetailSerializer, **error_responses(404, 409)},
    )
    def post(self, request: Request, debate_id: int) -> Response:
        debate_retry_step(debate_id=debate_id, owner=request.user)
        return Response(debate_representation(debate_id=debate_id, owner=request.user))


class DebateMessageListApi(JsonApi):
    """List a debate's messages by round and speaking order."""

    @extend_schema(
        operation_id="debates_messages_list",
        tags=TAGS,
        responses={200: MessageSerializer(many=True), **error_responses(404)},
    )
    def get(self, request: Request, debate_id: int) -> Response:
        debate = debate_get(debate_id=debate_id, owner=request.user)
        return Response(MessageSerializer(debate.messages.all(), many=True).data)


class DebateVoteListApi(JsonApi):
    """List a debate's votes (abstentions included) by speaking order and coin."""

    @extend_schema(
        operation_id="debates_votes_list",
        tags=TAGS,
        responses={200: VoteSerializer(many=True), **error_responses(404)},
    )
    def get(self, request: Request, debate_id: int) -> Response:
        debate = debate_get(debate_id=debate_id, owner=request.user)
        return Response(VoteSerializer(debate.votes.all(), many=True).data)
