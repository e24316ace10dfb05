"""Backtests: a debate template replayed over a window of history and scored.

A backtest owns one debate per step (``BacktestStep``, unique per step index, so a step
is debated exactly once however often its run is resumed) and, once every step's debate
has ended, a report: the metrics, equity curve and trades of the debate's decisions
and of every baseline. Each step's debate names its backtest (``Debate.backtest``, its
``origin`` backtest), so a backtest's debates are listed apart from a person's own.
"""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

from django.conf import settings
from django.db import models
from django.db.models import Q

from backtests.engine.baseline import OFF, ROTATE, SEAT_CHOICES
from debates.engine.gate import L0
from debates.models import (
    CacheMode,
    DebateLevel,
    ParseStatus,
    StepStatus,
    Usage,
    Weighting,
    level_field,
)
from strategies.models import PromptVariant


class BacktestStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"
    CANCELLED = "cancelled", "Cancelled"


# The window `manage.py backtest` (and so `make backtest`) and the backtests page start
# from: two weeks, 84 steps at 4h, inside every dataset strategy's window (the 15m candles
# begin on 5 August, and a strategy reads up to 200 of them before its first step).
DEFAULT_WINDOW = (datetime(2024, 8, 8, tzinfo=UTC), datetime(2024, 8, 22, tzinfo=UTC))

ACTIVE_STATUSES = (BacktestStatus.PENDING, BacktestStatus.RUNNING)
TERMINAL_STATUSES = (BacktestStatus.COMPLETED, BacktestStatus.FAILED, BacktestStatus.CANCELLED)


class CoinScope(models.TextChoices):
    PRIMARY = "primary", "The primary coin's decision"
    ALL = "all", "Every executable decision"


class BookMode(models.TextChoices):
    AWARE = "aware", "Each step's votes see the simulated book at its instant"
    BLIND = "blind", "No step sees an account; the debates run side by side"


BASELINE_CHOICES = [
    (OFF, "Off"),
    (ROTATE, "Each seat's model in turn"),
    *((seat, f"The model of seat {seat}") for seat in SEAT_CHOICES),
]


class Backtest(models.Model):
    """A debate template run at every step of a window, and what its decisions made."""

    owner = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="backtests"
    )
    name = models.CharField(max_length=200)
    strategy = models.ForeignKey(
        "strategies.Strategy", on_delete=models.SET_NULL, null=True, related_name="backtests"
    )
    symbol = models.CharField(max_length=20, blank=True)
    participants = models.JSONField(
        default=list, help_text='Seats of each debate: [{"ai_model": id, "personality": id}].'
    )
    max_rounds = models.PositiveSmallIntegerField(default=2)
    prompt_variant = models.CharField(
        max_length=12, choices=PromptVariant.choices, default=PromptVariant.BALANCED
    )
    start = models.DateTimeField(help_text="The first step's instant.")
    end = models.DateTimeField(help_text="The window's end: open positions close here.")
    interval_minutes = models.PositiveIntegerField(help_text="Minutes between steps.")
    horizon_minutes = models.PositiveIntegerField(help_text="Minutes a decision is scored over.")
    starting_balance = models.DecimalField(max_digits=20, decimal_places=8, default=Decimal("1000"))
    fee_rate = models.DecimalField(max_digits=8, decimal_places=6, default=Decimal("0.0004"))
    slippage_bps = models.DecimalField(max_digits=8, decimal_places=2, default=Decimal("0"))
    coins = models.CharField(max_length=7, choices=CoinScope.choices, default=CoinScope.PRIMARY)
    book = models.CharField(
        max_length=5,
        choices=BookMode.choices,
        default=BookMode.AWARE,
        help_text="aware: each step's votes see the simulated account at its instant, after "
        "the earlier steps' fills (the votes run in time order); blind: none does.",
    )
    cache = models.CharField(max_length=7, choices=CacheMode.choices, default=CacheMode.USE)
    level = level_field(
        DebateLevel.L2, "The level of every step's debate: L2 (the full debate), L1 or auto."
    )
    weighting = models.CharField(
        max_length=12,
        choices=Weighting.choices,
        default=Weighting.CONFIDENCE,
        help_text="Each step's debate's weighting; the report shows both rules either way.",
    )
    baseline = models.CharField(
        max_length=6,
        choices=BASELINE_CHOICES,
        default=OFF,
        help_text="The budget-matched baseline (it costs model calls): at each step one "
        "model answers its round-1 prompt again and again, with the debate's tokens.",
    )

    status = models.CharField(
        max_length=10, choices=BacktestStatus.choices, default=BacktestStatus.PENDING
    )
    steps_total = models.PositiveIntegerField()
    steps_done = models.PositiveIntegerField(default=0)
    report = models.JSONField(null=True, blank=True)
    headline = models.JSONField(
        null=True, blank=True, help_text="Each rule's final equity, return and drawdown."
    )
    error = models.JSONField(null=True, blank=True, help_text="{code, message} of a failure.")
    tick_token = models.CharField(
        max_length=32, blank=True, help_text="The run's live tick chain; a resume replaces it."
    )
    ticked_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "status", "-created_at"])]
        constraints = [
            models.CheckConstraint(condition=Q(end__gt=models.F("start")), name="backtest_window"),
            models.CheckConstraint(
                condition=Q(interval_minutes__gte=15), name="backtest_interval_15"
            ),
            models.CheckConstraint(
                condition=Q(steps_total__gte=1, steps_total__lte=2000),
                name="backtest_steps_1_2000",
            ),
            models.CheckConstraint(
                condition=Q(steps_done__lte=models.F("steps_total")), name="backtest_progress"
            ),
        ]

    def __str__(self) -> str:
        return self.name


