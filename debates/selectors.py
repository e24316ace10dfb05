"""Reads of debates and their children, each with a fixed number of queries."""

from __future__ import annotations

from dataclasses import dataclass, fields
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

from django.apps import apps
from django.db.models import Count, Prefetch, Q, QuerySet, Sum
from django.db.models.functions import TruncDate
from django_eventstream import get_current_event_id

from arena.exceptions import NotFound
from arena.sse import debate_channel
from debates.models import (
    Ballot,
    Debate,
    Decision,
    Message,
    Participant,
    Schedule,
    Usage,
    Vote,
)
from debates.providers.pricing import usd_text
from debates.state import STATE_COLUMNS

# What the plan of steps reads of a debate's turns and ballots (``debates.state``).
_STEP_RECORDS = (
    Prefetch("participants", queryset=Participant.objects.order_by("speak_order")),
    Prefetch(
        "messages",
        queryset=Message.objects.order_by().only(
            "id", "debate_id", "round", "participant_id", "status"
        ),
    ),
    Prefetch(
        "ballots",
        queryset=Ballot.objects.order_by().only("id", "debate_id", "participant_id", "status"),
    ),
    Prefetch("decisions", queryset=Decision.objects.select_related("execution")),
)


def debate_state(*, debate_id: int) -> Debate:
    """Return a debate's state columns with what its plan and actions read, prefetched
    (a ``status`` event's payload); five short queries."""
    return Debate.objects.only(*STATE_COLUMNS).prefetch_related(*_STEP_RECORDS).get(pk=debate_id)


def debate_list(*, owner: Any, status: str | None = None) -> QuerySet[Debate]:
    """Return the owner's debates, newest first, optionally of one status."""
    queryset = Debate.objects.filter(owner=owner).prefetch_related(*_STEP_RECORDS)
    if status:
        queryset = queryset.filter(status=status)
    return queryset.order_by("-created_at", "-id")


def debate_detail_queryset() -> QuerySet[Debate]:
    """Return debates with everything the detail representation reads, prefetched."""
    return Debate.objects.select_related("strategy").prefetch_related(
        Prefetch(
            "participants",
            queryset=Participant.objects.select_related("ai_model").order_by("speak_order"),
        ),
        Prefetch(
            "messages",
            queryset=Message.objects.order_by("round", "participant__speak_order"),
        ),
        Prefetch("votes", queryset=Vote.objects.order_by("participant__speak_order", "symbol")),
        Prefetch(
            "ballots",
            queryset=Ballot.objects.order_by().only("id", "debate_id", "participant_id", "status"),
        ),
        Prefetch(
            "decisions",
            queryset=Decision.objects.select_related("execution", "execution__decision").order_by(
                "-is_primary", "symbol"
            ),
        ),
    )


def debate_get(*, debate_id: int, owner: Any | None = None) -> Debate:
    """Return one debate with its children; another user's debate is not found."""
    queryset = debate_detail_queryset()
    if owner is not None:
        queryset = queryset.filter(owner=owner)
    try:
        return queryset.get(pk=debate_id)
    except Debate.DoesNotExist as exc:
        raise NotFound("Debate not found.") from exc


def debate_event_id(*, debate_id: int) -> str:
    """Return the id of the latest stored event of a debate's stream."""
    return get_current_event_id([debate_channel(debate_id)])


def debate_representation(*, debate_id: int, owner: Any | None = None) -> dict[str, Any]:
    """Return the detail representation (REST, the ``initial`` event, ``run_debate``)."""
    from debates.serializers import DebateDetailSerializer

    # The event id is read before the debate: a client resuming from it can only see an
    # event twice (and drops it by id), never miss one published between the two reads.
    event_id = debate_event_id(debate_id=debate_id)
    debate = debate_get(debate_id=debate_id, owner=owner)
    return DebateDetailSerializer(debate, context={"event_id": event_id}).data


@dataclass(frozen=True)
class Spend:
    """What a set of stored model calls (turns, ballots, judge calls) used and cost.

    ``calls`` went to a model; ``cached_calls`` were answered from the model-call cache
    (no tokens, no cost). ``cached_input_tokens`` is the part of ``prompt_tokens`` the
    providers' prompt caches served.
    """

    calls: int = 0
    cached_calls: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_input_tokens: int = 0
    cost_usd: Decimal = Decimal(0)

    @property
    def tokens(self) -> int:
        """Return prompt plus completion tokens, what budgets count."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Spend) -> Spend:
        return Spend(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(Spend)))

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form: every figure, ``tokens``, and the cost as a string."""
        data = {f.name: getattr(self, f.name) for f in fields(Spend)}
        return {**data, "tokens": self.tokens, "cost_usd": usd_text(self.cost_usd)}


_SPEND_SUMS = {
    "calls": Count("pk", filter=Q(cached=False)),
    "cached_calls": Count("pk", filter=Q(cached=True)),
    **{name: Sum(name) for name in ("attempts", "prompt_tokens", "completion_tokens")},
    "cached_input_tokens": Sum("cached_input_tokens"),
    "cost_usd": Sum("cost_usd"),
}


def call_models() -> list[type[Usage]]:
    """Return every model whose rows are stored model calls (each a ``Usage``)."""
    return [m for m in apps.get_models() if issubclass(m, Usage)]


def _spend(found: dict[str, Any]) -> Spend:
    return Spend(
        **{name: found[name] or 0 for name in _SPEND_SUMS if name != "cost_usd"},
        cost_usd=found["cost_usd"] or Decimal(0),
    )


def spend_of(**lookups: Any) -> Spend:
    """Return the spend of the stored calls matching ``lookups`` (``debate__owner=...``)."""
    total = Spend()
    for model in call_models():
        total += _spend(model.objects.filter(**lookups).aggregate(**_SPEND_SUMS))
    return total


def spend_by_day(*, days: int, today: date | None = None, **lookups: Any) -> list[dict[str, Any]]:
    """Return the spend of each of the last ``days`` UTC days, oldest first, of the stored
    calls matching ``lookups``; a day without calls has zeros."""
    today = today or datetime.now(UTC).date()
    first = today - timedelta(days=days - 1)
    since = datetime.combine(first, datetime.min.time(), tzinfo=UTC)
    per_day = {first + timedelta(days=n): Spend() for n in range(days)}
    for model in call_models():
        rows = (
            model.objects.filter(created_at__gte=since, **lookups)
            .annotate(day=TruncDate("created_at", tzinfo=UTC))
            .values("day")
            .annotate(**_SPEND_SUMS)
        )
        for row in rows:
            if row["day"] in per_day:
                per_day[row["day"]] += _spend(row)
    return [{"day": day.isoformat(), **spend.to_dict()} for day, spend in per_day.items()]


def debate_spend(*, debate_id: int) -> Spend:
    """Return what one debate's calls used and cost."""
    return spend_of(debate_id=debate_id)


RUN_LEVELS = ("L1", "L2")


def schedules_with_runs(*, owner: Any) -> QuerySet[Schedule]:
    """Return the owner's schedules, each with ``runs_L1`` and ``runs_L2``: how many of
    its debates ran at each level (a skip at L0 is in its ``skips_by_reason``)."""
    return Schedule.objects.filter(owner=owner).annotate(
        **{
            f"runs_{level}": Count("debates", filter=Q(debates__level_used=level))
            for level in RUN_LEVELS
        }
    )
