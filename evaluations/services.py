"""Outcome reviews: score each completed debate's decisions and votes once the market
after its instant is known.

``debate_review`` reviews one debate exactly once, however many processes try at the
same time: the debate's row is locked with ``SKIP LOCKED`` (a reviewer leaves a debate
another holds), and the ``DebateReview`` row, unique per debate, is made in the same
transaction as every decision's and vote's review, so a second reviewer that got past
the lock after the first committed finds the review and does nothing. A backtest, the
one reviewer of its debates, which must review each before its report, waits for the
row instead (``wait=True``): another transaction may hold it for a moment (a request
to retry a step of the completed debate, refused under the lock).

The instant is the debate's snapshot's; the price at the instant is the price the
snapshot showed for the coin, and the price at the horizon comes from the debate's own
market source (``strategies.snapshots.market_source``): on the dataset, the close of
the last candle closed by instant + horizon; on a live source, the price when the
review runs, which the beat task (``evaluations.reviews_due``) does soon after the
horizon. A dataset debate is due once its horizon lies inside the dataset, a live one
once its horizon has passed; a backtest reviews each of its debates itself as soon as
it has ended, over its own horizon.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.utils import timezone

from arena.queries import one_or_none
from debates.engine.consensus import ConsensusLimits, round1_majority
from debates.engine.types import CoinDecision
from debates.models import (
    Debate,
    DebateStatus,
    Decision,
    Message,
    SeatKind,
    StepStatus,
    Vote,
)
from evaluations import scoring
from evaluations.models import DebateReview, DecisionReview, VoteReview
from strategies.market import sources
from strategies.market.dataset import DATASET_END
from strategies.market.exceptions import MarketDataError
from strategies.models import MarketSource, Strategy
from strategies.snapshots import market_source

logger = logging.getLogger(__name__)
DEFAULT_FLAT_PCT = Strategy._meta.get_field("review_flat_pct").default


@dataclass(frozen=True)
class ReviewSettings:
    """The horizon and flat threshold a debate is reviewed with."""

    horizon_minutes: int
    flat_pct: Decimal

    @classmethod
    def of(cls, strategy: Strategy) -> ReviewSettings:
        """Return the review settings of ``strategy``."""
        return cls(strategy.review_horizon_minutes, strategy.review_flat_pct)


def snapshot_instant(debate: Debate) -> datetime | None:
    """Return the market instant of a debate's snapshot (None without one)."""
    return _instant((debate.market_snapshot or {}).get("as_of"))


def consensus_limits(strategy: Strategy | None) -> ConsensusLimits:
    """Return the consensus limits of ``strategy`` (the defaults without one)."""
    if strategy is None:
        return ConsensusLimits()
    return ConsensusLimits.by_major(
        major=strategy.max_leverage_major,
        others=strategy.max_leverage_other,
        min_confidence=strategy.min_confidence,
    )


def is_due(instant: datetime | None, source: str, horizon_minutes: int, *, now: datetime) -> bool:
    """Say whether the market after ``instant`` is known over the horizon on ``source``."""
    if instant is None:
        return False
    until = instant + timedelta(minutes=horizon_minutes)
    return until <= (DATASET_END if source == MarketSource.DATASET else now)


def _instant(stamp: str | None) -> datetime | None:
    return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")) if stamp else None


def debate_review(
    *,
    debate_id: int,
    settings: ReviewSettings | None = None,
    now: datetime | None = None,
    wait: bool = False,
) -> DebateReview | None:
    """Review a completed debate once; return the review made, None when there was
    nothing to do (reviewed already, held by another transaction unless ``wait``, not
    due, no data).

    ``settings`` default to the debate's strategy's.
    """
    now = now or timezone.now()
    with transaction.atomic():
        debate = one_or_none(
            Debate.objects.select_for_update(of=("self",), skip_locked=not wait).select_related(
                "strategy"
            ),
            pk=debate_id,
            status=DebateStatus.COMPLETED,
            review__isnull=True,
        )
        if debate is None or debate.strategy is None:
            return None
        settings = settings or ReviewSettings.of(debate.strategy)
        instant = snapshot_instant(debate)
        if not is_due(instant, debate.strategy.market_source, settings.horizon_minutes, now=now):
            return None
        try:
            with transaction.atomic():
                return _review(debate, settings)
        except IntegrityError:
            if DebateReview.objects.filter(debate_id=debate_id).exists():
                return None  # reviewed by another process between its commit and our lock
            raise
        except MarketDataError as exc:
            logger.warning("debate %s: no review, the market data failed: %s", debate_id, exc)
            return None


