"""Strategies: create, list, read, change, delete (SPEC 9)."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from arena.apis import JsonApi, error_responses, owned_or_404, paginated_response
from arena.inputs import shown_fields
from strategies.models import Strategy
from strategies.services import (
    StrategyInputSerializer,
    strategy_create,
    strategy_delete,
    strategy_update,
)

TAGS = ["strategies"]


class StrategySerializer(serializers.ModelSerializer):
    # A plain string: empty when the coin source needs no pool, which is no URI.
    pool_url = serializers.CharField(read_only=True)

    class Meta:
        model = Strategy
        fields = ["id", *shown_fields(StrategyInputSerializer), "created_at", "updated_at"]
        read_only_fields = fields


class StrategyListApi(JsonApi):
    """List the user's strategies, newest first."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(
        operation_id="strategies_list",
        tags=TAGS,
        responses={200: StrategySerializer(many=True), **error_responses(404)},
    )
    def get(self, request: Request) -> Response:
        strategies = Strategy.objects.filter(owner=request.user).order_by("-created_at", "-id")
        return paginated_response(
            request=request, view=self, queryset=strategies, serializer_class=StrategySerializer
        )


class StrategyCreateApi(JsonApi):
    """Create a strategy."""

    @extend_schema(
        operation_id="strategies_create",
        tags=TAGS,
        request=StrategyInputSerializer,
        responses={201: StrategySerializer, **error_responses(400)},
    )
    def post(self, request: Request) -> Response:
        strategy = strategy_create(owner=request.user, data=request.data)
        return Response(StrategySerializer(strategy).data, status=status.HTTP_201_CREATED)


class StrategyDetailApi(JsonApi):
    """Return one strategy."""

    @extend_schema(
        operation_id="strategies_retrieve",
        tags=TAGS,
        responses={200: StrategySerializer, **error_responses(404)},
    )
    def get(self, request: Request, strategy_id: int) -> Response:
        strategy = owned_or_404(
            Strategy.objects.filter(owner=request.user), strategy_id, "Strategy"
        )
        return Response(StrategySerializer(strategy).data)


class StrategyUpdateApi(JsonApi):
    """Change some fields of a strategy; the whole strategy is checked again."""

    @extend_schema(
        operation_id="strategies_partial_update",
        tags=TAGS,
        request=StrategyInputSerializer,
        responses={200: StrategySerializer, **error_responses(400, 404)},
    )
    def patch(self, request: Request, strategy_id: int) -> Response:
        strategy = strategy_update(
            owner=request.user, strategy_id=strategy_id, changes=request.data
        )
        return Response(StrategySerializer(strategy).data)


class StrategyDeleteApi(JsonApi):
    """Delete a strategy no pending or running debate and no schedule uses (409 otherwise)."""

    @extend_schema(
        operation_id="strategies_destroy",
        tags=TAGS,
        responses={204: None, **error_responses(404, 409)},
    )
    def delete(self, request: Request, strategy_id: int) -> Response:
        strategy_delete(owner=request.user, strategy_id=strategy_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
