"""Strategies: which coins a debate looks at, what data it shows, and the risk limits."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q


class CoinSource(models.TextChoices):
    STATIC = "static", "Static list"
    POOL = "pool", "Coin pool endpoint"
    OI_TOP = "oi_top", "Top open-interest growth"
    MIXED = "mixed", "Pool, then OI, then static"


class MarketSource(models.TextChoices):
    DATASET = "dataset", "Bundled dataset (replay)"
    LIVE = "live", "Live exchange (ccxt)"


class OIDuration(models.TextChoices):
    H1 = "1h", "1 hour"
    H4 = "4h", "4 hours"
    H24 = "24h", "24 hours"


class PromptVariant(models.TextChoices):
    BALANCED = "balanced", "Balanced"
    AGGRESSIVE = "aggressive", "Aggressive"
    CONSERVATIVE = "conservative", "Conservative"
    SCALPING = "scalping", "Scalping"


def default_timeframes() -> list[str]:
    return ["15m", "1h", "4h"]


def default_indicators() -> list[str]:
    return ["ema", "macd", "rsi", "atr", "bollinger", "volume_change"]


def default_static_coins() -> list[str]:
    return ["BTCUSDT", "ETHUSDT", "SOLUSDT"]


class ExecuteCoins(models.TextChoices):
    PRIMARY = "primary", "The primary coin only"
    ALL = "all", "Every executable coin"


class Unprotected(models.TextChoices):
    STOP = "stop", "Place its stop"
    CLOSE = "close", "Close it"


class Strategy(models.Model):
    """A user's recipe for the market data a debate sees and the limits its trades obey."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="strategies"
    )
    name = models.CharField(max_length=100)

    coin_source = models.CharField(
        max_length=10, choices=CoinSource.choices, default=CoinSource.STATIC
    )
    static_coins = models.JSONField(default=default_static_coins, blank=True)
    excluded_coins = models.JSONField(default=list, blank=True)
    pool_url = models.URLField(blank=True)
    max_coins = models.PositiveSmallIntegerField(default=3)
    oi_duration = models.CharField(max_length=3, choices=OIDuration.choices, default="4h")

    market_source = models.CharField(
        max_length=10, choices=MarketSource.choices, default=MarketSource.DATASET
    )
    exchange = models.CharField(max_length=30, default="binanceusdm")
    timeframes = models.JSONField(default=default_timeframes)
    rows_per_timeframe = models.PositiveSmallIntegerField(default=12)
    indicators = models.JSONField(default=default_indicators, blank=True)
    include_funding = models.BooleanField(default=True)
    include_open_interest = models.BooleanField(default=True)

    max_leverage_major = models.PositiveSmallIntegerField(
        default=10, help_text="Maximum leverage for BTC and ETH."
    )
    max_leverage_other = models.PositiveSmallIntegerField(
        default=5, help_text="Maximum leverage for every other coin."
    )
    max_position_multiple = models.DecimalField(
        max_digits=6,
        decimal_places=2,
        default=Decimal("3"),
        help_text="Maximum position value as a multiple of equity.",
    )
    min_confidence = models.PositiveSmallIntegerField(default=0)
    min_risk_reward = models.DecimalField(max_digits=6, decimal_places=2, default=Decimal("0"))
    max_open_positions = models.PositiveSmallIntegerField(default=3)
    min_order_usd = models.DecimalField(max_digits=12, decimal_places=2, default=Decimal("12"))
    # Portfolio guards (traders.guards), each off when null.
    daily_loss_limit_pct = models.DecimalField(
        max_digits=5,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Pause openings once equity is this % below the day's starting equity "
        "(lifts at the next UTC day).",
    )
    max_drawdown_pct = models.DecimalField(
        max_digits=5,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Pause openings once equity is this % below its peak.",
    )
    stop_out_cooldown = models.PositiveSmallIntegerField(
        null=True,
        blank=True,
        help_text="Pause openings for cooldown_minutes after this many stop-outs in a row.",
    )
    cooldown_minutes = models.PositiveIntegerField(default=240)
    max_gross_exposure = models.DecimalField(
        max_digits=6,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Pause openings once the open positions are worth this multiple of equity.",
    )

    review_horizon_minutes = models.PositiveIntegerField(
        default=240, help_text="Minutes after a decision's instant its outcome is reviewed at."
    )
    review_flat_pct = models.DecimalField(
        max_digits=6,
        decimal_places=3,
        default=Decimal("0.1"),
        help_text="A move under this percentage is flat: neither right nor wrong.",
    )
    max_decision_age_minutes = models.PositiveIntegerField(
        default=30, help_text="An older decision is refused execution (stale_decision)."
    )
    max_price_drift_pct = models.DecimalField(
        max_digits=6,
        decimal_places=3,
        default=Decimal("1.0"),
        help_text="A price moved further from the snapshot's refuses execution (stale_decision).",
    )

    role_text = models.TextField(blank=True)
    allow_hedging = models.BooleanField(
        default=False,
        help_text="An opening opposite to a held position opens beside it; otherwise the "
        "held position is closed first.",
    )
    execute_coins = models.CharField(
        max_length=7,
        choices=ExecuteCoins.choices,
        default=ExecuteCoins.PRIMARY,
        help_text="What an automatic execution acts on: the primary coin's decision, or "
        "every executable coin's.",
    )
    unprotected = models.CharField(
        max_length=5,
        choices=Unprotected.choices,
        default=Unprotected.STOP,
        help_text="What reconciliation does with a position it opened that rests without "
        "a stop on the exchange: place the stop its execution planned, or close it.",
    )
    track_record = models.BooleanField(
        default=True,
        help_text="Each voter of a debate with a book sees its own last reviewed calls on "
        "the debate's coins, as known at the debate's instant.",
    )
    early_stop = models.BooleanField(
        default=True,
        help_text="Skip a debate's remaining rounds once no participant changes any action.",
    )
    quiet_atr_fraction = models.FloatField(
        default=0.5,
        help_text="A schedule's auto firing skips its debate (L0) while the primary coin "
        "moved less than this fraction of its 1h ATR since the schedule's last debate.",
    )
    gate_min_confidence = models.FloatField(
        default=60.0,
        help_text="An auto debate whose openings' mean confidence is below this goes on to L2.",
    )
    custom_prompt = models.TextField(blank=True)
    prompt_variant = models.CharField(
        max_length=12, choices=PromptVariant.choices, default=PromptVariant.BALANCED
    )

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "strategies"
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(
                condition=Q(max_coins__gte=1, max_coins__lte=10), name="strategy_max_coins_1_10"
            ),
            models.CheckConstraint(
                condition=Q(rows_per_timeframe__gte=1, rows_per_timeframe__lte=200),
                name="strategy_rows_1_200",
            ),
            models.CheckConstraint(
                condition=Q(max_leverage_major__gte=1, max_leverage_major__lte=20)
                & Q(max_leverage_other__gte=1, max_leverage_other__lte=20),
                name="strategy_max_leverage_1_20",
            ),
            models.CheckConstraint(
                condition=Q(min_confidence__lte=100), name="strategy_min_confidence_0_100"
            ),
            models.CheckConstraint(
                condition=Q(max_position_multiple__gt=0), name="strategy_max_position_positive"
            ),
            models.CheckConstraint(
                condition=Q(review_horizon_minutes__gte=1, max_decision_age_minutes__gte=1),
                name="strategy_review_and_age_positive",
            ),
            models.CheckConstraint(
                condition=Q(review_flat_pct__gte=0, max_price_drift_pct__gt=0),
                name="strategy_flat_and_drift_range",
            ),
        ]

    def __str__(self) -> str:
        return self.name