def _review(debate: Debate, settings: ReviewSettings) -> DebateReview:
    instant = snapshot_instant(debate)
    assert instant is not None
    outcomes = _Outcomes(
        debate,
        market_source(debate.strategy),
        instant + timedelta(minutes=settings.horizon_minutes),
    )
    review = DebateReview.objects.create(
        debate=debate,
        instant=instant,
        horizon_minutes=settings.horizon_minutes,
        flat_pct=settings.flat_pct,
        source=outcomes.source.name,
        round_tokens=_round_tokens(debate),
    )
    flat = float(settings.flat_pct)
    DecisionReview.objects.bulk_create(_decision_reviews(review, outcomes, flat))
    VoteReview.objects.bulk_create(_vote_reviews(review, outcomes, flat))
    return review


class _Outcomes:
    """The move of each coin a debate's snapshot priced, from the price it showed to the
    price at the horizon, fetched once per coin."""

    def __init__(self, debate: Debate, source: sources.MarketSource, horizon_at: datetime) -> None:
        self.debate = debate
        self.source = source
        self.horizon_at = horizon_at
        self._shown = {
            coin["symbol"]: coin["price"]
            for coin in debate.market_snapshot.get("coins", [])
            if coin.get("price") is not None
        }
        self._found: dict[str, tuple[Decimal, Decimal, float]] = {}

    def __contains__(self, symbol: str) -> bool:
        return symbol in self._shown

    def of(self, symbol: str) -> tuple[Decimal, Decimal, float]:
        """Return the price at the instant, the price at the horizon and the move."""
        if symbol not in self._found:
            before = Decimal(str(self._shown[symbol]))
            after = Decimal(str(self.source.fetch_price(symbol, self.horizon_at)))
            self._found[symbol] = (before, after, scoring.realised_return(before, after))
        return self._found[symbol]


def _round_tokens(debate: Debate) -> int:
    """Return the tokens the rounds after the first spent."""
    tokens = Message.objects.filter(debate=debate, round__gte=2).aggregate(
        prompt=Sum("prompt_tokens"), completion=Sum("completion_tokens")
    )
    return (tokens["prompt"] or 0) + (tokens["completion"] or 0)


def _round1_actions(debate: Debate) -> dict[str, str]:
    """Return the action the round-1 majority took on each coin."""
    openings = {
        str(speaker): [CoinDecision.from_dict(d) for d in said]
        for speaker, said in Message.objects.filter(debate=debate, round=1, status=StepStatus.OK)
        .order_by("participant__speak_order")  # in speaking order
        .values_list("participant_id", "decisions")
    }
    limits = consensus_limits(debate.strategy)
    return {
        result.symbol: result.action.value
        for result in round1_majority(openings, debate.symbols, limits)
    }


def _decision_reviews(
    review: DebateReview, outcomes: _Outcomes, flat: float
) -> list[DecisionReview]:
    """Return the reviews of the debate's decisions on the coins its snapshot priced."""
    debate = outcomes.debate
    round1 = _round1_actions(debate)
    rows = []
    for decision in Decision.objects.filter(debate=debate).select_related("execution"):
        if decision.symbol not in outcomes:
            continue
        before, after, realised = outcomes.of(decision.symbol)
        first = round1.get(decision.symbol, "wait")
        pnl = _marked_pnl(decision, after)
        rows.append(
            DecisionReview(
                review=review,
                decision=decision,
                symbol=decision.symbol,
                instant=review.instant,
                action=decision.action,
                price_at_instant=before,
                price_at_horizon=after,
                realised_return=realised,
                verdict=scoring.verdict(decision.action, realised, flat),
                round1_action=first,
                round1_verdict=scoring.verdict(first, realised, flat),
                executed=pnl is not None,
                realised_pnl=pnl,
            )
        )
    return rows


