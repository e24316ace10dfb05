"""Creating, changing and deleting strategies (SPEC 9).

Every rule a debate's market snapshot relies on is checked here, when the strategy is
saved, so that a debate does not fail at start for a setting that could have been
refused: symbols are stored normalised (``BTCUSDT``, never the raw input), timeframes
and indicators come from the fixed sets the market code knows, at most
``MAX_CANDIDATES`` coins are listed, a pool source names its URL, which must obey the
outbound policy (``arena.outbound``) and carry no user name or password.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from arena.exceptions import Conflict
from arena.inputs import (
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictDecimalField,
    StrictFloatField,
    StrictIntegerField,
    StrictSerializer,
    UniqueListField,
    UrlField,
    refuse,
    requires_when,
    validate,
)
from arena.patterns import WHITESPACE, either_case, trimmed
from arena.queries import owned_or_404
from strategies.market.coins import MAX_CANDIDATES
from strategies.market.dataset import DATASET_SYMBOLS
from strategies.market.exceptions import InvalidSymbolError
from strategies.market.indicators import INDICATOR_NAMES
from strategies.market.snapshot import TIMEFRAMES
from strategies.market.symbols import MAX_BASE_LENGTH, QUOTE, normalize_symbol
from strategies.models import (
    CoinSource,
    ExecuteCoins,
    MarketSource,
    OIDuration,
    PromptVariant,
    Strategy,
    Unprotected,
)

# The exchanges a live strategy can read (the ones traders can trade on).
LIVE_EXCHANGES = ("binanceusdm", "bybit", "okx")
MAX_EXCLUDED = 100
POOL_SOURCES = (CoinSource.POOL, CoinSource.MIXED)


def _symbol_pattern(bases: tuple[str, ...] = ()) -> str:
    """Return the pattern (``arena.patterns``) of a symbol as ``normalize_symbol`` reads
    it, trimmed, in ASCII letters and digits; ``bases``: only those base assets."""
    quote, alnum, end = either_case(QUOTE), "[A-Za-z0-9]", f"[{WHITESPACE}]*$"
    base = f"{alnum}{{1,{MAX_BASE_LENGTH}}}"
    if bases:
        base = "(?:" + "|".join(either_case(name) for name in bases) + ")"
    return (
        f"(?!{quote}(?:[-_/]|(?:{quote})?{end}))"  # USDT is no base asset
        f"(?:{base}(?:/{quote}(?::{quote})?|[-_]{quote}|{quote})"  # with its quote
        f"|(?!{alnum}*{quote}{end})"  # bare: the quote is read off its end,
        f"(?!{alnum}+{either_case('USD')}[Cc]?{end})"  # and no other quote ends it
        f"{base})"
    )


# A coin as an input gives it: BTC, btcusdt, BTC/USDT, BTC-USDT, BTC/USDT:USDT...
SYMBOL = _symbol_pattern()
_SYMBOL = re.compile(SYMBOL)
# A coin of the bundled dataset in any of those forms, as an input's schema states it.
DATASET_COIN = trimmed(
    _symbol_pattern(tuple(symbol.removesuffix(QUOTE) for symbol in DATASET_SYMBOLS)), blank=False
)


class SymbolField(StrictCharField):
    """A coin in any notation (BTC, btcusdt, BTC/USDT), as stored: BTCUSDT; an empty
    one, where blank is allowed, stays empty. The schema states its form (``SYMBOL``),
    which ``normalize_symbol`` reads; letters outside A-Z are refused even where they
    upper-case into them."""

    text_pattern = SYMBOL

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(max_length=40, **kwargs)

    def to_internal_value(self, data: Any) -> str:
        text = super().to_internal_value(data)
        try:
            symbol = normalize_symbol(text)
        except InvalidSymbolError as exc:
            raise serializers.ValidationError(f"{exc}.") from None
        if not _SYMBOL.fullmatch(text):
            raise serializers.ValidationError(f"malformed symbol {text!r}: use letters A-Z.")
        return symbol


class SymbolListField(UniqueListField):
    """At most ``limit`` coins, each once, stored normalised."""

    def __init__(self, *, limit: int, **kwargs: Any) -> None:
        self.limit = limit
        super().__init__(child=SymbolField(), **kwargs)

    def to_internal_value(self, data: Any) -> list[Any]:
        if isinstance(data, list) and len(data) > self.limit:
            raise serializers.ValidationError(f"At most {self.limit} coins; got {len(data)}.")
        return super().to_internal_value(data)


def _guard_pct(help_text: str) -> StrictDecimalField:
    """Return a portfolio guard's percentage field: 0.01 to 100, null for off."""
    return StrictDecimalField(
        max_digits=5,
        decimal_places=2,
        min_value=Decimal("0.01"),
        max_value=Decimal("100"),
        required=False,
        allow_null=True,
        help_text=help_text,
    )


