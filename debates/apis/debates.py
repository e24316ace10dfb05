"""The debate endpoints of SPEC 6 (the live stream is served by its own view).

Every operation is scoped to the requesting user: another user's debate is a 404 for
every verb. Representations come from ``debates.serializers``, the same ones the live
events carry.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpResponse, HttpResponseNotModified
from django.utils.cache import parse_etags
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from arena.apis import JsonApi, error_responses, paginated_response
from arena.inputs import MAX_ID, StrictChoiceField, StrictSerializer, validate
from debates.engine.personalities import PERSONALITIES
from debates.models import Debate, DebateOrigin, DebateStatus
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
    debate_advance,
    debate_cancel,
    debate_create,
    debate_delete,
    debate_retry,
    debate_retry_step,
    debate_start,
)
from debates.services.inputs import TEMPLATE_RULES, DebateInputSerializer

TAGS = ["debates"]


class OwnedQueryField(serializers.IntegerField):
    """A query parameter naming one of the user's schedules or backtests by id: the
    related model of ``Debate.<source_field>``, owned by the serializer's
    ``context["owner"]``; its value is the id."""

    default_error_messages = {"missing": "No such {name}: {pk}."}

    def __init__(self, *, source_field: str, **kwargs: Any) -> None:
        self.related = Debate._meta.get_field(source_field).related_model
        kwargs.setdefault("min_value", 1)
        kwargs.setdefault("max_value", MAX_ID)
        super().__init__(**kwargs)

    def run_validation(self, data: Any = serializers.empty) -> int:
        pk = super().run_validation(data)
        if not self.related.objects.filter(owner=self.context["owner"], pk=pk).exists():
            self.fail("missing", name=self.related._meta.verbose_name, pk=pk)
        return pk


class DebateListApi(JsonApi):
    """List the user's debates, newest first: all of them, or those of one status, one
    origin, one schedule or one backtest."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    class FilterSerializer(serializers.Serializer):
        status = StrictChoiceField(choices=DebateStatus.choices, required=False)
        origin = StrictChoiceField(
            choices=DebateOrigin.choices,
            required=False,
            help_text="manual: a person's own; schedule: schedules' firings; backtest: "
            "backtests' steps.",
        )
        schedule = OwnedQueryField(
            source_field="schedule", required=False, help_text="One of your schedules' id."
        )
        backtest = OwnedQueryField(
            source_field="backtest", required=False, help_text="One of your backtests' id."
        )

    @extend_schema(
        operation_id="debates_list",
        tags=TAGS,
        parameters=[FilterSerializer],
        responses={200: DebateListSerializer(many=True), **error_responses(400, 404)},
    )
    def get(self, request: Request) -> Response:
        filters = validate(
            self.FilterSerializer, request.query_params, context={"owner": request.user}
        )
        debates = debate_list(owner=request.user, **filters)
        return paginated_response(
            request=request, view=self, queryset=debates, serializer_class=DebateListSerializer
        )


class DebateCreateApi(JsonApi):
    """Create a pending debate (SPEC 5.1); nothing is written when any field is bad."""

    @extend_schema(
        operation_id="debates_create",
        description="Create a pending debate (SPEC 5.1); nothing is written when any field "
        f"is bad.\n\n{TEMPLATE_RULES} At most one seat is a human seat; as_of is inside the "
        "strategy's dataset window.",
        tags=TAGS,
        request=DebateInputSerializer,
        examples=[
            OpenApiExample(
                "Two models on BTC",
                value={
                    "name": "BTC today",
                    "strategy": 1,
                    "symbol": "BTC",
                    "max_rounds": 2,
                    "participants": [
                        {"ai_model": 1, "personality": "bull"},
                        {"ai_model": 2, "personality": "bear"},
                    ],
                    "as_of": "2024-09-04T12:00:00Z",
                },
                request_only=True,
            )
        ],
        responses={201: DebateDetailSerializer, **error_responses(400, 429)},
    )
    def post(self, request: Request) -> Response:
        debate = debate_create(owner=request.user, data=request.data)
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
