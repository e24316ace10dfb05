"""Trader accounts: create, list, read, change, delete (SPEC 10), and, read-only below
each trader, its positions, orders and executions; and the execution of a debate's
consensus on a trader (``POST /api/debates/{id}/execute``).

Credentials are write-only: a response shows ``api_key_masked`` and whether each
secret is set, never a secret.
"""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.utils import timezone
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
    extend_schema_view,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from arena.apis import JsonApi, error_responses, paginated_response
from arena.crud import Resource
from arena.fields import mask_secret
from arena.inputs import (
    CHANGE_RULES,
    IdField,
    StrictChoiceField,
    StrictSerializer,
    shown_fields,
    validate,
)
from arena.queries import owned_or_404
from debates.apis.ai_models import VenueCheckSerializer
from strategies.services import SymbolField
from traders.accounts import (
    TraderInputSerializer,
    trader_create,
    trader_delete,
    trader_update,
)
from traders.exceptions import ExchangeFailed
from traders.exchanges.base import ExchangeError
from traders.models import (
    Execution,
    ExecutionStatus,
    HistoryEntry,
    HistoryKind,
    Order,
    OrderStatus,
    Position,
    PositionStatus,
    Trader,
    TraderStatus,
)
from traders.serializers import (
    ExecutionSerializer,
    HistoryEntrySerializer,
    OrderSerializer,
    PositionSerializer,
)
from traders.services import execution_request
from traders.services.approvals import execution_approve, execution_reject
from traders.services.checks import trader_check
from traders.services.guards import trader_resume
from traders.services.reconcile import trader_reconcile

TAGS = ["traders"]


