"""Strategies: create, list, read, change, delete (SPEC 9)."""

from __future__ import annotations

from decimal import Decimal

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from arena.apis import JsonApi, error_responses, owned_or_404, paginated_response
from arena.inputs import (
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictFloatField,
    StrictIntegerField,
    StrictSerializer,
    requires_when,
    validate,
)
from strategies.market.coins import MAX_CANDIDATES
from strategies.market.indicators import INDICATOR_NAMES
from strategies.market.snapshot import TIMEFRAMES
from strategies.models import CoinSource, MarketSource, OIDuration, PromptVariant, Strategy
from strategies.services import (
    FIELDS,
    LIVE_EXCHANGES,
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
        fields = ["id", *FIELDS, "created_at", "updated_at"]
        read_only_fields = fields


def _symbols(help_text: str) -> serializers.ListField:
    return serializers.ListField(
        child=StrictCharField(max_length=40), required=False, help_text=help_text
    )


@extend_schema_serializer(component_name="StrategyInput")
class StrategyInputSerializer(StrictSerializer):
    schema_rules = (
        requires_when("coin_source", ["pool", "mixed"], "pool_url", default="static"),
        {
            "anyOf": [
                {
                    "required": ["coin_source"],
                    "properties": {"coin_source": {"not": {"enum": ["static"]}}},
                },
                {"properties": {"static_coins": {"minItems": 1}}},
            ]
        },
    )

    name = StrictCharField(max_length=100)
    coin_source = StrictChoiceField(choices=CoinSource.choices, required=False)
    static_coins = _symbols(
        f"At most {MAX_CANDIDATES}; BTC, btcusdt, BTC/USDT... are stored as BTCUSDT. "
        "Required for the static coin source."
    )
    excluded_coins = _symbols("Coins never selected.")
    pool_url = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="Coin pool endpoint; required for the pool and mixed coin sources.",
    )
    max_coins = StrictIntegerField(required=False, min_value=1, max_value=MAX_CANDIDATES)
    oi_duration = StrictChoiceField(choices=OIDuration.choices, required=False)
    market_source = StrictChoiceField(choices=MarketSource.choices, required=False)
    exchange = StrictChoiceField(choices=list(LIVE_EXCHANGES), required=False)
    timeframes = serializers.ListField(
        child=StrictChoiceField(choices=list(TIMEFRAMES)), required=False
    )
    rows_per_timeframe = StrictIntegerField(required=False, min_value=1, max_value=200)
    indicators = serializers.ListField(
        child=StrictChoiceField(choices=list(INDICATOR_NAMES)), required=False
    )
    include_funding = StrictBooleanField(required=False)
    include_open_interest = StrictBooleanField(required=False)
    max_leverage_major = StrictIntegerField(
        required=False, min_value=1, max_value=20, help_text="For BTC and ETH."
    )
    max_leverage_other = StrictIntegerField(required=False, min_value=1, max_value=20)
    max_position_multiple = serializers.DecimalField(
        max_digits=6,
        decimal_places=2,
        min_value=Decimal("0.01"),
        required=False,
        help_text="Maximum position value as a multiple of equity.",
    )
    min_confidence = StrictIntegerField(required=False, min_value=0, max_value=100)
    min_risk_reward = serializers.DecimalField(
        max_digits=6, decimal_places=2, min_value=Decimal("0"), required=False
    )
    max_open_positions = StrictIntegerField(required=False, min_value=1, max_value=100)
    min_order_usd = serializers.DecimalField(
        max_digits=12, decimal_places=2, min_value=Decimal("0"), required=False
    )
    review_horizon_minutes = StrictIntegerField(
        required=False,
        min_value=15,
        max_value=10_080,
        help_text="Minutes after a decision's instant its outcome is reviewed at.",
    )
    review_flat_pct = serializers.DecimalField(
        max_digits=6,
        decimal_places=3,
        min_value=Decimal("0"),
        max_value=Decimal("100"),
        required=False,
        help_text="A move under this percentage is flat.",
    )
    max_decision_age_minutes = StrictIntegerField(required=False, min_value=1, max_value=10_080)
    max_price_drift_pct = serializers.DecimalField(
        max_digits=6,
        decimal_places=3,
        min_value=Decimal("0.001"),
        max_value=Decimal("100"),
        required=False,
    )
    role_text = StrictCharField(required=False, allow_blank=True, max_length=10_000)
    custom_prompt = StrictCharField(required=False, allow_blank=True, max_length=10_000)
    prompt_variant = StrictChoiceField(choices=PromptVariant.choices, required=False)
    early_stop = StrictBooleanField(
        required=False,
        help_text="Skip a debate's remaining rounds once no participant changes any action.",
    )
    quiet_atr_fraction = StrictFloatField(
        required=False,
        min_value=0,
        max_value=10,
        help_text="A schedule's or backtest's step at level auto starts no debate (L0) while "
        "the primary coin moved less than this fraction of its 1h ATR14 since the last "
        "debate.",
    )
    gate_min_confidence = StrictFloatField(
        required=False,
        min_value=0,
        max_value=100,
        help_text="A debate at level auto whose openings' mean confidence is below this goes "
        "on to L2.",
    )


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

    InputSerializer = StrategyInputSerializer

    @extend_schema(
        operation_id="strategies_create",
        tags=TAGS,
        request=StrategyInputSerializer,
        responses={201: StrategySerializer, **error_responses(400)},
    )
    def post(self, request: Request) -> Response:
        data = validate(self.InputSerializer, request.data)
        strategy = strategy_create(owner=request.user, data=data)
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

    InputSerializer = StrategyInputSerializer

    @extend_schema(
        operation_id="strategies_partial_update",
        tags=TAGS,
        request=StrategyInputSerializer,
        responses={200: StrategySerializer, **error_responses(400, 404)},
    )
    def patch(self, request: Request, strategy_id: int) -> Response:
        changes = validate(self.InputSerializer, request.data, partial=True)
        strategy = strategy_update(owner=request.user, strategy_id=strategy_id, changes=changes)
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
