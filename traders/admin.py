"""Admin of trading: accounts (secrets write-only), and read-only positions, orders,
executions and history.

Positions, orders and executions are records of what an exchange did: the admin shows
them and never edits them. The account state a paper exchange keeps (balance, clock,
per-coin leverage) is read-only too; it changes only through execution.
"""

from django.contrib import admin, messages
from django.utils import timezone

from arena.admin import SecretAdminMixin, decimal_column, masked_key
from debates.admin import ReadOnlyInline
from traders.accounts import FIXED_AFTER_CREATE
from traders.exceptions import ReconcileBusy
from traders.exchanges.base import ExchangeError
from traders.models import Execution, ExecutionStatus, HistoryEntry, Order, Position, Trader
from traders.services import execution_resubmit
from traders.services.checks import trader_check
from traders.services.guards import trader_resume
from traders.services.reconcile import trader_reconcile


class ReadOnlyAdminMixin:
    """Show every field, change none, add none."""

    def get_readonly_fields(self, request, obj=None):
        return [field.name for field in self.model._meta.fields]

    def has_add_permission(self, request, obj=None):
        return False


class PositionInline(ReadOnlyInline):
    model = Position
    fields = (
        "symbol",
        "side",
        "status",
        "quantity",
        "entry_price",
        "leverage",
        "stop_loss_price",
        "take_profit_price",
        "realized_pnl",
        "foreign",
        "opened_at",
    )


class HistoryInline(ReadOnlyInline):
    model = HistoryEntry
    fields = ("created_at", "kind", "symbol", "message")
    ordering = ("-created_at", "-id")


class OrderInline(ReadOnlyInline):
    model = Order
    fields = (
        "client_order_id",
        "exchange_order_id",
        "type",
        "side",
        "reduce_only",
        "quantity",
        "trigger_price",
        "status",
        "filled_quantity",
        "average_price",
        "fee",
        "error",
    )


@admin.register(Trader)
class TraderAdmin(SecretAdminMixin, admin.ModelAdmin):
    secret_fields = ("api_key", "api_secret", "api_passphrase")
    list_display = (
        "name",
        "owner",
        "exchange",
        masked_key,
        "sandbox",
        "status",
        "balance",
        "market_source",
        "replay_as_of",
        "paused_guard",
        "created_at",
    )
    list_filter = ("exchange", "status", "sandbox", "paused_guard")
    search_fields = ("name", "owner__username")
    list_select_related = ("owner",)
    readonly_fields = (
        "balance",
        "replay_as_of",
        "symbol_leverage",
        "paused_guard",
        "paused_reason",
        "paused_at",
        "paused_until",
        "peak_equity",
        "day_start_equity",
        "day_started",
        "guards_since",
        "reconcile_lease_until",
        "created_at",
        "updated_at",
    )
    autocomplete_fields = ("owner",)
    inlines = (PositionInline, HistoryInline)
    actions = ("resume", "check_connection", "reconcile_now")

    @admin.action(description="Resume the selected traders a guard paused")
    def resume(self, request, queryset):
        for trader in queryset:
            trader_resume(trader_id=trader.pk, now=timezone.now())
        self.message_user(request, f"{queryset.count()} trader(s) resumed.")

    @admin.action(description="Check the connection of the selected traders")
    def check_connection(self, request, queryset):
        for trader in queryset:
            outcome = trader_check(trader_id=trader.pk)
            level = messages.SUCCESS if outcome.ok else messages.ERROR
            self.message_user(request, f"{trader.name}: {outcome.message}", level=level)

    @admin.action(description="Reconcile the selected traders with their exchanges")
    def reconcile_now(self, request, queryset):
        for trader in queryset:
            try:
                lines = trader_reconcile(trader_id=trader.pk)
            except (ReconcileBusy, ExchangeError) as exc:
                self.message_user(request, f"{trader.name}: {exc}", level=messages.ERROR)
                continue
            said = "; ".join(line.message for line in lines) or "the book matches the exchange"
            self.message_user(request, f"{trader.name}: {said}", level=messages.SUCCESS)

    def get_readonly_fields(self, request, obj=None):
        # As the API (``trader_update``): what the account's positions and balance were
        # made under cannot change once it exists.
        fixed = FIXED_AFTER_CREATE if obj is not None else ()
        return (*self.readonly_fields, *fixed)


@admin.register(Position)
class PositionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "symbol",
        "side",
        "status",
        "trader",
        "quantity",
        "entry_price",
        "leverage",
        "stop_loss_price",
        "take_profit_price",
        "close_reason",
        "foreign",
        "realized_pnl",
        "fees",
        "opened_at",
    )
    list_filter = ("status", "side", "symbol", "close_reason", "foreign")
    search_fields = ("symbol", "trader__name")
    list_select_related = ("trader",)
    inlines = (OrderInline,)


@admin.register(Order)
class OrderAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "client_order_id",
        "trader",
        "symbol",
        "side",
        "type",
        "reduce_only",
        "quantity",
        "trigger_price",
        "status",
        "average_price",
        "fee",
        "created_at",
    )
    list_filter = ("status", "type", "side", "reduce_only")
    search_fields = ("client_order_id", "exchange_order_id", "symbol", "trader__name")
    list_select_related = ("trader",)


@admin.register(Execution)
class ExecutionAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = (
        "id",
        "decision",
        "trader",
        "symbol",
        "action",
        "status",
        "trigger",
        decimal_column("filled_quantity"),
        decimal_column("average_price"),
        decimal_column("fee"),
        "decision_age",
        "price_drift",
        "created_at",
    )
    list_filter = ("status", "action", "trigger")
    search_fields = ("client_order_id", "exchange_order_id", "symbol", "trader__name")
    list_select_related = ("trader", "decision")
    inlines = (OrderInline,)
    actions = ("resubmit",)

    @admin.display(description="age (min)")
    def decision_age(self, obj: Execution) -> str:
        value = (obj.staleness or {}).get("age_minutes")
        return "-" if value is None else f"{value:g}"

    @admin.display(description="drift")
    def price_drift(self, obj: Execution) -> str:
        value = (obj.staleness or {}).get("drift_pct")
        return "-" if value is None else f"{value:.2f}%"

    @admin.action(description="Resubmit unfinished executions (looks orders up first)")
    def resubmit(self, request, queryset):
        unfinished = queryset.filter(
            status__in=(ExecutionStatus.PENDING, ExecutionStatus.SUBMITTED)
        )
        count = sum(
            execution_resubmit(execution_id=pk) for pk in unfinished.values_list("pk", flat=True)
        )
        self.message_user(request, f"{count} execution(s) sent to the workers.", messages.INFO)


@admin.register(HistoryEntry)
class HistoryEntryAdmin(ReadOnlyAdminMixin, admin.ModelAdmin):
    list_display = ("created_at", "trader", "kind", "symbol", "message")
    list_filter = ("kind",)
    search_fields = ("message", "symbol", "trader__name")
    list_select_related = ("trader",)
