from django.contrib import admin

from arena.admin import OutboundUrlAdminMixin
from strategies.models import Strategy


@admin.register(Strategy)
class StrategyAdmin(OutboundUrlAdminMixin, admin.ModelAdmin):
    outbound_url_fields = ("pool_url",)
    list_display = (
        "name",
        "owner",
        "coin_source",
        "market_source",
        "prompt_variant",
        "max_coins",
        "min_confidence",
        "created_at",
    )
    list_filter = ("coin_source", "market_source", "prompt_variant")
    search_fields = ("name", "owner__username")
    list_select_related = ("owner",)
    readonly_fields = ("created_at", "updated_at")
    autocomplete_fields = ("owner",)
    fieldsets = (
        (None, {"fields": ("owner", "name", "prompt_variant", "role_text", "custom_prompt")}),
        (
            "Coins",
            {
                "fields": (
                    "coin_source",
                    "static_coins",
                    "excluded_coins",
                    "pool_url",
                    "max_coins",
                    "oi_duration",
                )
            },
        ),
        (
            "Market data",
            {
                "fields": (
                    "market_source",
                    "exchange",
                    "timeframes",
                    "rows_per_timeframe",
                    "indicators",
                    "include_funding",
                    "include_open_interest",
                )
            },
        ),
        (
            "Risk limits",
            {
                "fields": (
                    "max_leverage_major",
                    "max_leverage_other",
                    "max_position_multiple",
                    "min_confidence",
                    "min_risk_reward",
                    "max_open_positions",
                    "min_order_usd",
                )
            },
        ),
        (
            "Trading against the book, track record and portfolio guards",
            {
                "fields": (
                    "allow_hedging",
                    "execute_coins",
                    "unprotected",
                    "track_record",
                    "daily_loss_limit_pct",
                    "max_drawdown_pct",
                    "stop_out_cooldown",
                    "cooldown_minutes",
                    "max_gross_exposure",
                )
            },
        ),
        (
            "Outcome reviews and staleness",
            {
                "fields": (
                    "review_horizon_minutes",
                    "review_flat_pct",
                    "max_decision_age_minutes",
                    "max_price_drift_pct",
                )
            },
        ),
        ("Times", {"fields": ("created_at", "updated_at")}),
    )
