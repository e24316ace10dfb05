"""The human seat: the debate's owner writes a seat's turns and its vote.

A person's step is a step of the debate's plan that no task runs: when the plan
reaches it, the step waits (``user_action_required``) and the canvas of the run stops
there (``debates.services.runs``). In round 1 the person writes while the models write
their openings. A person's answer is checked by the contract a model's answer follows
(``debates.engine.human``) and, once accepted, stored by the very code that stores a
model's turn or ballot (``debates.services.steps``), which closes the round, moves the
debate on and sends the rest of the run; prompts, consensus and every representation
read it unchanged. Nothing of a refused answer is stored.

Each record is made under the debate's row lock, against the plan as it is then: the
step must still wait, and the unique constraints of turns and ballots keep it stored
once under any concurrency. Sending the same answer again returns what is stored (a
client may retry a request whose response it lost); a different answer for a step
already stored is refused. A step the person let pass is skipped, once: by the person
(``skip_turn``) or by the beat once ``human_due_at`` has passed.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.db import transaction
from django.utils import timezone

from arena.exceptions import InvalidState, NotFound, ValidationError
from debates.engine.human import HumanAnswerInvalid, read_human_answer
from debates.engine.plan import VOTING, WAITING, Step
from debates.engine.types import ParseResult
from debates.locks import lock_debate
from debates.models import (
    ACTIVE_STATUSES,
    Ballot,
    Debate,
    Message,
    ParseStatus,
    Participant,
    SeatKind,
    StepStatus,
)
from debates.selectors import debate_state
from debates.services import transitions
from debates.services.steps import ballot_record, turn_record
from debates.state import debate_plan

logger = logging.getLogger(__name__)

SKIPPED_TURN = {"code": "skipped", "message": "The person did not write this turn."}
SKIPPED_VOTE = "the person did not vote"
LEFT_OUT = "the person's vote left this coin out"


@dataclass(frozen=True)
class TurnRecorded:
    """The person's stored turn; ``created``: stored by this call, not an earlier one."""

    message: Message
    created: bool


@dataclass(frozen=True)
class VoteRecorded:
    """The person's stored ballot; ``created``: stored by this call, not an earlier one."""

    ballot: Ballot
    created: bool


@dataclass(frozen=True)
class _Waiting:
    """A debate locked for a person's step: its state, seats, and the step that waits."""

    debate: Debate
    seats: tuple[Participant, ...]
    seat: Participant
    step: Step | None


def _owned(debate_id: int, owner: Any | None) -> None:
    """Refuse with ``not_found`` unless the debate exists and is ``owner``'s (None: any)."""
    debates = Debate.objects.filter(pk=debate_id)
    if owner is not None:
        debates = debates.filter(owner=owner)
    if not debates.exists():
        raise NotFound("Debate not found.")


def _waiting(debate_id: int) -> _Waiting:
    """Lock the debate and return the person's step that waits now, if any.

    Refuse with ``invalid_state`` when the debate has no human seat. Call inside
    ``transaction.atomic()``.
    """
    if lock_debate(debate_id=debate_id) is None:
        raise NotFound("Debate not found.")
    state = debate_state(debate_id=debate_id)
    seats = tuple(Participant.objects.filter(debate_id=debate_id).order_by("speak_order"))
    seat = next((seat for seat in seats if seat.kind == SeatKind.HUMAN), None)
    if seat is None:
        raise InvalidState("This debate has no human seat.", fields={"participants": ["none"]})
    plan = debate_plan(state)
    step = next((s for s in plan.steps if s.status == WAITING and s.speaker == seat.pk), None)
    return _Waiting(state, seats, seat, step)


def _checked(answer: Any, debate: Debate, *, turn: bool) -> ParseResult:
    try:
        return read_human_answer(answer, debate.symbols, turn=turn)
    except HumanAnswerInvalid as exc:
        raise ValidationError(fields=exc.fields) from exc


def _content(answer: Any) -> str:
    """Return the person's answer as a turn's raw text: the contract's JSON form."""
    return json.dumps(answer, ensure_ascii=False, sort_keys=True)


def _same(stored: Message | Ballot, answer: Any) -> bool:
    """Say whether ``stored`` is the person's ``answer``, sent before."""
    return stored.status == StepStatus.OK and stored.content == _content(answer)


def _not_waiting(debate: Debate, what: str, step: Step | None) -> InvalidState:
    instead = ""
    if step is not None:
        instead = " It waits for your vote." if step.kind == VOTING else " It waits for a turn."
    return InvalidState(
        f"The debate is not waiting for your {what}: it is {debate.status}, "
        f"round {debate.current_round}.{instead}",
        fields={"status": [debate.status]},
    )


