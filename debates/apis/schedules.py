"""Schedules: recurring debate templates; create, list, read, change, pause, resume, delete
(SPEC 11). Every write goes through ``debates.services.schedules``, which keeps the
schedule's Celery beat entry in step."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from arena.apis import JsonApi, error_responses, owned_or_404, paginated_response
from arena.inputs import (
    IdField,
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictIntegerField,
    requires_when,
    validate,
)
from debates.apis.debates import ParticipantInputSerializer, SeatingInputSerializer
from debates.models import CacheMode, DebateLevel, Schedule, Weighting
from debates.selectors import RUN_LEVELS, schedules_with_runs
from debates.services.schedules import (
    SEATING_FIELDS,
    schedule_create,
    schedule_delete,
    schedule_pause,
    schedule_resume,
    schedule_update,
)
from strategies.models import PromptVariant

TAGS = ["schedules"]


class SeatSerializer(serializers.Serializer):
    ai_model = serializers.IntegerField(
        allow_null=True, help_text="None where the mode or the role_model_map seats the model."
    )
    personality = serializers.CharField()


class ScheduleSerializer(serializers.ModelSerializer):
    strategy = serializers.IntegerField(source="strategy_id", allow_null=True, read_only=True)
    trader = serializers.IntegerField(source="trader_id", allow_null=True, read_only=True)
    last_debate = serializers.IntegerField(source="last_debate_id", allow_null=True, read_only=True)
    participants = SeatSerializer(many=True, read_only=True)
    runs_by_level = serializers.SerializerMethodField(
        help_text="How many of its debates ran at each level, once known."
    )

    class Meta:
        model = Schedule
        fields = [
            "id",
            "name",
            "strategy",
            "symbol",
            "participants",
            "max_rounds",
            "prompt_variant",
            "auto_execute",
            "trader",
            "interval_minutes",
            "enabled",
            "replay_as_of",
            "cache",
            "daily_token_budget",
            "daily_token_cap",
            "weighting",
            "level",
            *SEATING_FIELDS,
            "last_fired_at",
            "last_debate",
            "run_count",
            "skip_count",
            "skips_by_reason",
            "runs_by_level",
            "last_skip_reason",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    @extend_schema_field(
        {"type": "object", "properties": {level: {"type": "integer"} for level in RUN_LEVELS}}
    )
    def get_runs_by_level(self, obj: Schedule) -> dict[str, int]:
        if not hasattr(obj, "runs_L1"):
            obj = schedules_with_runs(owner=obj.owner_id).get(pk=obj.pk)
        return {level: getattr(obj, f"runs_{level}") for level in RUN_LEVELS}


@extend_schema_serializer(component_name="ScheduleInput")
class ScheduleInputSerializer(SeatingInputSerializer):
    schema_rules = (requires_when("auto_execute", [True], "trader", default=False),)

    name = StrictCharField(max_length=200)
    strategy = IdField(help_text="One of your strategies.")
    symbol = StrictCharField(required=False, allow_blank=True, max_length=40)
    participants = serializers.ListField(
        child=ParticipantInputSerializer(), help_text="2 to 6 seats, as for a debate."
    )
    max_rounds = StrictIntegerField(required=False, min_value=2, max_value=5)
    prompt_variant = StrictChoiceField(choices=PromptVariant.choices, required=False)
    auto_execute = StrictBooleanField(required=False)
    trader = IdField(
        required=False, allow_null=True, help_text="Required when auto_execute is true."
    )
    interval_minutes = StrictIntegerField(required=False, min_value=1)
    enabled = StrictBooleanField(required=False)
    replay_as_of = serializers.DateTimeField(
        required=False,
        allow_null=True,
        help_text="Dataset replay: the as_of of the next firing, advanced by each firing.",
    )
    cache = StrictChoiceField(
        choices=CacheMode.choices,
        required=False,
        help_text="The model-call cache of each firing's debate: off (default), use, refresh.",
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
    weighting = StrictChoiceField(
        choices=Weighting.choices,
        required=False,
        help_text="How votes weigh in the consensus: confidence (default) or calibrated "
        "(confidence x the voter's shrunk hit rate from earlier reviews).",
    )
    level = StrictChoiceField(
        choices=DebateLevel.choices,
        required=False,
        help_text="The level each firing's debate asks for: auto (default: gated after the "
        "openings, L2 on disagreement, low confidence, high impact or a failure), L1 or L2.",
    )


class ScheduleListApi(JsonApi):
    """List the user's schedules, newest first."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(
        operation_id="schedules_list",
        tags=TAGS,
        responses={200: ScheduleSerializer(many=True), **error_responses(404)},
    )
    def get(self, request: Request) -> Response:
        schedules = schedules_with_runs(owner=request.user).order_by("-created_at", "-id")
        return paginated_response(
            request=request, view=self, queryset=schedules, serializer_class=ScheduleSerializer
        )


