"""The human seat: the debate's owner writes a seat's turns and its vote.

A person's answer is checked by the contract a model's answer follows
(``debates.engine.human``) and, once accepted, stored exactly as a model's turn or
ballot is, so prompts, consensus and every representation read it unchanged. Nothing
of a refused answer is stored.

Each record is a compare-and-set under the debate's row lock: the debate must still
wait for this answer (the right status, round and speaker) and the answer must not be
stored yet, which the unique constraints of turns and ballots guarantee under any
concurrency. Sending the same answer again returns what is stored (a client may retry a
request whose response it lost); a different answer for a step already stored is
refused. A step the person let pass is recorded as skipped, once.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from arena.exceptions import InvalidState, NotFound, ValidationError
from debates import events
from debates.engine.human import HumanAnswerInvalid, read_human_answer
from debates.engine.types import ParseResult
from debates.models import (
    Ballot,
    Debate,
    DebateStatus,
    Message,
    MessageType,
    ParseStatus,
    Participant,
    SeatKind,
    StepStatus,
    Vote,
)
from debates.services.steps import vote_row

logger = logging.getLogger(__name__)

SKIPPED_TURN = {"code": "skipped", "message": "The person did not write this turn in time."}
SKIPPED_VOTE = "the person did not vote in time"
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


def human_seat(debate: Debate) -> Participant | None:
    """Return the debate's human seat, or None when every seat is a model's."""
    return Participant.objects.filter(debate=debate, kind=SeatKind.HUMAN).first()


def human_turn_due(debate: Debate, seat: Participant) -> int | None:
    """Return the round whose turn the debate waits for from the person, or None.

    In round 1 the openings are written at the same time, so the person's opening is
    due as soon as the debate runs; in rounds 2..N the turns follow one another, so it
    is due when the seat is the current speaker. ``debate`` holds its state fields.
    """
    if debate.status != DebateStatus.RUNNING:
        return None
    if debate.current_round == 1 or debate.current_speaker_id == seat.pk:
        return debate.current_round
    return None


def _owned(debate_id: int, owner: Any) -> tuple[Debate, Participant]:
    debate = Debate.objects.filter(pk=debate_id, owner=owner).first()
    if debate is None:
        raise NotFound("Debate not found.")
    seat = human_seat(debate)
    if seat is None:
        raise InvalidState("This debate has no human seat.", fields={"participants": ["none"]})
    return debate, seat


def _lock(debate_id: int) -> Debate | None:
    """Lock the debate's row for the transaction and return its current state, or None
    when it is gone."""
    return Debate.objects.select_for_update().filter(pk=debate_id).first()


def _checked(answer: Any, debate: Debate, *, turn: bool) -> ParseResult:
    try:
        return read_human_answer(answer, debate.symbols, turn=turn)
    except HumanAnswerInvalid as exc:
        raise ValidationError(fields=exc.fields) from exc


def _content(answer: Any) -> str:
    """Return the person's answer as a turn's raw text: the contract's JSON form."""
    return json.dumps(answer, ensure_ascii=False, sort_keys=True)


def _not_waiting(debate: Debate, what: str) -> InvalidState:
    return InvalidState(
        f"The debate is not waiting for your {what}: it is {debate.status}, "
        f"round {debate.current_round}.",
        fields={"status": [debate.status]},
    )


def human_turn_record(*, debate_id: int, owner: Any, answer: Any) -> TurnRecorded:
    """Store the person's turn of the round the debate waits for.

    Refuse with ``invalid_state`` when the debate waits for no turn from the person, and
    with ``validation_error`` naming each bad field when the answer breaks the contract.
    """
    _, seat = _owned(debate_id, owner)
    with transaction.atomic():
        locked = _lock(debate_id)
        if locked is None:
            raise NotFound("Debate not found.")
        round_number = human_turn_due(locked, seat)
        stored = Message.objects.filter(
            debate_id=debate_id, participant=seat, round=locked.current_round
        ).first()
        if stored is not None:
            if stored.status == StepStatus.OK and stored.content == _content(answer):
                return TurnRecorded(stored, created=False)
            raise InvalidState(
                f"Your turn of round {stored.round} is already recorded ({stored.status}).",
                fields={"round": [str(stored.round)]},
            )
        if round_number is None:
            raise _not_waiting(locked, "turn")
        parsed = _checked(answer, locked, turn=True)
        message = _store_turn(
            locked,
            seat,
            round_number,
            status=StepStatus.OK,
            content=_content(answer),
            reasoning=parsed.reasoning,
            decisions=[decision.to_dict() for decision in parsed.decisions],
            parse_status=ParseStatus.OK,
        )
    return TurnRecorded(message, created=True)


