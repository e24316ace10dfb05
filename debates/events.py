"""Payloads of a debate's live events (SPEC 7), published through ``arena.sse``.

Only services call these functions, inside the transaction that made the change; the
event goes out when it commits. Payloads reuse the REST representations.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from arena.sse import debate_channel, publish_on_commit
from debates.models import Debate, Decision, Message, Vote
from debates.serializers import (
    DecisionSerializer,
    MessageSerializer,
    StateSerializer,
    VoteSerializer,
)

# One serializer of each kind, reused for every event: building a serializer's fields
# costs about forty times what representing an object with them does (a turn's
# ``message`` event, 0.8 ms against 0.02 ms), and representing changes no state.
_STATE = StateSerializer()
_MESSAGE = MessageSerializer()
_VOTE = VoteSerializer()
_DECISION = DecisionSerializer()

EVENT_TYPES = (
    "initial",
    "status",
    "round_start",
    "round_end",
    "message",
    "vote",
    "consensus",
    "execution",
    "error",
)


def _publish(debate_id: int, event_type: str, data: dict[str, Any]) -> None:
    publish_on_commit(debate_channel(debate_id), event_type, data)


def status_changed(debate: Debate) -> None:
    """Announce the debate's state fields."""
    data = dict(_STATE.to_representation(debate))
    if not data.get("error"):
        data.pop("error", None)
    _publish(debate.pk, "status", data)


def round_started(debate_id: int, round_number: int) -> None:
    """Announce that a round began."""
    _publish(debate_id, "round_start", {"round": round_number})


def round_ended(debate_id: int, round_number: int) -> None:
    """Announce that every turn of a round is stored."""
    _publish(debate_id, "round_end", {"round": round_number})


def message_stored(message: Message) -> None:
    """Announce a stored turn (a failed one too)."""
    _publish(message.debate_id, "message", dict(_MESSAGE.to_representation(message)))


def vote_stored(vote: Vote) -> None:
    """Announce a stored vote (an abstention too)."""
    _publish(vote.debate_id, "vote", dict(_VOTE.to_representation(vote)))


def consensus_reached(debate_id: int, decisions: Iterable[Decision]) -> None:
    """Announce every per-coin decision, the primary one first."""
    ordered = sorted(decisions, key=lambda d: (not d.is_primary, d.symbol))
    _publish(
        debate_id,
        "consensus",
        {"decisions": [dict(_DECISION.to_representation(d)) for d in ordered]},
    )


def step_failed(
    debate_id: int, *, step: str, code: str, message: str, participant: int | None = None
) -> None:
    """Announce a failed step; ``message`` must already be free of secrets."""
    data: dict[str, Any] = {"step": step, "code": code, "message": message}
    if participant is not None:
        data["participant"] = participant
    _publish(debate_id, "error", data)


def execution_changed(debate_id: int, execution_data: dict[str, Any]) -> None:
    """Announce an execution's new state (the REST representation of the execution)."""
    _publish(debate_id, "execution", execution_data)