def human_turn_record(*, debate_id: int, owner: Any, answer: Any) -> TurnRecorded:
    """Store the person's turn of the round the debate waits for, and go on.

    Refuse with ``invalid_state`` when the debate waits for no turn from the person, and
    with ``validation_error`` naming each bad field when the answer breaks the contract.
    """
    _owned(debate_id, owner)
    with transaction.atomic():
        now = _waiting(debate_id)
        if now.step is None or now.step.kind == VOTING:
            turns = Message.objects.filter(debate_id=debate_id, participant=now.seat)
            last = turns.order_by("-round").first()
            if last is not None and _same(last, answer):
                return TurnRecorded(last, created=False)
            raise _not_waiting(now.debate, "turn", now.step)
        parsed = _checked(answer, now.debate, turn=True)
        message = turn_record(
            debate_id=debate_id,
            participant=now.seat,
            round_number=now.step.round,
            fields={
                "status": StepStatus.OK,
                "content": _content(answer),
                "reasoning": parsed.reasoning,
                "decisions": [decision.to_dict() for decision in parsed.decisions],
                "parse_status": ParseStatus.OK,
            },
            seats=now.seats,
        )
    assert message is not None, "a waiting turn is stored under the lock"
    return TurnRecorded(message, created=True)


def human_vote_record(*, debate_id: int, owner: Any, answer: Any) -> VoteRecorded:
    """Store the person's ballot, one vote per candidate coin (an abstention on each
    coin the answer leaves out), and go on.

    Refuse with ``invalid_state`` when the debate waits for no vote from the person, and
    with ``validation_error`` naming each bad field when the answer breaks the contract.
    """
    _owned(debate_id, owner)
    with transaction.atomic():
        now = _waiting(debate_id)
        if now.step is None or now.step.kind != VOTING:
            stored = Ballot.objects.filter(debate_id=debate_id, participant=now.seat).first()
            if stored is not None and _same(stored, answer):
                return VoteRecorded(stored, created=False)
            raise _not_waiting(now.debate, "vote", now.step)
        parsed = _checked(answer, now.debate, turn=False)
        ballot = ballot_record(
            debate_id=debate_id,
            participant=now.seat,
            fields={
                "status": StepStatus.OK,
                "content": _content(answer),
                "parse_status": ParseStatus.OK,
            },
            decisions={decision.symbol: decision for decision in parsed.decisions},
            why_not=LEFT_OUT,
            symbols=tuple(now.debate.symbols),
            seats=now.seats,
        )
    assert ballot is not None, "a waiting vote is stored under the lock"
    return VoteRecorded(ballot, created=True)


def human_step_skip(*, debate_id: int, owner: Any | None = None) -> Message | Ballot | None:
    """Skip the person's step that waits (a turn, or the vote), and go on.

    A skipped turn is stored as such (no decisions), a skipped vote as an abstention on
    every coin. Return what was stored, or None when no step of the person waits (it was
    stored, or the debate moved on or stopped): of many callers, exactly one skips it.
    ``owner``: the person skipping it themselves (refused with ``invalid_state`` when
    nothing waits); None: the beat, once its time ran out.
    """
    if owner is not None:
        _owned(debate_id, owner)
    with transaction.atomic():
        now = _waiting(debate_id)
        if now.step is None:
            if owner is not None:
                raise _not_waiting(now.debate, "turn or vote", None)
            return None
        if now.step.kind == VOTING:
            stored: Message | Ballot | None = ballot_record(
                debate_id=debate_id,
                participant=now.seat,
                fields={
                    "status": StepStatus.SKIPPED,
                    "parse_status": ParseStatus.NONE,
                    "error": {"code": "skipped", "message": "The person did not vote."},
                },
                decisions={},
                why_not=SKIPPED_VOTE,
                symbols=tuple(now.debate.symbols),
                seats=now.seats,
            )
        else:
            stored = turn_record(
                debate_id=debate_id,
                participant=now.seat,
                round_number=now.step.round,
                fields={
                    "status": StepStatus.SKIPPED,
                    "parse_status": ParseStatus.NONE,
                    "error": SKIPPED_TURN,
                },
                seats=now.seats,
            )
        logger.info("debate %s: the person's %s skipped", debate_id, now.step.kind)
    return stored


def human_due_skip(*, debate_id: int, now: datetime | None = None) -> bool:
    """Skip the turn or vote the person owes ``debate_id`` if its time ran out by ``now``.

    Clearing the deadline is the compare-and-set that claims the skip, so however many
    beat processes or workers call this at once, the step is skipped once. Return
    whether this call skipped it.
    """
    now = now or timezone.now()
    with transaction.atomic():
        claimed = transitions.person_due_claimed(debate_id=debate_id, now=now)
        return claimed and human_step_skip(debate_id=debate_id) is not None


def human_steps_expire(*, now: datetime | None = None) -> list[int]:
    """Skip every turn or vote a person owes whose time ran out; return their debates."""
    now = now or timezone.now()
    due = Debate.objects.filter(status__in=ACTIVE_STATUSES, human_due_at__lte=now)
    return [
        debate_id
        for debate_id in due.order_by("human_due_at").values_list("pk", flat=True)
        if human_due_skip(debate_id=debate_id, now=now)
    ]