def _store_turn(debate: Debate, seat: Participant, round_number: int, **fields: Any) -> Message:
    """Store the person's turn of a round and announce it; the debate's row is locked."""
    message = Message.objects.create(
        debate=debate,
        participant=seat,
        round=round_number,
        message_type=MessageType.ANALYSIS if round_number == 1 else MessageType.REBUTTAL,
        **fields,
    )
    events.message_stored(message)
    return message


def human_turn_skip(*, debate_id: int, round_number: int) -> Message | None:
    """Record the person's turn of ``round_number`` as skipped, if it is still due.

    Return the skipped turn, or None when the turn is not due (stored, or the debate
    moved on or stopped): of many callers, exactly one records it.
    """
    with transaction.atomic():
        locked = _lock(debate_id)
        seat = human_seat(locked) if locked is not None else None
        if seat is None or human_turn_due(locked, seat) != round_number:
            return None
        if Message.objects.filter(debate=locked, participant=seat, round=round_number).exists():
            return None
        message = _store_turn(
            locked,
            seat,
            round_number,
            status=StepStatus.SKIPPED,
            parse_status=ParseStatus.NONE,
            error=SKIPPED_TURN,
        )
        logger.info("debate %s: the person's turn of round %s skipped", debate_id, round_number)
    return message


def human_vote_record(*, debate_id: int, owner: Any, answer: Any) -> VoteRecorded:
    """Store the person's ballot, one vote per candidate coin (an abstention on each
    coin the answer does not decide).

    Refuse with ``invalid_state`` when the debate is not voting, and with
    ``validation_error`` naming each bad field when the answer breaks the contract.
    """
    _, seat = _owned(debate_id, owner)
    with transaction.atomic():
        locked = _lock(debate_id)
        if locked is None:
            raise NotFound("Debate not found.")
        stored = Ballot.objects.filter(debate_id=debate_id, participant=seat).first()
        if stored is not None:
            if stored.status == StepStatus.OK and stored.content == _content(answer):
                return VoteRecorded(stored, created=False)
            raise InvalidState(
                f"Your vote is already recorded ({stored.status}).",
                fields={"status": [locked.status]},
            )
        if locked.status != DebateStatus.VOTING:
            raise _not_waiting(locked, "vote")
        parsed = _checked(answer, locked, turn=False)
        ballot = Ballot.objects.create(
            debate=locked,
            participant=seat,
            status=StepStatus.OK,
            content=_content(answer),
            parse_status=ParseStatus.OK,
        )
        decided = {decision.symbol: decision for decision in parsed.decisions}
        votes = Vote.objects.bulk_create(
            vote_row(ballot, symbol, decided.get(symbol), LEFT_OUT) for symbol in locked.symbols
        )
        with events.together(debate_id):
            for vote in votes:
                events.vote_stored(vote)
    return VoteRecorded(ballot, created=True)


def human_vote_skip(*, debate_id: int) -> Ballot | None:
    """Record the person's ballot as skipped (an abstention on every coin), if it is
    still due; return it, or None when it is not (of many callers, exactly one)."""
    with transaction.atomic():
        locked = _lock(debate_id)
        seat = human_seat(locked) if locked is not None else None
        if seat is None or locked.status != DebateStatus.VOTING:
            return None
        if Ballot.objects.filter(debate=locked, participant=seat).exists():
            return None
        ballot = Ballot.objects.create(
            debate=locked,
            participant=seat,
            status=StepStatus.SKIPPED,
            parse_status=ParseStatus.NONE,
            error={"code": "skipped", "message": f"{SKIPPED_VOTE[0].upper()}{SKIPPED_VOTE[1:]}."},
        )
        votes = Vote.objects.bulk_create(
            vote_row(ballot, symbol, None, SKIPPED_VOTE) for symbol in locked.symbols
        )
        logger.info("debate %s: the person's vote skipped", debate_id)
        with events.together(debate_id):
            for vote in votes:
                events.vote_stored(vote)
    return ballot
