"""What a user may spend, and what calls cost: the user's own daily budget and caps, and
the price table (staff only)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.permissions import IsAdminUser, IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from arena.apis import JsonApi, combine, error_responses, paginated_response
from debates.models import ModelPrice, TokenBudget
from debates.selectors import model_price_get, spend_of, token_budget_of
from debates.serializers import SpendSerializer
from debates.services.spend_settings import (
    BudgetInputSerializer,
    ModelPriceInputSerializer,
    model_price_create,
    model_price_delete,
    model_price_update,
    token_budget_update,
)


class BudgetSerializer(serializers.ModelSerializer):
    updated_at = serializers.DateTimeField(
        read_only=True, allow_null=True, help_text="Null until the user sets a budget."
    )
    today = serializers.SerializerMethodField()

    class Meta:
        model = TokenBudget
        fields = ["daily_token_budget", "daily_token_cap", "daily_usd_cap", "updated_at", "today"]
        read_only_fields = fields

    @extend_schema_field(SpendSerializer)
    def get_today(self, obj: TokenBudget) -> dict[str, Any]:
        """Return what the user's calls used and cost so far today (UTC)."""
        today = datetime.now(UTC).date()
        return spend_of(owner_id=obj.owner_id, since=today).to_dict()


class BudgetDetailApi(JsonApi):
    """Return the user's daily budget and caps, and what today's calls used and cost."""

    @extend_schema(
        operation_id="budget_retrieve",
        tags=["spend"],
        responses={200: BudgetSerializer, **error_responses()},
    )
    def get(self, request: Request) -> Response:
        return Response(BudgetSerializer(token_budget_of(owner=request.user)).data)


class BudgetUpdateApi(JsonApi):
    """Change the user's daily budget and caps; null removes one."""

    @extend_schema(
        operation_id="budget_partial_update",
        tags=["spend"],
        request=BudgetInputSerializer,
        responses={200: BudgetSerializer, **error_responses(400)},
    )
    def patch(self, request: Request) -> Response:
        budget = token_budget_update(owner=request.user, changes=request.data)
        return Response(BudgetSerializer(budget).data)


class ModelPriceSerializer(serializers.ModelSerializer):
    provider = serializers.CharField(read_only=True, help_text="The provider's id.")

    class Meta:
        model = ModelPrice
        fields = ["id", "provider", "model_name", *ModelPrice.PRICE_COLUMNS, "updated_at"]
        read_only_fields = fields


class StaffApi(JsonApi):
    """An operation on the price table: staff only (403 for other users)."""

    permission_classes = [IsAuthenticated, IsAdminUser]


class PriceListApi(StaffApi):
    """List the price table, by provider and model."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(
        operation_id="prices_list",
        tags=["prices"],
        responses={200: ModelPriceSerializer(many=True), **error_responses(403, 404)},
    )
    def get(self, request: Request) -> Response:
        return paginated_response(
            request=request,
            view=self,
            queryset=ModelPrice.objects.order_by("provider", "model_name"),
            serializer_class=ModelPriceSerializer,
        )


class PriceCreateApi(StaffApi):
    """Add a row to the price table: its model's calls cost it from then on. The table
    holds one row per provider and model: a second is refused, naming model_name."""

    @extend_schema(
        operation_id="prices_create",
        tags=["prices"],
        request=ModelPriceInputSerializer,
        responses={201: ModelPriceSerializer, **error_responses(400, 403)},
    )
    def post(self, request: Request) -> Response:
        price = model_price_create(data=request.data)
        return Response(ModelPriceSerializer(price).data, status=status.HTTP_201_CREATED)


class PriceDetailApi(StaffApi):
    """Return one row of the price table."""

    @extend_schema(
        operation_id="prices_retrieve",
        tags=["prices"],
        responses={200: ModelPriceSerializer, **error_responses(403, 404)},
    )
    def get(self, request: Request, price_id: int) -> Response:
        return Response(ModelPriceSerializer(model_price_get(price_id=price_id)).data)


class PriceUpdateApi(StaffApi):
    """Change some prices of a row of the price table. The table holds one row per
    provider and model: a change onto another row's is refused, naming model_name."""

    @extend_schema(
        operation_id="prices_partial_update",
        tags=["prices"],
        request=ModelPriceInputSerializer,
        responses={200: ModelPriceSerializer, **error_responses(400, 403, 404)},
    )
    def patch(self, request: Request, price_id: int) -> Response:
        price = model_price_update(price_id=price_id, changes=request.data)
        return Response(ModelPriceSerializer(price).data)


class PriceDeleteApi(StaffApi):
    """Remove a row of the price table: its model costs its catalogue price again."""

    @extend_schema(
        operation_id="prices_destroy",
        tags=["prices"],
        responses={204: None, **error_responses(403, 404)},
    )
    def delete(self, request: Request, price_id: int) -> Response:
        model_price_delete(price_id=price_id)
        return Response(status=status.HTTP_204_NO_CONTENT)


BUDGET = combine(BudgetDetailApi, BudgetUpdateApi)
PRICES = combine(PriceListApi, PriceCreateApi)
PRICE = combine(PriceDetailApi, PriceUpdateApi, PriceDeleteApi)
