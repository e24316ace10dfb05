"""Payloads of a debate's live events (SPEC 7), published through ``arena.sse``.

Only services call these functions, inside the transaction that made the change; the
event goes out when it commits. Payloads reuse the REST representations.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import Any

from arena.sse import (
    channel_touch_on_commit,
    debate_channel,
    open_channel,
    publish_all_on_commit,
    publish_on_commit,
)
from debates.engine.plan import Plan
from debates.models import (
    Debate,
    Decision,
    JudgeCall,
    JudgeScore,
    Message,
    Vote,
)
from debates.serializers import (
    DecisionSerializer,
    JudgeCallSerializer,
    JudgeScoreSerializer,
    MadeDecisionSerializer,
    MessageSerializer,
    PlannedDebate,
    RoundSummarySerializer,
    StateSerializer,
    VoteSerializer,
)
from debates.state import DecisionFacts

# One serializer of each kind, reused for every event: a serializer builds its fields
# once, and representing an object with them changes no state.
_STATE = StateSerializer()
_MESSAGE = MessageSerializer()
_VOTE = VoteSerializer()
_DECISION = DecisionSerializer()
_MADE_DECISION = MadeDecisionSerializer()
_JUDGE_CALL = JudgeCallSerializer()
_JUDGE_SCORE = JudgeScoreSerializer()
_SUMMARY = RoundSummarySerializer()

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
    "judge_call",
    "judge_scores",
)


# The events a ``together`` block of one debate has announced so far.
_batch: ContextVar[tuple[int, list[tuple[str, dict[str, Any]]]] | None] = ContextVar(
    "debate_events_batch", default=None
)


@contextlib.contextmanager
def together(debate_id: int) -> Iterator[None]:
    """Publish the events of debate ``debate_id`` announced in the block as one append.

    They are stored in order, with one statement, when the block ends (inside the
    transaction that made the changes they announce), instead of one statement each. A
    block inside another of the same debate joins it; a block that raises publishes
    nothing.
    """
    current = _batch.get()
    if current is not None and current[0] == debate_id:
        yield
        return
    items: list[tuple[str, dict[str, Any]]] = []
    token = _batch.set((debate_id, items))
    try:
        yield
    finally:
        _batch.reset(token)
    if items:
        publish_all_on_commit(debate_channel(debate_id), items)


def stream_opened(debate_id: int) -> None:
    """Open a new debate's stream, so that starting it publishes with one statement."""
    open_channel(debate_channel(debate_id))


def debate_deleted(debate_id: int) -> None:
    """Change the debate's stream version on commit, though no event announces the
    deletion: what was stored under the version (its detail) is served no more."""
    channel_touch_on_commit(debate_channel(debate_id))


def _publish(debate_id: int, event_type: str, data: dict[str, Any]) -> None:
    batch = _batch.get()
    if batch is not None and batch[0] == debate_id:
        batch[1].append((event_type, data))
    else:
        publish_on_commit(debate_channel(debate_id), event_type, data)


def status_changed(
    debate: Debate, plan: Plan | None = None, decisions: Iterable[DecisionFacts] | None = None
) -> None:
    """Announce the debate's state fields with its plan of steps (computed from the
    debate unless given) and the actions it allows (from its ``decisions`` when given,
    see ``debates.state.available_actions``)."""
    data = dict(_STATE.to_representation(PlannedDebate(debate, plan, decisions)))
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


def consensus_reached(
    debate_id: int, decisions: Iterable[Decision], *, made_now: bool = False
) -> None:
    """Announce every per-coin decision, the primary one first; ``made_now``: the
    consensus has just stored them, so none has an execution to read."""
    ordered = sorted(decisions, key=lambda d: (not d.is_primary, d.symbol))
    serializer = _MADE_DECISION if made_now else _DECISION
    _publish(
        debate_id,
        "consensus",
        {"decisions": [dict(serializer.to_representation(d)) for d in ordered]},
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


def judge_call_stored(call: JudgeCall) -> None:
    """Announce a stored judge call (a failed one too) and, for a round summary's call,
    the summary as the detail's ``judge.summaries`` shows it (else null)."""
    summary = dict(_SUMMARY.to_representation(call)) if call.kind == "round_summary" else None
    data = {"call": dict(_JUDGE_CALL.to_representation(call)), "summary": summary}
    _publish(call.debate_id, "judge_call", data)


def judge_scores_stored(debate_id: int, scores: Iterable[JudgeScore]) -> None:
    """Announce the judge's final score of every participant (missing ones too)."""
    _publish(
        debate_id,
        "judge_scores",
        {"scores": [dict(_JUDGE_SCORE.to_representation(score)) for score in scores]},
    )
