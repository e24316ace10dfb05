"""The backtest endpoints: create, list, detail, cancel, delete (the stream has its view).

Every operation is scoped to the requesting user: another user's backtest is a 404.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from arena.apis import JsonApi, error_responses, paginated_response
from arena.inputs import (
    IdField,
    StrictCharField,
    StrictChoiceField,
    StrictDecimalField,
    StrictIntegerField,
    StrictSerializer,
    validate,
)
from arena.queries import owned_or_404
from backtests.models import BASELINE_CHOICES, Backtest, BacktestStatus, BookMode, CoinScope
from backtests.selectors import backtest_list, backtest_representation
from backtests.serializers import BacktestDetailSerializer, BacktestListSerializer
from backtests.services import BacktestInput, backtest_cancel, backtest_create, backtest_delete
from backtests.services.lifecycle import (
    MAX_BALANCE,
    MAX_FEE_RATE,
    MAX_SLIPPAGE_BPS,
    MAX_STEPS,
    MIN_BALANCE,
    STEP_QUANTUM_MINUTES,
)
from debates.models import CacheMode, DebateLevel
from debates.services.inputs import (
    TEMPLATE_RULES,
    TEMPLATE_WEIGHTINGS,
    SeatInputSerializer,
    SeatsField,
)
from evaluations.apis import CalibrationMixin, LedgerMixin, MonitorsMixin, ScopedApi
from evaluations.selectors import Scope
from evaluations.serializers import (
    CalibrationSerializer,
    LedgerSerializer,
    MonitorsSerializer,
)
from strategies.models import PromptVariant
from strategies.services import SymbolField

TAGS = ["backtests"]


class BacktestListApi(JsonApi):
    """List the user's backtests, newest first."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    class FilterSerializer(serializers.Serializer):
        status = StrictChoiceField(choices=BacktestStatus.choices, required=False)

    @extend_schema(
        operation_id="backtests_list",
        tags=TAGS,
        parameters=[FilterSerializer],
        responses={200: BacktestListSerializer(many=True), **error_responses(400, 404)},
    )
    def get(self, request: Request) -> Response:
        filters = validate(self.FilterSerializer, request.query_params)
        backtests = backtest_list(owner=request.user, status=filters.get("status"))
        return paginated_response(
            request=request, view=self, queryset=backtests, serializer_class=BacktestListSerializer
        )


class BacktestCreateApi(JsonApi):
    """Create a backtest and start it; nothing is written when any field is bad."""

    @extend_schema_serializer(component_name="BacktestCreateInput")
    class InputSerializer(StrictSerializer):
        name = StrictCharField(max_length=200)
        strategy = IdField(help_text="One of your strategies, on the dataset market source.")
        symbol = SymbolField(required=False, allow_blank=True, help_text="The primary coin.")
        participants = SeatsField(
            child=SeatInputSerializer(), help_text="2 to 6 seats, as for a debate."
        )
        max_rounds = StrictIntegerField(required=False, min_value=2, max_value=5)
        prompt_variant = StrictChoiceField(choices=PromptVariant.choices, required=False)
        start = serializers.DateTimeField(help_text="The first step's instant.")
        end = serializers.DateTimeField(help_text="The window's end; open positions close.")
        interval_minutes = StrictIntegerField(
            min_value=STEP_QUANTUM_MINUTES,
            multiple_of=STEP_QUANTUM_MINUTES,
            help_text="Minutes between steps.",
        )
        horizon_minutes = StrictIntegerField(
            required=False,
            min_value=STEP_QUANTUM_MINUTES,
            multiple_of=STEP_QUANTUM_MINUTES,
            help_text="Minutes a decision is scored over; default: the interval.",
        )
        starting_balance = StrictDecimalField(
            max_digits=20,
            decimal_places=8,
            min_value=MIN_BALANCE,
            max_value=MAX_BALANCE,
            required=False,
            help_text="USDT; default 1000.",
        )
        fee_rate = StrictDecimalField(
            max_digits=8,
            decimal_places=6,
            min_value=Decimal("0"),
            max_value=MAX_FEE_RATE,
            required=False,
            help_text="Default 0.0004.",
        )
        slippage_bps = StrictDecimalField(
            max_digits=8,
            decimal_places=2,
            min_value=Decimal("0"),
            max_value=MAX_SLIPPAGE_BPS,
            required=False,
            help_text="Default 0.",
        )
        coins = StrictChoiceField(choices=CoinScope.choices, required=False)
        book = StrictChoiceField(
            choices=BookMode.choices,
            required=False,
            help_text="aware (default): each step's votes see the simulated account at its "
            "instant, after the earlier steps' fills, so the votes run in time order while "
            "the rounds run ahead; blind: no step sees an account.",
        )
        cache = StrictChoiceField(
            choices=CacheMode.choices,
            required=False,
            help_text="The model-call cache: use (default), refresh or off.",
        )
        level = StrictChoiceField(
            choices=DebateLevel.choices,
            required=False,
            help_text="The level of every step's debate: L2 (default), L1 or auto.",
        )
        weighting = StrictChoiceField(
            choices=TEMPLATE_WEIGHTINGS,
            required=False,
            help_text="How votes weigh in the consensus: confidence (default) or calibrated "
            "(confidence x the voter's shrunk hit rate from the reviews of the backtest's "
            "earlier steps; a step starts once the steps it reads have ended, so with a "
            "horizon of one step the debates run one at a time); the report shows both "
            "rules.",
        )
        baseline = StrictChoiceField(
            choices=BASELINE_CHOICES,
            required=False,
            help_text="The budget-matched baseline, which costs model calls: off (default), "
            "rotate (each seat's model in turn) or a seat of the debate (P1, P2...): at each "
            "step that model answers its round-1 prompt, with the book, again and again "
            "until its tokens match the debate's; its answers decide by the consensus rule.",
        )

    @extend_schema(
        operation_id="backtests_create",
        description="Create a backtest and start it; nothing is written when any field is "
        f"bad.\n\n{TEMPLATE_RULES} The strategy reads the bundled dataset; start and end "
        "are inside its window, end after start, with at most "
        f"{MAX_STEPS} steps between them.",
        tags=TAGS,
        request=InputSerializer,
        examples=[
            OpenApiExample(
                "A day of BTC at 4h",
                value={
                    "name": "BTC, a day at 4h",
                    "strategy": 1,
                    "symbol": "BTC",
                    "participants": [
                        {"ai_model": 1, "personality": "bull"},
                        {"ai_model": 2, "personality": "bear"},
                    ],
                    "start": "2024-08-10T00:00:00Z",
                    "end": "2024-08-11T00:00:00Z",
                    "interval_minutes": 240,
                },
                request_only=True,
            )
        ],
        responses={201: BacktestDetailSerializer, **error_responses(400, 409, 429)},
    )
    def post(self, request: Request) -> Response:
        data = validate(self.InputSerializer, request.data)
        backtest = backtest_create(owner=request.user, data=BacktestInput(**data))
        detail = backtest_representation(backtest_id=backtest.pk, owner=request.user)
        return Response(detail, status=status.HTTP_201_CREATED)


