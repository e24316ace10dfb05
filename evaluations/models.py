"""Outcome reviews: what happened after each debate's instant, decision by decision.

A debate is reviewed once (``DebateReview``, one per debate: the row that claims the
review, so concurrent reviewers resolve in the database), with one ``DecisionReview``
per coin decision and one ``VoteReview`` per final vote (a ballot's position on one
coin). Each holds the price at the instant and at the horizon, the realised return and
the verdict of its action (``evaluations.scoring``). Debates know nothing of reviews:
the link is held here.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q

from traders.models import MONEY, PRICE


class Verdict(models.TextChoices):
    RIGHT = "right", "Right"
    WRONG = "wrong", "Wrong"
    FLAT = "flat", "Flat (the move was under the threshold)"


class DebateReview(models.Model):
    """The review of one debate: when, over which horizon, at which flat threshold."""

    debate = models.OneToOneField("debates.Debate", on_delete=models.CASCADE, related_name="review")
    instant = models.DateTimeField(help_text="The market instant the debate decided at.")
    horizon_minutes = models.PositiveIntegerField()
    flat_pct = models.DecimalField(max_digits=6, decimal_places=3)
    source = models.CharField(max_length=10, help_text="The market source the prices came from.")
    round_tokens = models.PositiveIntegerField(
        default=0, help_text="Tokens the rounds after the first spent (prompt and completion)."
    )
    reviewed_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-instant", "-id"]
        indexes = [models.Index(fields=["instant"])]

    def __str__(self) -> str:
        return f"review of debate {self.debate_id}"


class Outcome(models.Model):
    """What a position on one coin met: the prices, the return and the verdict."""

    review = models.ForeignKey(DebateReview, on_delete=models.CASCADE)
    symbol = models.CharField(max_length=20)
    instant = models.DateTimeField()
    action = models.CharField(max_length=12)
    price_at_instant = models.DecimalField(**PRICE)
    price_at_horizon = models.DecimalField(**PRICE)
    realised_return = models.FloatField(help_text="(horizon price / instant price) - 1.")
    verdict = models.CharField(max_length=5, choices=Verdict.choices)

    class Meta:
        abstract = True


class DecisionReview(Outcome):
    """The outcome of one coin decision, beside the round-1 majority on the same coin and,
    in a backtest with one, the budget-matched baseline."""

    decision = models.OneToOneField(
        "debates.Decision", on_delete=models.CASCADE, related_name="review"
    )
    round1_action = models.CharField(
        max_length=12, help_text="The consensus rule over the round-1 openings."
    )
    round1_verdict = models.CharField(max_length=5, choices=Verdict.choices)
    baseline_action = models.CharField(
        max_length=12,
        blank=True,
        help_text="The budget-matched baseline's decision at the same step (a backtest's, "
        "once its answers are in); empty without one.",
    )
    baseline_verdict = models.CharField(max_length=5, choices=Verdict.choices, blank=True)
    executed = models.BooleanField(default=False)
    realised_pnl = models.DecimalField(
        **MONEY,
        null=True,
        blank=True,
        help_text="An executed decision's fill marked to the horizon price, less its fee.",
    )

    class Meta:
        ordering = ["-instant", "symbol"]
        default_related_name = "decision_reviews"

    def __str__(self) -> str:
        return f"{self.symbol} {self.action}: {self.verdict}"

    @property
    def flipped(self) -> bool:
        """Say whether the debate's rounds changed the round-1 majority's action."""
        return self.action != self.round1_action


class VoteReview(Outcome):
    """The outcome of one voter's final position on one coin."""

    vote = models.OneToOneField("debates.Vote", on_delete=models.CASCADE, related_name="review")
    ai_model = models.ForeignKey(
        "debates.AIModel", on_delete=models.CASCADE, related_name="vote_reviews"
    )
    personality = models.CharField(max_length=20)
    speak_order = models.PositiveSmallIntegerField()
    confidence = models.FloatField()
    known_at = models.DateTimeField(
        null=True, help_text="The instant its outcome was known: the instant plus the horizon."
    )

    class Meta:
        ordering = ["-instant", "speak_order", "symbol"]
        default_related_name = "vote_reviews"
        indexes = [
            models.Index(fields=["ai_model", "personality", "instant"]),
            models.Index(fields=["ai_model", "personality", "known_at"]),
        ]
        constraints = [
            models.CheckConstraint(
                condition=Q(confidence__gte=0, confidence__lte=100),
                name="votereview_confidence_0_100",
            )
        ]

    def __str__(self) -> str:
        return f"{self.personality} {self.symbol} {self.action}: {self.verdict}"
