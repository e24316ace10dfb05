"""Reads of outcome reviews: the debate-effect ledger (with the verdict on whether the
debate earned its tokens) and the calibration of voters, per strategy, schedule,
backtest or overall, always within one owner's debates.

Each is a fixed number of queries whatever the number of reviews (three for a ledger,
one for a calibration); the arithmetic is ``evaluations.scoring``'s. The monitors read
the last debates of a scope (``evaluations.monitors``).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db.models import Count, F, Q, QuerySet, Sum

from arena.queries import one_or_none
from debates.engine.book import TRACK_RECORD_CALLS, Call
from debates.engine.consensus import calibrated_weight
from debates.engine.types import plain_dict
from debates.models import (
    AIModel,
    Debate,
    DebateStatus,
    Decision,
    Participant,
    Provider,
    SeatKind,
    Vote,
)
from evaluations import monitors, scoring, verdicts
from evaluations.models import DebateReview, DecisionReview, Verdict, VoteReview
from evaluations.monitors import PARSE_FAILURE


@dataclass(frozen=True)
class Scope:
    """Which of an owner's debates a figure covers: one strategy, schedule or backtest,
    or (none given) all of them."""

    owner_id: int
    strategy_id: int | None = None
    schedule_id: int | None = None
    backtest_id: int | None = None

    @property
    def subject(self) -> str:
        """Return what the scope's figures are about, as a verdict names it."""
        for value, name in (
            (self.backtest_id, "this backtest"),
            (self.schedule_id, "this schedule"),
            (self.strategy_id, "this strategy"),
        ):
            if value is not None:
                return name
        return "your debates"

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
            "review__debate_id",
            "symbol",
            "action",
            "verdict",
            "round1_action",
            "round1_verdict",
            "realised_return",
            "baseline_action",
            "baseline_verdict",
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
        participants[voter_key(row["ai_model_id"], row["personality"])] = {
            "ai_model": row["ai_model_id"],
            "ai_model_name": row["ai_model__name"],
            "personality": row["personality"],
            "votes": row["votes"],
            "right": row["right"],
            "wrong": row["wrong"],
            "accuracy": scoring.share(row["right"], row["right"] + row["wrong"]),
        }
    return scoring.ledger(
        rows,
        round_tokens=tokens["total"] or 0,
        participants=participants,
        verdict=verdicts.ledger_verdict(rows, scope.subject),
    )


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
        {**_voter(*voter), **scoring.calibration(found).to_dict()}
        for voter, found in sorted(samples.items(), key=_by_voter_name)
    ]


def _voter(ai_model_id: int, name: str, personality: str) -> dict[str, Any]:
    """Return who a voter is, as each voter's figures begin."""
    return {
        "voter": voter_key(ai_model_id, personality),
        "ai_model": ai_model_id,
        "ai_model_name": name,
        "personality": personality,
    }


def _by_voter_name(item: tuple[tuple[int, str, str], Any]) -> tuple[str, str, int]:
    """Order voters (AI model id, name, personality) by model name, then personality."""
    (ai_model_id, name, personality), _ = item
    return name, personality, ai_model_id


def voter_history(
    voters: Iterable[tuple[int, str]], *, until: datetime, scope: Scope | None = None
) -> dict[tuple[int, str], list[tuple[datetime, bool]]]:
    """Return, for each voter (AI model id, personality), its judged votes whose outcome
    was known by ``until``: (known at, right), oldest first; only in the debates of
    ``scope`` when one is given. One query."""
    wanted = set(voters)
    history: dict[tuple[int, str], list[tuple[datetime, bool]]] = {v: [] for v in wanted}
    reviews = VoteReview.objects.all() if scope is None else vote_reviews(scope)
    rows = (
        reviews.filter(
            ai_model_id__in={model for model, _ in wanted},
            personality__in={personality for _, personality in wanted},
            known_at__lte=until,
        )
        .exclude(verdict=Verdict.FLAT)
        .order_by("known_at", "pk")
        .values_list("ai_model_id", "personality", "known_at", "verdict")
    )
    for model_id, personality, known_at, verdict in rows:
        if (model_id, personality) in wanted:
            history[(model_id, personality)].append((known_at, verdict == Verdict.RIGHT))
    return history


def calibrated_voter_weights(*, debate_id: int) -> dict[str, float]:
    """Return each participant's calibrated weight in a debate (by participant id), from
    the reviews of its model and personality whose outcome was known by the debate's
    instant: reviews of earlier instants only, so a backtest never weighs by the future.

    A backtest's debate reads the reviews of its own backtest's debates only (a step
    starts once those it may read are made: ``backtests.services.runs``), so what else
    was run over the same window never changes what a backtest decides."""
    found = one_or_none(
        Debate.objects.values_list(
            "owner_id", "market_snapshot__as_of", "backtest_step__backtest_id"
        ),
        pk=debate_id,
    )
    owner_id, stamp, backtest_id = found or (None, None, None)
    if not stamp:
        return {}  # no instant to read the past from: the votes weigh by confidence
    instant = datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    seats = list(
        Participant.objects.filter(debate_id=debate_id).values_list(
            "pk", "ai_model_id", "personality"
        )
    )
    scope = None if backtest_id is None else Scope(owner_id=owner_id, backtest_id=backtest_id)
    history = voter_history([(model, p) for _, model, p in seats], until=instant, scope=scope)
    weights = {}
    for participant_id, model_id, personality in seats:
        judged = history[(model_id, personality)]
        weights[str(participant_id)] = calibrated_weight(
            sum(right for _, right in judged), len(judged)
        )
    return weights


