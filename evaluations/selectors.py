"""Reads of outcome reviews: the debate-effect ledger and the calibration of voters,
per strategy, schedule, backtest or overall, always within one owner's debates.

Each is a fixed number of queries whatever the number of reviews (three for a ledger,
one for a calibration); the arithmetic is ``evaluations.scoring``'s.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q, QuerySet, Sum

from evaluations import scoring
from evaluations.models import DebateReview, DecisionReview, Verdict, VoteReview


@dataclass(frozen=True)
class Scope:
    """Which of an owner's debates a figure covers: one strategy, schedule or backtest,
    or (none given) all of them."""

    owner_id: int
    strategy_id: int | None = None
    schedule_id: int | None = None
    backtest_id: int | None = None

    def debates(self, prefix: str = "debate__") -> Q:
        """Return the filter of the scope's debates, through ``prefix``."""
        q = Q(**{f"{prefix}owner_id": self.owner_id})
        if self.strategy_id is not None:
            q &= Q(**{f"{prefix}strategy_id": self.strategy_id})
        if self.schedule_id is not None:
            q &= Q(**{f"{prefix}schedule_id": self.schedule_id})
        if self.backtest_id is not None:
            q &= Q(**{f"{prefix}backtest_step__backtest_id": self.backtest_id})
        return q


def decision_reviews(scope: Scope) -> QuerySet[DecisionReview]:
    """Return the reviews of the decisions of the scope's debates."""
    return DecisionReview.objects.filter(scope.debates("review__debate__"))


def vote_reviews(scope: Scope) -> QuerySet[VoteReview]:
    """Return the reviews of the votes of the scope's debates."""
    return VoteReview.objects.filter(scope.debates("review__debate__"))


def voter_key(ai_model_id: int, personality: str) -> str:
    """Return the key of a voter: an AI model in a personality."""
    return f"{ai_model_id}:{personality}"


def ledger(scope: Scope) -> scoring.Ledger:
    """Return the debate-effect ledger of the scope (``scoring.Ledger``)."""
    rows = [
        scoring.LedgerRow(*values)
        for values in decision_reviews(scope)
        .order_by()
        .values_list(
            "review__debate_id", "symbol", "action", "verdict", "round1_action", "round1_verdict"
        )
    ]
    tokens = DebateReview.objects.filter(scope.debates()).aggregate(total=Sum("round_tokens"))
    participants: dict[str, dict[str, Any]] = {}
    for row in (
        vote_reviews(scope)
        .order_by()
        .values("ai_model_id", "ai_model__name", "personality")
        .annotate(
            votes=Count("pk"),
            right=Count("pk", filter=Q(verdict=Verdict.RIGHT)),
            wrong=Count("pk", filter=Q(verdict=Verdict.WRONG)),
        )
        .order_by("ai_model__name", "personality", "ai_model_id")
    ):
        judged = row["right"] + row["wrong"]
        participants[voter_key(row["ai_model_id"], row["personality"])] = {
            "ai_model": row["ai_model_id"],
            "ai_model_name": row["ai_model__name"],
            "personality": row["personality"],
            "votes": row["votes"],
            "right": row["right"],
            "wrong": row["wrong"],
            "accuracy": round(row["right"] / judged, 6) if judged else None,
        }
    return scoring.ledger(rows, round_tokens=tokens["total"] or 0, participants=participants)


def calibration(scope: Scope) -> list[dict[str, Any]]:
    """Return the calibration of every voter of the scope (AI model x personality),
    ordered by model name and personality: its identity beside ``scoring.Calibration``."""
    samples: dict[tuple[int, str, str], list[scoring.Sample]] = defaultdict(list)
    for model_id, name, personality, confidence, verdict, realised, flat in (
        vote_reviews(scope)
        .exclude(verdict=Verdict.FLAT)
        .order_by()
        .values_list(
            "ai_model_id",
            "ai_model__name",
            "personality",
            "confidence",
            "verdict",
            "realised_return",
            "review__flat_pct",
        )
    ):
        samples[(model_id, name, personality)].append(
            scoring.Sample(
                confidence=confidence,
                right=verdict == Verdict.RIGHT,
                move=scoring.move(realised, float(flat)),
            )
        )
    return [
        {
            "voter": voter_key(model_id, personality),
            "ai_model": model_id,
            "ai_model_name": name,
            "personality": personality,
            **scoring.calibration(found).to_dict(),
        }
        for (model_id, name, personality), found in sorted(
            samples.items(), key=lambda item: (item[0][1], item[0][2], item[0][0])
        )
    ]