class ScheduleCreateApi(JsonApi):
    """Create a schedule."""

    InputSerializer = ScheduleInputSerializer

    @extend_schema(
        operation_id="schedules_create",
        tags=TAGS,
        request=ScheduleInputSerializer,
        responses={201: ScheduleSerializer, **error_responses(400, 429)},
    )
    def post(self, request: Request) -> Response:
        data = validate(self.InputSerializer, request.data)
        schedule = schedule_create(owner=request.user, data=data)
        return Response(ScheduleSerializer(schedule).data, status=status.HTTP_201_CREATED)


class ScheduleDetailApi(JsonApi):
    """Return one schedule."""

    @extend_schema(
        operation_id="schedules_retrieve",
        tags=TAGS,
        responses={200: ScheduleSerializer, **error_responses(404)},
    )
    def get(self, request: Request, schedule_id: int) -> Response:
        schedule = owned_or_404(schedules_with_runs(owner=request.user), schedule_id, "Schedule")
        return Response(ScheduleSerializer(schedule).data)


class ScheduleUpdateApi(JsonApi):
    """Change some fields of a schedule (pause it with ``enabled: false``)."""

    InputSerializer = ScheduleInputSerializer

    @extend_schema(
        operation_id="schedules_partial_update",
        tags=TAGS,
        request=ScheduleInputSerializer,
        responses={200: ScheduleSerializer, **error_responses(400, 404)},
    )
    def patch(self, request: Request, schedule_id: int) -> Response:
        changes = validate(self.InputSerializer, request.data, partial=True)
        schedule = schedule_update(owner=request.user, schedule_id=schedule_id, changes=changes)
        return Response(ScheduleSerializer(schedule).data)


class ScheduleDeleteApi(JsonApi):
    """Delete a schedule; the debates it created stay."""

    @extend_schema(
        operation_id="schedules_destroy",
        tags=TAGS,
        responses={204: None, **error_responses(404)},
    )
    def delete(self, request: Request, schedule_id: int) -> Response:
        schedule_delete(owner=request.user, schedule_id=schedule_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SchedulePauseApi(JsonApi):
    """Pause a schedule: beat stops firing it until it is resumed."""

    @extend_schema(
        operation_id="schedules_pause",
        tags=TAGS,
        request=None,
        responses={200: ScheduleSerializer, **error_responses(404)},
    )
    def post(self, request: Request, schedule_id: int) -> Response:
        schedule = schedule_pause(owner=request.user, schedule_id=schedule_id)
        return Response(ScheduleSerializer(schedule).data)


class ScheduleResumeApi(JsonApi):
    """Resume a paused schedule; refused (400) when its template is no longer valid."""

    @extend_schema(
        operation_id="schedules_resume",
        tags=TAGS,
        request=None,
        responses={200: ScheduleSerializer, **error_responses(400, 404)},
    )
    def post(self, request: Request, schedule_id: int) -> Response:
        schedule = schedule_resume(owner=request.user, schedule_id=schedule_id)
        return Response(ScheduleSerializer(schedule).data)