def track_records(
    *, debate_id: int, instant: datetime, symbols: list[str]
) -> dict[str, list[dict[str, Any]]]:
    """Return each model seat's track record in a debate (by participant id): the last
    ``TRACK_RECORD_CALLS`` reviewed votes of its model and personality on ``symbols``
    whose outcome was known by ``instant``, newest first, as ``Call`` dicts.

    A backtest's debate reads its own backtest's reviews only, as its weights do; any
    other debate reads its owner's debates outside backtests, whose outcomes a replay
    of the past would otherwise count as known today. One query a seat."""
    owner_id, backtest_id = Debate.objects.values_list(
        "owner_id", "backtest_step__backtest_id"
    ).get(pk=debate_id)
    scope = Scope(owner_id=owner_id, backtest_id=backtest_id)
    reviews = vote_reviews(scope).filter(symbol__in=symbols, known_at__lte=instant)
    if backtest_id is None:
        reviews = reviews.filter(review__debate__backtest_step__isnull=True)
    records = {}
    seats = Participant.objects.filter(debate_id=debate_id, ai_model__isnull=False)
    for participant_id, model_id, personality in seats.values_list(
        "pk", "ai_model_id", "personality"
    ):
        calls = reviews.filter(ai_model_id=model_id, personality=personality).order_by(
            "-instant", "symbol"
        )[:TRACK_RECORD_CALLS]
        records[str(participant_id)] = [
            plain_dict(
                Call(
                    at=call.instant.isoformat().replace("+00:00", "Z"),
                    symbol=call.symbol,
                    action=call.action,
                    confidence=call.confidence,
                    move_pct=round(call.realised_return * 100, 4),
                    verdict=call.verdict,
                )
            )
            for call in calls
        ]
    return records


def _recent_debates(scope: Scope) -> list[int]:
    """Return the ids of the scope's last ``monitors.WINDOW`` completed debates, oldest
    first (by the instant they decided at, then their id)."""
    found = (
        Debate.objects.filter(scope.debates(prefix=""), status=DebateStatus.COMPLETED)
        .order_by("-as_of", "-finished_at", "-pk")
        .values_list("pk", flat=True)[: monitors.WINDOW]
    )
    return list(found)[::-1]


def monitor_report(scope: Scope) -> dict[str, Any]:
    """Return the monitors of the scope's last debates: the consensus's primary
    decisions and each voter's votes on them, with every warning (``monitors``).

    A voter is an AI model in a personality, as in the ledger and the calibration: a
    human seat's votes are left out (the consensus they helped make is not)."""
    debates = _recent_debates(scope)
    order = {debate_id: index for index, debate_id in enumerate(debates)}
    overall = monitors.monitor(_consensus_entries(debates, order)).to_dict()
    voters = [
        {**_voter(*voter), **monitors.monitor(entries).to_dict()}
        for voter, entries in sorted(_voter_entries(debates, order).items(), key=_by_voter_name)
    ]
    warnings = [f"consensus: {w}" for w in overall["warnings"]] + [
        f"{v['ai_model_name']} as {v['personality']}: {w}" for v in voters for w in v["warnings"]
    ]
    return {"debates": len(debates), "consensus": overall, "voters": voters, "warnings": warnings}


def _consensus_entries(debates: list[int], order: dict[int, int]) -> list[str]:
    """Return the action of each debate's primary decision (``PARSE_FAILURE`` where no
    usable vote reached it), in the order of ``order``."""
    rows = Decision.objects.filter(debate_id__in=debates, is_primary=True).values_list(
        "debate_id", "action", "voters"
    )
    return [
        PARSE_FAILURE if voters == 0 else action
        for _, action, voters in sorted(rows, key=lambda row: order[row[0]])
    ]


def _voter_entries(
    debates: list[int], order: dict[int, int]
) -> dict[tuple[int, str, str], list[str]]:
    """Return each model voter's votes on its debates' primary coin (``PARSE_FAILURE``
    for an abstention), in the order of ``order``, by (AI model id, name, personality)."""
    entries: dict[tuple[int, str, str], list[tuple[int, str]]] = defaultdict(list)
    for debate_id, model_id, name, personality, action, abstained in Vote.objects.filter(
        debate_id__in=debates, symbol=F("debate__symbol"), participant__kind=SeatKind.MODEL
    ).values_list(
        "debate_id",
        "participant__ai_model_id",
        "participant__ai_model__name",
        "participant__personality",
        "action",
        "abstained",
    ):
        entry = PARSE_FAILURE if abstained else action
        entries[(model_id, name, personality)].append((order[debate_id], entry))
    return {voter: [entry for _, entry in sorted(found)] for voter, found in entries.items()}


def contamination(*, start: datetime, ai_model_ids: Iterable[int]) -> dict[str, Any]:
    """Say whether a window starting at ``start`` may be in the training data of any of
    ``ai_model_ids``: ``contaminated`` names each model whose training cutoff falls on
    or after the window's first day; ``cutoff_unknown`` each model, not simulated, with
    no cutoff set (its results may reflect memory too; nobody knows)."""
    contaminated, unknown = [], []
    for model in AIModel.objects.filter(pk__in=set(ai_model_ids)).order_by("name", "pk"):
        entry = {
            "ai_model": model.pk,
            "name": model.name,
            "model_name": model.model_name,
            "training_cutoff": model.training_cutoff.isoformat() if model.training_cutoff else None,
        }
        if model.training_cutoff is not None and start.date() <= model.training_cutoff:
            contaminated.append(entry)
        elif model.training_cutoff is None and model.provider != Provider.SIMULATED:
            unknown.append(entry)
    return {
        "contaminated": bool(contaminated),
        "models": contaminated,
        "cutoff_unknown": unknown,
    }
