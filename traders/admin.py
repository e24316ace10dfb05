from django.contrib import admin

from arena.admin import SecretAdminMixin, masked_key
from traders.models import Execution, Order, Position, Trader


class PositionInline(admin.TabularInline):
    model = Position
    extra = 0
    can_delete = False
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
        "opened_at",
    )
    readonly_fields = fields
    show_change_link = True

    def has_add_permission(self, request, obj=None):
        return False


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
        "created_at",
    )
    list_filter = ("exchange", "status", "sandbox")
    search_fields = ("name", "owner__username")
    list_select_related = ("owner",)
    readonly_fields = ("created_at", "updated_at")
    autocomplete_fields = ("owner",)
    inlines = (PositionInline,)


@admin.register(Position)
class PositionAdmin(admin.ModelAdmin):
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
        "realized_pnl",
        "opened_at",
    )
    list_filter = ("status", "side", "symbol")
    search_fields = ("symbol", "trader__name")
    list_select_related = ("trader",)
    readonly_fields = ("opened_at", "closed_at")


@admin.register(Order)
class OrderAdmin(admin.ModelAdmin):
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
        "created_at",
    )
    list_filter = ("status", "type", "side", "reduce_only")
    search_fields = ("client_order_id", "exchange_order_id", "symbol", "trader__name")
    list_select_related = ("trader",)
    readonly_fields = ("created_at", "updated_at")


@admin.register(Execution)
class ExecutionAdmin(admin.ModelAdmin):
    list_display = (
        "id",
        "decision",
        "trader",
        "symbol",
        "action",
        "status",
        "filled_quantity",
        "average_price",
        "fee",
        "created_at",
    )
    list_filter = ("status", "action", "trigger")
    search_fields = ("client_order_id", "exchange_order_id", "symbol", "trader__name")
    list_select_related = ("trader", "decision")
    readonly_fields = [f.name for f in Execution._meta.fields]

    def has_add_permission(self, request):
        return False
