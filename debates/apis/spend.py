"""What model calls used and cost: a user's, and a schedule's, spend per UTC day."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.utils import html

from arena.apis import JsonApi, error_responses
from arena.inputs import StrictSerializer, validate
from arena.queries import owned_or_404
from debates.models import Schedule
from debates.selectors import spend_by_day
from debates.serializers import DaySpendSerializer

MAX_DAYS = 90


class QueryIntegerField(serializers.IntegerField):
    """An integer query parameter; an empty one (``?days=``) is no integer and is refused."""

    def get_value(self, dictionary: Any) -> Any:
        if html.is_html_input(dictionary) and dictionary.get(self.field_name) == "":
            return ""
        return super().get_value(dictionary)


class DaysSerializer(StrictSerializer):
    """The query: any other parameter is refused."""

    days = QueryIntegerField(
        required=False, min_value=1, max_value=MAX_DAYS, help_text="How many UTC days, up to today."
    )


class SpendPerDaySerializer(serializers.Serializer):
    days = DaySpendSerializer(many=True, help_text="Oldest first; today last.")


class UserSpendApi(JsonApi):
    """Return the tokens and cost of the user's model calls on each of the last days."""

    @extend_schema(
        operation_id="spend_retrieve",
        tags=["spend"],
        parameters=[DaysSerializer],
        responses={200: SpendPerDaySerializer, **error_responses(400)},
    )
    def get(self, request: Request) -> Response:
        days = validate(DaysSerializer, request.query_params).get("days", 7)
        return Response({"days": spend_by_day(days=days, owner_id=request.user.pk)})


class ScheduleSpendApi(JsonApi):
    """Return the tokens and cost of a schedule's debates on each of the last days."""

    @extend_schema(
        operation_id="schedules_spend",
        tags=["schedules"],
        parameters=[DaysSerializer],
        responses={200: SpendPerDaySerializer, **error_responses(400, 404)},
    )
    def get(self, request: Request, schedule_id: int) -> Response:
        schedule = owned_or_404(
            Schedule.objects.filter(owner=request.user), schedule_id, "Schedule"
        )
        days = validate(DaysSerializer, request.query_params).get("days", 7)
        return Response({"days": spend_by_day(days=days, schedule_id=schedule.pk)})