class BacktestDetailApi(JsonApi):
    """Return a backtest: its settings, progress and, once complete, its report."""

    @extend_schema(
        operation_id="backtests_retrieve",
        tags=TAGS,
        responses={200: BacktestDetailSerializer, **error_responses(404)},
    )
    def get(self, request: Request, backtest_id: int) -> Response:
        return Response(backtest_representation(backtest_id=backtest_id, owner=request.user))


class BacktestDeleteApi(JsonApi):
    """Delete a finished backtest and its debates (409 while it runs)."""

    @extend_schema(
        operation_id="backtests_destroy",
        tags=TAGS,
        responses={204: None, **error_responses(404, 409)},
    )
    def delete(self, request: Request, backtest_id: int) -> Response:
        backtest_delete(backtest_id=backtest_id, owner=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class BacktestCancelApi(JsonApi):
    """Cancel a pending or running backtest: no debate starts after it."""

    @extend_schema(
        operation_id="backtests_cancel",
        tags=TAGS,
        request=None,
        responses={200: BacktestDetailSerializer, **error_responses(404, 409)},
    )
    def post(self, request: Request, backtest_id: int) -> Response:
        backtest_cancel(backtest_id=backtest_id, owner=request.user)
        return Response(backtest_representation(backtest_id=backtest_id, owner=request.user))


class BacktestScoped(ScopedApi):
    def scope(self, request: Request, **kwargs: Any) -> Scope:
        backtest = owned_or_404(
            Backtest.objects.filter(owner=request.user), kwargs["backtest_id"], "Backtest"
        )
        return Scope(owner_id=request.user.pk, backtest_id=backtest.pk)


class BacktestLedgerApi(LedgerMixin, BacktestScoped):
    """Return the debate-effect ledger of a backtest's reviewed debates."""

    @extend_schema(
        operation_id="backtests_ledger",
        tags=TAGS,
        responses={200: LedgerSerializer, **error_responses(404)},
    )
    def get(self, request: Request, backtest_id: int) -> Response:
        return self.ledger(request, backtest_id=backtest_id)


class BacktestCalibrationApi(CalibrationMixin, BacktestScoped):
    """Return the calibration of every voter of a backtest's reviewed debates."""

    @extend_schema(
        operation_id="backtests_calibration",
        tags=TAGS,
        responses={200: CalibrationSerializer, **error_responses(404)},
    )
    def get(self, request: Request, backtest_id: int) -> Response:
        return self.calibration(request, backtest_id=backtest_id)


class BacktestMonitorsApi(MonitorsMixin, BacktestScoped):
    """Return the action mix, parse failures and warnings of a backtest's last debates."""

    @extend_schema(
        operation_id="backtests_monitors",
        tags=TAGS,
        responses={200: MonitorsSerializer, **error_responses(404)},
    )
    def get(self, request: Request, backtest_id: int) -> Response:
        return self.monitors(request, backtest_id=backtest_id)
