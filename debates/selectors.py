"""Reads of debates and their children, each with a fixed number of queries."""

from __future__ import annotations

from typing import Any

from django.db.models import Prefetch, QuerySet
from django.utils import timezone
from django_eventstream import get_current_event_id

from arena.exceptions import NotFound
from arena.sse import debate_channel
from debates.models import (
    ACTIVE_STATUSES,
    Ballot,
    Debate,
    DebateStatus,
    Decision,
    Message,
    Participant,
    Vote,
)
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


def waiting_for_person(debate: Debate) -> str:
    """Return what ``debate`` waits for from the person, and until when ("" for nothing)."""
    if debate.human_due_at is None or debate.status not in ACTIVE_STATUSES:
        return ""
    what = "vote" if debate.status == DebateStatus.VOTING else f"turn, round {debate.current_round}"
    until = timezone.localtime(debate.human_due_at).strftime("%Y-%m-%d %H:%M %Z")
    return f"the person's {what}, until {until}"
