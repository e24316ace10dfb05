"""Model calls whose answers are dropped: what they used and cost stays in the spend.

A provider answers, and bills, a call even when its answer is no longer wanted: its
debate was cancelled, failed or ran past its budget while the call ran, or another copy
of the step stored its answer first. The service that drops the answer (a turn's, a
ballot's, a judge call's) keeps what the call used and cost, in the transaction that
decides to drop it: a ``DroppedCall`` of the debate, which the debate's and its owner's
spend count as they count a stored turn (``debates.selectors.spend_of``); or, when the
debate itself is gone, its owner's ``DeletedSpend`` of the day, as deleting the debate
a moment later would have kept it.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from django.contrib.auth import get_user_model

from debates.models import Debate, DeletedSpend, DroppedCall, Participant, Schedule, Usage

# The columns of a stored call that say what it used and cost.
USAGE_COLUMNS = tuple(field.name for field in Usage._meta.get_fields())


def dropped_call_record(
    *,
    fields: Mapping[str, Any],
    kind: str,
    reason: str,
    participant: Participant | None = None,
    debate: Debate | None = None,
    round_number: int | None = None,
) -> DroppedCall | None:
    """Keep what a call whose answer is dropped used and cost; return the row kept in
    the debate, or None when no call went out (a cache answer, a person's turn) or the
    debate is gone.

    ``fields`` are the stored columns of the answer, its usage among them. The call is
    a seat's (``participant``, its debate as the step read it) or a judge's
    (``debate``): the debate's id, owner and schedule are read from them.
    """
    usage = {name: fields[name] for name in USAGE_COLUMNS if name in fields}
    if usage.get("cached") or not usage.get("attempts"):
        return None
    debate = debate if debate is not None else participant.debate
    status = Debate.objects.filter(pk=debate.pk).values_list("status", flat=True).first()
    if status is None:
        _keep_as_deleted(debate, usage)
        return None
    return DroppedCall.objects.create(
        debate_id=debate.pk,
        participant=participant,
        kind=kind,
        round=round_number,
        reason=reason,
        debate_status=status,
        **usage,
    )


def _keep_as_deleted(debate: Debate, usage: dict[str, Any]) -> None:
    """Add a call of a deleted debate to its owner's (and schedule's) deleted spend."""
    if not get_user_model().objects.filter(pk=debate.owner_id).exists():
        return  # the owner is gone, and every spend of theirs with them
    schedule_id = debate.schedule_id
    if schedule_id is not None and not Schedule.objects.filter(pk=schedule_id).exists():
        schedule_id = None
    cost = usage.get("cost_usd") or Decimal(0)
    tokens = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
    DeletedSpend.objects.create(
        owner_id=debate.owner_id,
        schedule_id=schedule_id,
        day=datetime.now(UTC).date(),
        calls=1,
        attempts=usage["attempts"],
        prompt_tokens=usage.get("prompt_tokens", 0),
        completion_tokens=usage.get("completion_tokens", 0),
        cached_input_tokens=usage.get("cached_input_tokens", 0),
        estimated_tokens=tokens if usage.get("tokens_estimated") else 0,
        cost_usd=cost,
        dropped_calls=1,
        dropped_cost_usd=cost,
    )