class StepSkip(models.TextChoices):
    QUIET_MARKET = "quiet_market", "Quiet market (L0)"


class BaselineState(models.TextChoices):
    NONE = "", "Not begun (or no baseline)"
    ASKING = "asking", "Asking its answers"
    DONE = "done", "Done"


class BacktestStep(models.Model):
    """One step of a backtest: its instant and the debate that decided there, or, at
    ``level: auto``, why no debate was needed (L0: no debate, no model call)."""

    backtest = models.ForeignKey(Backtest, on_delete=models.CASCADE, related_name="steps")
    index = models.PositiveIntegerField()
    as_of = models.DateTimeField()
    debate = models.OneToOneField(
        "debates.Debate",
        on_delete=models.SET_NULL,
        null=True,
        blank=True,
        related_name="backtest_step",
    )
    skipped = models.CharField(
        max_length=16,
        choices=StepSkip.choices,
        blank=True,
        help_text="Why the step started no debate (L0); empty for a debated step.",
    )
    skip_reason = models.TextField(blank=True, help_text="The L0 rule's figures at the step.")
    baseline_state = models.CharField(
        max_length=6, choices=BaselineState.choices, blank=True, default=BaselineState.NONE
    )
    baseline_seat = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="The speak order of the seat whose model answered."
    )
    baseline_target = models.PositiveIntegerField(
        null=True, blank=True, help_text="The tokens the step's debate spent: what it matched."
    )
    baseline_note = models.CharField(
        max_length=200, blank=True, help_text="Why its answers stopped short of the target."
    )
    baseline_moved_at = models.DateTimeField(
        null=True, blank=True, help_text="When the baseline last made progress."
    )

    class Meta:
        ordering = ["backtest", "index"]
        constraints = [
            models.UniqueConstraint(fields=["backtest", "index"], name="backtest_step_once"),
        ]

    def __str__(self) -> str:
        return f"{self.backtest_id} step {self.index}"

    @property
    def level(self) -> str:
        """The level the step ran at: L0 when skipped, else its debate's level used."""
        if self.skipped:
            return L0
        return self.debate.level_used if self.debate is not None else ""


class BaselineAnswer(Usage):
    """One answer of a step's budget-matched baseline: the round-1 prompt of a seat, the
    book added, answered by its model as the ``sample``-th independent answer.

    It is kept with the step's debate, so its owner's budgets and spend and the
    backtest's count it; it is not one of the debate's own calls (``debate_call``).
    """

    debate_call = False

    debate = models.ForeignKey(
        "debates.Debate", on_delete=models.CASCADE, related_name="baseline_answers"
    )
    participant = models.ForeignKey(
        "debates.Participant", on_delete=models.CASCADE, related_name="+"
    )
    sample = models.PositiveSmallIntegerField()
    status = models.CharField(max_length=7, choices=StepStatus.choices, default=StepStatus.OK)
    content = models.TextField(blank=True)
    decisions = models.JSONField(default=list, blank=True)
    parse_status = models.CharField(
        max_length=7, choices=ParseStatus.choices, default=ParseStatus.NONE
    )
    dropped = models.JSONField(default=list, blank=True)
    error = models.JSONField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["debate_id", "sample"]
        constraints = [
            models.UniqueConstraint(fields=["debate", "sample"], name="baseline_answer_once"),
            models.CheckConstraint(condition=Q(sample__gte=1), name="baseline_sample_from_1"),
        ]

    def __str__(self) -> str:
        return f"baseline answer {self.sample} of debate {self.debate_id} ({self.status})"
