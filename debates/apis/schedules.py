"""Schedules: recurring debate templates; create, list, read, change, pause, resume, delete
(SPEC 11). Every write goes through ``debates.services.schedules``, which keeps the
schedule's Celery beat entry in step."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from arena.apis import JsonApi, error_responses
from arena.crud import Resource
from arena.inputs import CHANGE_RULES, shown_fields
from debates.models import Schedule
from debates.selectors import RUN_LEVELS, schedules_with_runs
from debates.services.inputs import TEMPLATE_RULES, ScheduleInputSerializer
from debates.services.schedules import (
    schedule_create,
    schedule_delete,
    schedule_pause,
    schedule_resume,
    schedule_update,
)

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
            *shown_fields(ScheduleInputSerializer),
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


SCHEDULES = Resource(
    model=Schedule,
    route="schedules",
    name="schedule",
    input=ScheduleInputSerializer,
    output=ScheduleSerializer,
    create=schedule_create,
    update=schedule_update,
    delete=schedule_delete,
    owned=lambda user: schedules_with_runs(owner=user),
    create_errors=(400, 429),
    delete_errors=(404,),
    example={
        "name": "Hourly BTC",
        "strategy": 1,
        "symbol": "BTC",
        "participants": [
            {"ai_model": 1, "personality": "bull"},
            {"ai_model": 2, "personality": "bear"},
        ],
        "interval_minutes": 60,
    },
    docs={
        "create": f"Create a schedule.\n\n{TEMPLATE_RULES} A replay_as_of is inside the "
        "window of a strategy on the dataset, and a replay executes on a paper trader priced "
        "from the dataset only.",
        "partial_update": "Change some fields of a schedule (pause it with ``enabled: false``)."
        f"\n\n{CHANGE_RULES} The create's rules the schema cannot state apply too.",
        "destroy": "Delete a schedule; the debates it created stay.",
    },
)


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