@extend_schema_serializer(component_name="StrategyInput")
class StrategyInputSerializer(StrictSerializer):
    model = Strategy
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
        # The dataset market source (the default) has no open interest and few coins.
        {
            "anyOf": [
                {
                    "required": ["market_source"],
                    "properties": {"market_source": {"not": {"enum": [MarketSource.DATASET]}}},
                },
                {
                    "properties": {
                        "coin_source": {"not": {"enum": [CoinSource.OI_TOP]}},
                        "static_coins": {"items": {"pattern": DATASET_COIN}},
                    }
                },
            ]
        },
    )

    name = StrictCharField(max_length=100)
    coin_source = StrictChoiceField(choices=CoinSource.choices, required=False)
    static_coins = SymbolListField(
        limit=MAX_CANDIDATES,
        required=False,
        help_text=f"At most {MAX_CANDIDATES}; BTC, btcusdt, BTC/USDT... are stored as BTCUSDT. "
        "Required for the static coin source.",
    )
    excluded_coins = SymbolListField(
        limit=MAX_EXCLUDED, required=False, help_text="Coins never selected."
    )
    pool_url = UrlField(
        required=False,
        allow_blank=True,
        max_length=200,
        help_text="Coin pool endpoint; required for the pool and mixed coin sources.",
    )
    max_coins = StrictIntegerField(required=False, min_value=1, max_value=MAX_CANDIDATES)
    oi_duration = StrictChoiceField(choices=OIDuration.choices, required=False)
    market_source = StrictChoiceField(choices=MarketSource.choices, required=False)
    exchange = StrictChoiceField(choices=list(LIVE_EXCHANGES), required=False)
    timeframes = UniqueListField(
        child=StrictChoiceField(choices=list(TIMEFRAMES)),
        required=False,
        min_length=1,
        error_messages={"min_length": "At least one timeframe."},
    )
    rows_per_timeframe = StrictIntegerField(required=False, min_value=1, max_value=200)
    indicators = UniqueListField(
        child=StrictChoiceField(choices=list(INDICATOR_NAMES)), required=False
    )
    include_funding = StrictBooleanField(required=False)
    include_open_interest = StrictBooleanField(required=False)
    max_leverage_major = StrictIntegerField(
        required=False, min_value=1, max_value=20, help_text="For BTC and ETH."
    )
    max_leverage_other = StrictIntegerField(required=False, min_value=1, max_value=20)
    max_position_multiple = StrictDecimalField(
        max_digits=6,
        decimal_places=2,
        min_value=Decimal("0.01"),
        required=False,
        help_text="Maximum position value as a multiple of equity.",
    )
    min_confidence = StrictIntegerField(required=False, min_value=0, max_value=100)
    min_risk_reward = StrictDecimalField(
        max_digits=6, decimal_places=2, min_value=Decimal("0"), required=False
    )
    max_open_positions = StrictIntegerField(required=False, min_value=1, max_value=100)
    min_order_usd = StrictDecimalField(
        max_digits=12, decimal_places=2, min_value=Decimal("0"), required=False
    )
    daily_loss_limit_pct = _guard_pct(
        "Pause openings once equity is this % below the day's starting equity (lifts at "
        "the next UTC day); null: off."
    )
    max_drawdown_pct = _guard_pct("Pause openings once equity is this % below its peak; null: off.")
    stop_out_cooldown = StrictIntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=100,
        help_text="Pause openings for cooldown_minutes after this many stop-outs in a row; "
        "null: off.",
    )
    cooldown_minutes = StrictIntegerField(required=False, min_value=1, max_value=10_080)
    max_gross_exposure = StrictDecimalField(
        max_digits=6,
        decimal_places=2,
        min_value=Decimal("0.01"),
        required=False,
        allow_null=True,
        help_text="Pause openings once the open positions are worth this multiple of "
        "equity; null: off.",
    )
    allow_hedging = StrictBooleanField(
        required=False,
        help_text="An opening opposite to a held position opens beside it; otherwise the "
        "held position is closed first.",
    )
    execute_coins = StrictChoiceField(
        choices=ExecuteCoins.choices,
        required=False,
        help_text="What an automatic execution acts on: the primary coin's decision, or "
        "every executable coin's.",
    )
    unprotected = StrictChoiceField(
        choices=Unprotected.choices,
        required=False,
        help_text="What reconciliation with the exchange does with a position this project "
        "opened that rests without a stop: place the stop its execution planned (stop, the "
        "default) or close it.",
    )
    track_record = StrictBooleanField(
        required=False,
        help_text="Each voter of a debate with a book sees its own last reviewed calls on "
        "the debate's coins, as known at the debate's instant (true by default).",
    )
    review_horizon_minutes = StrictIntegerField(
        required=False,
        min_value=15,
        max_value=10_080,
        help_text="Minutes after a decision's instant its outcome is reviewed at.",
    )
    review_flat_pct = StrictDecimalField(
        max_digits=6,
        decimal_places=3,
        min_value=Decimal("0"),
        max_value=Decimal("100"),
        required=False,
        help_text="A move under this percentage is flat.",
    )
    max_decision_age_minutes = StrictIntegerField(required=False, min_value=1, max_value=10_080)
    max_price_drift_pct = StrictDecimalField(
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

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Refuse settings the coin source or the market source cannot serve, checked
        against the whole strategy."""
        strategy = self.state(attrs)
        errors = _source_refusals(strategy)
        if strategy["market_source"] == MarketSource.DATASET:
            errors.update(_dataset_refusals(strategy["coin_source"], strategy["static_coins"]))
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


def _source_refusals(strategy: dict[str, Any]) -> dict[str, list[str]]:
    """Return what the coin source lacks: coins to list, coins not excluded, a pool URL."""
    errors: dict[str, list[str]] = {}
    source, static = strategy["coin_source"], strategy["static_coins"]
    if source == CoinSource.STATIC and not static:
        refuse(errors, "static_coins", "The static coin source needs at least one coin.")
    elif source == CoinSource.STATIC and set(strategy["excluded_coins"]) >= set(static):
        refuse(
            errors,
            "excluded_coins",
            "Excludes every static coin: the strategy would have no coin to debate.",
        )
    if source in POOL_SOURCES and not strategy["pool_url"]:
        refuse(errors, "pool_url", f"Required for the {source} coin source.")
    return errors


def _dataset_refusals(coin_source: str, static_coins: list[str]) -> dict[str, list[str]]:
    """Return what the bundled dataset cannot serve: open interest, coins it lacks."""
    errors: dict[str, list[str]] = {}
    if coin_source == CoinSource.OI_TOP:
        errors["coin_source"] = [
            "oi_top ranks coins by open interest, which the dataset market source "
            "does not have; use the live market source."
        ]
    for index, symbol in enumerate(static_coins):
        if symbol not in DATASET_SYMBOLS:
            errors[f"static_coins[{index}]"] = [
                f"{symbol} is not in the bundled dataset (it has {', '.join(DATASET_SYMBOLS)})."
            ]
    return errors


def strategy_create(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> Strategy:
    """Create a strategy from ``data`` (unset fields take the model defaults)."""
    return Strategy.objects.create(owner=owner, **validate(StrategyInputSerializer, data))


def strategy_update(
    *, owner: AbstractBaseUser, strategy_id: int, changes: Mapping[str, Any]
) -> Strategy:
    """Change the fields in ``changes``; the rules between fields are checked against
    the whole strategy."""
    strategy = owned_or_404(Strategy.objects.filter(owner=owner), strategy_id, "Strategy")
    values = validate(StrategyInputSerializer, changes, instance=strategy, partial=True)
    for name, value in values.items():
        setattr(strategy, name, value)
    strategy.save()
    return strategy


def strategy_delete(*, owner: AbstractBaseUser, strategy_id: int) -> None:
    """Delete a strategy no pending or running debate and no schedule uses (409 otherwise)."""
    from debates.models import ACTIVE_STATUSES, Debate, DebateStatus, Schedule

    strategy = owned_or_404(Strategy.objects.filter(owner=owner), strategy_id, "Strategy")
    with transaction.atomic():
        in_use = Debate.objects.filter(
            strategy=strategy, status__in=(DebateStatus.PENDING, *ACTIVE_STATUSES)
        ).exists()
        if in_use:
            raise Conflict(
                f"Strategy {strategy.name!r} is used by a pending or running debate; "
                "wait for it to end or delete it first."
            )
        if Schedule.objects.filter(strategy=strategy).exists():
            raise Conflict(
                f"Strategy {strategy.name!r} is used by a schedule; "
                "change or delete the schedule first."
            )
        strategy.delete()