def _marked_pnl(decision: Decision, at_horizon: Decimal) -> Decimal | None:
    """Return the decision's fill marked to the horizon price, None when nothing filled."""
    execution = getattr(decision, "execution", None)
    if execution is None or execution.filled_quantity <= 0:
        return None
    return scoring.marked_pnl(
        execution.action,
        execution.filled_quantity,
        execution.average_price,
        at_horizon,
        execution.fee,
    )


def _vote_reviews(review: DebateReview, outcomes: _Outcomes, flat: float) -> list[VoteReview]:
    """Return the reviews of the debate's model votes on the coins its snapshot priced.

    A person's vote (a human seat's) is counted in the decision, but a vote review scores
    an AI model in a personality: only model seats' votes are reviewed.
    """
    rows = []
    for vote in Vote.objects.filter(
        debate=outcomes.debate, abstained=False, participant__kind=SeatKind.MODEL
    ).select_related("participant"):
        if vote.symbol not in outcomes:
            continue
        before, after, realised = outcomes.of(vote.symbol)
        rows.append(
            VoteReview(
                review=review,
                vote=vote,
                ai_model_id=vote.participant.ai_model_id,
                personality=vote.participant.personality,
                speak_order=vote.participant.speak_order,
                symbol=vote.symbol,
                instant=review.instant,
                known_at=outcomes.horizon_at,
                action=vote.action,
                confidence=min(100.0, max(0.0, vote.confidence or 0.0)),
                price_at_instant=before,
                price_at_horizon=after,
                realised_return=realised,
                verdict=scoring.verdict(vote.action, realised, flat),
            )
        )
    return rows


def decision_reviews_baseline(*, debate_id: int, actions: dict[str, str]) -> int:
    """Put the budget-matched baseline's action on each coin (``actions``; on a coin it
    decided nothing, ``wait``) beside the reviewed decisions of debate ``debate_id``, with
    its verdict on the same move; return how many reviews it joined (none when the debate
    has no review). Writing it again writes the same."""
    rows = list(
        DecisionReview.objects.filter(decision__debate_id=debate_id).select_related("review")
    )
    for row in rows:
        row.baseline_action = actions.get(row.symbol, "wait")
        row.baseline_verdict = scoring.verdict(
            row.baseline_action, row.realised_return, float(row.review.flat_pct)
        )
    DecisionReview.objects.bulk_update(rows, ["baseline_action", "baseline_verdict"])
    return len(rows)


def debates_review(
    *, debate_ids: Iterable[int], settings: ReviewSettings | None = None, wait: bool = False
) -> list[DebateReview]:
    """Review each of ``debate_ids`` (see ``debate_review``); return the reviews made."""
    made = []
    for debate_id in debate_ids:
        review = debate_review(debate_id=debate_id, settings=settings, wait=wait)
        if review is not None:
            made.append(review)
    return made


def reviews_due(*, now: datetime | None = None) -> list[int]:
    """Review every completed debate outside a backtest whose horizon has passed; return
    the ids of the debates reviewed (the beat task; safe to run in many processes)."""
    now = now or timezone.now()
    candidates = (
        Debate.objects.filter(
            status=DebateStatus.COMPLETED,
            review__isnull=True,
            strategy__isnull=False,
            backtest_step__isnull=True,
        )
        .order_by("finished_at", "pk")
        .values_list(
            "pk",
            "market_snapshot__as_of",
            "strategy__market_source",
            "strategy__review_horizon_minutes",
        )
    )
    due = [
        debate_id
        for debate_id, stamp, source, horizon in candidates.iterator(chunk_size=500)
        if is_due(_instant(stamp), source, horizon, now=now)
    ]
    reviewed = []
    for debate_id in due:
        try:
            review = debate_review(debate_id=debate_id)
        except IntegrityError:
            # Not a concurrent review (debate_review leaves those): a row the review
            # could not write. Said loudly, and the debates after it are still reviewed.
            logger.exception("debate %s: no review, a review row was refused", debate_id)
            continue
        if review is not None:
            reviewed.append(review.debate_id)
    return reviewed