class TraderSerializer(serializers.ModelSerializer):
    api_key_masked = serializers.SerializerMethodField()
    has_api_key = serializers.SerializerMethodField()
    has_api_secret = serializers.SerializerMethodField()
    has_api_passphrase = serializers.SerializerMethodField()

    class Meta:
        model = Trader
        fields = [
            "id",
            *shown_fields(TraderInputSerializer),
            "balance",
            "paused_guard",
            "paused_reason",
            "paused_at",
            "paused_until",
            "api_key_masked",
            "has_api_key",
            "has_api_secret",
            "has_api_passphrase",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_api_key_masked(self, obj: Trader) -> str:
        return mask_secret(obj.api_key)

    def get_has_api_key(self, obj: Trader) -> bool:
        return bool(obj.api_key)

    def get_has_api_secret(self, obj: Trader) -> bool:
        return bool(obj.api_secret)

    def get_has_api_passphrase(self, obj: Trader) -> bool:
        return bool(obj.api_passphrase)


def status_filter(choices: list[tuple[str, str]]) -> type[serializers.Serializer]:
    """Return the query-string serializer of a list filterable by ``status``."""

    class FilterSerializer(serializers.Serializer):
        status = StrictChoiceField(choices=choices, required=False)

    return FilterSerializer


TRADERS = Resource(
    model=Trader,
    route="traders",
    name="trader",
    input=TraderInputSerializer,
    output=TraderSerializer,
    create=trader_create,
    update=trader_update,
    delete=trader_delete,
    filters=status_filter(TraderStatus.choices),
    example={"name": "Paper", "starting_balance": "1000"},
    docs={
        "create": "Create a trader account (paper, or a real exchange with its credentials).",
        "partial_update": "Change some fields of a trader (stop it with ``status: stopped``)."
        f"\n\n{CHANGE_RULES} The exchange, the starting balance and the market source "
        "cannot change once the trader exists (they may be sent unchanged).",
        "destroy": "Delete a trader without executions that nothing executes on "
        "automatically (409).",
    },
)


class TraderRecordListApi(JsonApi):
    """List one kind of a trader's records, newest first, optionally of one status.

    A subclass names its OpenAPI operation (``operation_id=`` in its class line), its
    ``FilterSerializer``, its ``serializer_class`` and its ``records``; its schema is
    derived from them.
    """

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS
    FilterSerializer: type[serializers.Serializer]
    serializer_class: type[serializers.Serializer]

    def __init_subclass__(cls, *, operation_id: str, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        extend_schema_view(
            get=extend_schema(
                operation_id=operation_id,
                tags=TAGS,
                parameters=[cls.FilterSerializer],
                responses={200: cls.serializer_class(many=True), **error_responses(400, 404)},
            )
        )(cls)

    def records(self, trader: Trader, filters: dict) -> QuerySet:
        """Return the trader's records matching ``filters``, newest first."""
        raise NotImplementedError

    def get(self, request: Request, trader_id: int) -> Response:
        trader = owned_or_404(Trader.objects.filter(owner=request.user), trader_id, "Trader")
        filters = validate(self.FilterSerializer, request.query_params)
        return paginated_response(
            request=request,
            view=self,
            queryset=self.records(trader, filters),
            serializer_class=self.serializer_class,
        )


class TraderPositionListApi(TraderRecordListApi, operation_id="traders_positions_list"):
    """List a trader's positions, newest first."""

    FilterSerializer = status_filter(PositionStatus.choices)
    serializer_class = PositionSerializer

    def records(self, trader: Trader, filters: dict) -> QuerySet:
        return Position.objects.filter(trader=trader, **filters).order_by("-opened_at", "-id")


class TraderOrderListApi(TraderRecordListApi, operation_id="traders_orders_list"):
    """List a trader's orders, newest first."""

    FilterSerializer = status_filter(OrderStatus.choices)
    serializer_class = OrderSerializer

    def records(self, trader: Trader, filters: dict) -> QuerySet:
        return Order.objects.filter(trader=trader, **filters).order_by("-created_at", "-id")


class TraderExecutionListApi(TraderRecordListApi, operation_id="traders_executions_list"):
    """List the executions of consensus decisions on a trader, newest first."""

    FilterSerializer = status_filter(ExecutionStatus.choices)
    serializer_class = ExecutionSerializer

    def records(self, trader: Trader, filters: dict) -> QuerySet:
        return (
            Execution.objects.filter(trader=trader, **filters)
            .select_related("decision")
            .order_by("-created_at", "-id")
        )


class TraderHistoryListApi(TraderRecordListApi, operation_id="traders_history_list"):
    """List the lines of a trader's history (what reconciliation with its exchange
    changed in its book), newest first, optionally of one kind."""

    class FilterSerializer(serializers.Serializer):
        kind = StrictChoiceField(choices=HistoryKind.choices, required=False)

    serializer_class = HistoryEntrySerializer

    def records(self, trader: Trader, filters: dict) -> QuerySet:
        return HistoryEntry.objects.filter(trader=trader, **filters).order_by("-created_at", "-id")


class TraderReconcileApi(JsonApi):
    """Reconcile one of your traders' book with its exchange now: positions closed on
    the exchange recorded with their P&L, positions it has no row for recorded (or
    flagged as not opened here), orphan stops cancelled, an unprotected position given
    its stop or closed. The answer lists the lines written in the trader's history;
    409 while another reconciliation of the trader runs, 502 when the exchange cannot
    be read."""

    @extend_schema_serializer(component_name="Reconciliation")
    class OutputSerializer(serializers.Serializer):
        lines = HistoryEntrySerializer(many=True)

    @extend_schema(
        operation_id="traders_reconcile",
        tags=TAGS,
        request=None,
        responses={200: OutputSerializer, **error_responses(404, 409, 502)},
    )
    def post(self, request: Request, trader_id: int) -> Response:
        try:
            lines = trader_reconcile(trader_id=trader_id, owner=request.user)
        except ExchangeError as exc:
            raise ExchangeFailed(str(exc)) from exc
        return Response(self.OutputSerializer({"lines": lines}).data)


class DebateExecuteApi(JsonApi):
    """Execute a completed debate's consensus on one of the user's traders (SPEC 10)."""

    @extend_schema_serializer(component_name="DebateExecuteInput")
    class InputSerializer(StrictSerializer):
        trader = IdField(help_text="One of your traders, running.")
        symbol = SymbolField(required=False, help_text="The coin to execute; default: primary.")

    @extend_schema(
        operation_id="debates_execute",
        tags=["debates"],
        request=InputSerializer,
        examples=[OpenApiExample("The primary coin", value={"trader": 1}, request_only=True)],
        responses={
            202: OpenApiResponse(
                ExecutionSerializer,
                description="The execution (the same one when asked again).",
            ),
            **error_responses(400, 404, 409),
        },
    )
    def post(self, request: Request, debate_id: int) -> Response:
        data = validate(self.InputSerializer, request.data)
        execution = execution_request(
            owner=request.user,
            debate_id=debate_id,
            trader_id=data["trader"],
            symbol=data.get("symbol"),
            trigger="manual",
        )
        return Response(ExecutionSerializer(execution).data, status=status.HTTP_202_ACCEPTED)


class TraderResumeApi(JsonApi):
    """Resume one of your traders a portfolio guard paused: it opens positions again,
    and its guards count from now on."""

    @extend_schema(
        operation_id="traders_resume",
        tags=TAGS,
        request=None,
        responses={200: TraderSerializer, **error_responses(404)},
    )
    def post(self, request: Request, trader_id: int) -> Response:
        trader = trader_resume(trader_id=trader_id, owner=request.user, now=timezone.now())
        return Response(TraderSerializer(trader).data)


class TraderCheckApi(JsonApi):
    """Check the connection of one of your traders: its key, its position mode and the
    minimum order of BTCUSDT on its exchange, read as an execution reads them; nothing
    is placed. The answer says in one line what is wrong, or what the account is."""

    @extend_schema(
        operation_id="traders_check",
        tags=TAGS,
        request=None,
        responses={200: VenueCheckSerializer, **error_responses(404)},
    )
    def post(self, request: Request, trader_id: int) -> Response:
        outcome = trader_check(trader_id=trader_id, owner=request.user)
        return Response(VenueCheckSerializer(outcome).data)


class _ExecutionDecisionApi(JsonApi):
    """Approve or reject one of your automatic executions awaiting approval."""

    service: Any = None

    def post(self, request: Request, execution_id: int) -> Response:
        execution = type(self).service(execution_id=execution_id, owner=request.user)
        return Response(ExecutionSerializer(execution).data)


class ExecutionApproveApi(_ExecutionDecisionApi):
    """Approve an automatic execution awaiting your approval: it is checked for staleness
    again and sent (a stale one lapses, 409). Asked again, the same execution."""

    service = staticmethod(execution_approve)

    @extend_schema(
        operation_id="executions_approve",
        tags=TAGS,
        request=None,
        responses={200: ExecutionSerializer, **error_responses(404, 409)},
    )
    def post(self, request: Request, execution_id: int) -> Response:
        return super().post(request, execution_id)


class ExecutionRejectApi(_ExecutionDecisionApi):
    """Reject an automatic execution awaiting your approval: nothing is sent."""

    service = staticmethod(execution_reject)

    @extend_schema(
        operation_id="executions_reject",
        tags=TAGS,
        request=None,
        responses={200: ExecutionSerializer, **error_responses(404, 409)},
    )
    def post(self, request: Request, execution_id: int) -> Response:
        return super().post(request, execution_id)
