"""Trader accounts and what they hold on an exchange: orders, positions, executions."""

from __future__ import annotations

from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from arena.fields import EncryptedTextField

MONEY = {"max_digits": 20, "decimal_places": 8}
PRICE = {"max_digits": 24, "decimal_places": 10}
QUANTITY = {"max_digits": 24, "decimal_places": 10}


class Exchange(models.TextChoices):
    PAPER = "paper", "Paper (simulated fills)"
    BINANCEUSDM = "binanceusdm", "Binance USDT-M futures"
    BYBIT = "bybit", "Bybit"
    OKX = "okx", "OKX"


class TraderStatus(models.TextChoices):
    RUNNING = "running", "Running"
    STOPPED = "stopped", "Stopped"


class Trader(models.Model):
    """An account that executes consensus decisions, on paper or on a real exchange."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="traders"
    )
    name = models.CharField(max_length=100)
    exchange = models.CharField(max_length=20, choices=Exchange.choices, default=Exchange.PAPER)
    api_key = EncryptedTextField(blank=True)
    api_secret = EncryptedTextField(blank=True)
    api_passphrase = EncryptedTextField(blank=True)
    sandbox = models.BooleanField(
        default=False,
        help_text="Trade the exchange's practice account: Binance's demo trading, Bybit's "
        "testnet, OKX's demo trading.",
    )
    requires_approval = models.BooleanField(
        default=True,
        help_text="An exchange account's automatic executions wait for the owner's approval "
        "(a paper account never waits).",
    )
    approval_minutes = models.PositiveIntegerField(
        default=10, help_text="How long an automatic execution waits for approval."
    )
    status = models.CharField(
        max_length=10, choices=TraderStatus.choices, default=TraderStatus.RUNNING
    )

    # Paper accounts: money and the market whose prices fill their orders.
    starting_balance = models.DecimalField(**MONEY, default=Decimal("1000"))
    balance = models.DecimalField(**MONEY, default=Decimal("1000"))
    fee_rate = models.DecimalField(max_digits=8, decimal_places=6, default=Decimal("0.0004"))
    market_source = models.CharField(max_length=10, default="dataset")
    replay_as_of = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Paper clock: the market instant a paper trader is at (dataset replay), "
        "or the last instant its stops were checked (live prices).",
    )
    # A tripped portfolio guard (traders.guards): no new position opens until it lifts.
    paused_guard = models.CharField(max_length=20, blank=True)
    paused_reason = models.TextField(blank=True)
    paused_at = models.DateTimeField(null=True, blank=True)
    paused_until = models.DateTimeField(
        null=True,
        blank=True,
        help_text="When the pause lifts itself (the daily loss limit, "
        "the cooldown); null: at the owner's resume.",
    )
    # What the guards measure from: the account's highest equity, the day's starting
    # equity, and the instant the stop-outs in a row are counted from.
    peak_equity = models.DecimalField(max_digits=20, decimal_places=8, null=True, blank=True)
    day_start_equity = models.DecimalField(max_digits=20, decimal_places=8, null=True, blank=True)
    day_started = models.DateField(null=True, blank=True)
    guards_since = models.DateTimeField(null=True, blank=True)
    reconcile_lease_until = models.DateTimeField(
        null=True,
        blank=True,
        help_text="While set in the future, one worker is reconciling this account with "
        "its exchange.",
    )
    symbol_leverage = models.JSONField(
        default=dict,
        blank=True,
        help_text="Paper: the leverage set per coin, as an exchange keeps it.",
    )

    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.CheckConstraint(condition=Q(balance__gte=0), name="trader_balance_non_negative"),
            models.CheckConstraint(
                condition=Q(fee_rate__gte=0, fee_rate__lt=Decimal("0.1")),
                name="trader_fee_rate_range",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.exchange})"

    @property
    def is_running(self) -> bool:
        return self.status == TraderStatus.RUNNING

    @property
    def waits_for_approval(self) -> bool:
        """Say whether this account's automatic executions wait for the owner's approval:
        an exchange account that requires it; a paper account never waits."""
        return self.requires_approval and self.exchange != Exchange.PAPER

    @property
    def is_dataset_paper(self) -> bool:
        """Say whether this is a paper account priced from the dataset (a replay's)."""
        return self.exchange == Exchange.PAPER and self.market_source == "dataset"


class PositionSide(models.TextChoices):
    LONG = "long", "Long"
    SHORT = "short", "Short"


class PositionStatus(models.TextChoices):
    OPEN = "open", "Open"
    CLOSED = "closed", "Closed"


class Position(models.Model):
    """A position held by a trader; at most one open position per coin and side."""

    trader = models.ForeignKey(Trader, on_delete=models.CASCADE, related_name="positions")
    symbol = models.CharField(max_length=20)
    side = models.CharField(max_length=5, choices=PositionSide.choices)
    status = models.CharField(
        max_length=6, choices=PositionStatus.choices, default=PositionStatus.OPEN
    )
    quantity = models.DecimalField(**QUANTITY)
    entry_price = models.DecimalField(**PRICE)
    leverage = models.PositiveSmallIntegerField(default=1)
    margin = models.DecimalField(**MONEY, default=Decimal("0"))
    stop_loss_price = models.DecimalField(**PRICE, null=True, blank=True)
    take_profit_price = models.DecimalField(**PRICE, null=True, blank=True)
    close_price = models.DecimalField(**PRICE, null=True, blank=True)
    close_reason = models.CharField(max_length=30, blank=True)
    foreign = models.BooleanField(
        default=False,
        help_text="Found on the exchange with no order of this project behind it: shown, "
        "never traded.",
    )
    peak_pnl = models.DecimalField(
        **MONEY,
        null=True,
        blank=True,
        help_text="The best unrealised P&L the position reached at a mark its book was read at.",
    )
    realized_pnl = models.DecimalField(
        **MONEY, default=Decimal("0"), help_text="Price gain or loss, before fees."
    )
    fees = models.DecimalField(
        **MONEY, default=Decimal("0"), help_text="Fees of opening and closing."
    )
    opened_at = models.DateTimeField(
        default=timezone.now, help_text="The market instant it opened at (a paper clock's)."
    )
    closed_at = models.DateTimeField(
        null=True, blank=True, help_text="The market instant it closed at (a paper clock's)."
    )

    class Meta:
        ordering = ["-opened_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["trader", "symbol", "side"],
                condition=Q(status="open"),
                name="position_one_open_per_coin_side",
            ),
            models.CheckConstraint(condition=Q(quantity__gt=0), name="position_quantity_positive"),
            models.CheckConstraint(
                condition=Q(leverage__gte=1, leverage__lte=125), name="position_leverage_range"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.side} {self.symbol} x{self.quantity}"


class HistoryKind(models.TextChoices):
    POSITION_RECORDED = "position_recorded", "Position recorded"
    POSITION_FOREIGN = "position_foreign", "Position not opened here"
    POSITION_CHANGED = "position_changed", "Position changed on the exchange"
    POSITION_CLOSED = "position_closed", "Position closed on the exchange"
    ORDER_CANCELED = "order_canceled", "Orphan order cancelled"
    STOP_PLACED = "stop_placed", "Stop placed"
    UNPROTECTED_CLOSED = "unprotected_closed", "Unprotected position closed"
    RECONCILE_FAILED = "reconcile_failed", "Reconciliation failed"


class HistoryEntry(models.Model):
    """A line in a trader's history: one change reconciliation made to its book."""

    trader = models.ForeignKey(Trader, on_delete=models.CASCADE, related_name="history")
    kind = models.CharField(max_length=20, choices=HistoryKind.choices)
    symbol = models.CharField(max_length=20, blank=True)
    message = models.TextField()
    position = models.ForeignKey(
        Position, on_delete=models.SET_NULL, null=True, blank=True, related_name="history"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "history entries"

    def __str__(self) -> str:
        return self.message


class OrderSide(models.TextChoices):
    BUY = "buy", "Buy"
    SELL = "sell", "Sell"


class OrderType(models.TextChoices):
    MARKET = "market", "Market"
    STOP_MARKET = "stop_market", "Stop loss (market)"
    TAKE_PROFIT_MARKET = "take_profit_market", "Take profit (market)"


class OrderStatus(models.TextChoices):
    NEW = "new", "New"
    OPEN = "open", "Open (resting)"
    FILLED = "filled", "Filled"
    CANCELED = "canceled", "Canceled"
    REJECTED = "rejected", "Rejected"


class Order(models.Model):
    """An order sent to an exchange; the client order id makes sending it idempotent."""

    trader = models.ForeignKey(Trader, on_delete=models.CASCADE, related_name="orders")
    execution = models.ForeignKey(
        "traders.Execution",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="orders",
    )
    position = models.ForeignKey(
        Position, on_delete=models.SET_NULL, null=True, blank=True, related_name="orders"
    )
    client_order_id = models.CharField(max_length=36)
    exchange_order_id = models.CharField(max_length=64, blank=True)
    symbol = models.CharField(max_length=20)
    side = models.CharField(max_length=4, choices=OrderSide.choices)
    type = models.CharField(max_length=20, choices=OrderType.choices)
    reduce_only = models.BooleanField(default=False)
    quantity = models.DecimalField(**QUANTITY)
    trigger_price = models.DecimalField(**PRICE, null=True, blank=True)
    status = models.CharField(max_length=10, choices=OrderStatus.choices, default=OrderStatus.NEW)
    filled_quantity = models.DecimalField(**QUANTITY, default=Decimal("0"))
    average_price = models.DecimalField(**PRICE, null=True, blank=True)
    fee = models.DecimalField(**MONEY, default=Decimal("0"))
    error = models.TextField(blank=True, help_text="Why the exchange refused the order.")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["trader", "client_order_id"], name="order_unique_client_order_id"
            ),
            models.CheckConstraint(condition=Q(quantity__gt=0), name="order_quantity_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.type} {self.side} {self.symbol} {self.quantity}"


class ExecutionStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    SUBMITTED = "submitted", "Submitted"
    FILLED = "filled", "Filled"
    FAILED = "failed", "Failed"
    SKIPPED = "skipped", "Nothing to do"
    AWAITING_APPROVAL = "awaiting_approval", "Awaiting the owner's approval"
    REJECTED = "rejected", "Rejected by the owner"
    LAPSED = "lapsed", "Lapsed unapproved"


class Execution(models.Model):
    """The execution of one consensus decision on one trader: at most one per decision."""

    decision = models.OneToOneField(
        "debates.Decision", on_delete=models.CASCADE, related_name="execution"
    )
    trader = models.ForeignKey(Trader, on_delete=models.PROTECT, related_name="executions")
    status = models.CharField(
        max_length=20, choices=ExecutionStatus.choices, default=ExecutionStatus.PENDING
    )
    trigger = models.CharField(max_length=10, default="manual")
    approval_deadline = models.DateTimeField(
        null=True,
        blank=True,
        help_text="An automatic execution awaiting its owner's approval lapses at this instant.",
    )
    client_order_id = models.CharField(max_length=36)
    exchange_order_id = models.CharField(max_length=64, blank=True)
    symbol = models.CharField(max_length=20)
    action = models.CharField(max_length=12)
    leverage = models.PositiveSmallIntegerField(null=True, blank=True)
    requested_quantity = models.DecimalField(**QUANTITY, null=True, blank=True)
    filled_quantity = models.DecimalField(**QUANTITY, default=Decimal("0"))
    average_price = models.DecimalField(**PRICE, null=True, blank=True)
    fee = models.DecimalField(**MONEY, default=Decimal("0"))
    stop_loss_price = models.DecimalField(**PRICE, null=True, blank=True)
    take_profit_price = models.DecimalField(**PRICE, null=True, blank=True)
    stop_loss_order_id = models.CharField(max_length=64, blank=True)
    take_profit_order_id = models.CharField(max_length=64, blank=True)
    adjustments = models.JSONField(
        default=list,
        blank=True,
        help_text="Values the risk limits changed: [{field, requested, applied, reason}].",
    )
    error = models.TextField(blank=True)
    note = models.TextField(
        blank=True,
        help_text="Why an execution that did nothing did nothing (nothing to do: no long "
        "open), or what it did besides its entry (a position closed first).",
    )
    staleness = models.JSONField(
        null=True,
        blank=True,
        help_text="The staleness check before it was recorded: the decision's age and its "
        "price's drift since the snapshot, against the strategy's limits.",
    )
    lease_until = models.DateTimeField(
        null=True,
        blank=True,
        help_text="While set in the future, one worker is submitting this execution.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.action} {self.symbol} ({self.status})"
