"""One participant's turn in a round: asked of its model, or written by a person, and
recorded with where the debate goes next.

A stored turn is never asked again, and a turn of a debate that is no longer running
does nothing. A model failure is stored as a failed turn and the debate goes on; only
the rules of SPEC 5.2 (``debates.engine.machine``) fail a debate.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction

from debates import events
from debates.engine import machine
from debates.engine.plan import OPENING, REBUTTAL
from debates.engine.prompts import TurnContext, build_turn_prompt
from debates.locks import lock_debate
from debates.models import (
    DebateStatus,
    DropReason,
    Message,
    MessageType,
    Participant,
    StepStatus,
)
from debates.providers.base import ModelRequest
from debates.services import transitions
from debates.services.dropped import dropped_call_record
from debates.services.judge import round_summary_text
from debates.services.levels import RoundClose, round_close
from debates.services.runs import run_enqueue
from debates.services.steps import context

logger = logging.getLogger(__name__)


def turn_ask(
    *, debate_id: int, round_number: int, participant_id: int, cached_only: bool
) -> Message | None:
    """Ask a participant's model for its turn in a round, and store what it said; return
    the stored turn, or None when none was stored here.

    ``cached_only``: only the model-call cache may answer (``call_model``).
    """
    kind = OPENING if round_number == 1 else REBUTTAL
    now = context.step_context(
        debate_id, participant_id, DebateStatus.RUNNING, (kind, round_number, participant_id)
    )
    if now is None or now.has_said(round_number):
        return None  # the debate stopped, or the turn is stored: never asked twice
    outcome = now.ask(turn_request(now, round_number), cached_only=cached_only)
    if outcome is None:
        return None
    fields, parsed = context.answer_fields(outcome, now.cast.symbols)
    if parsed is not None:
        fields.update(reasoning=parsed.reasoning, decisions=[d.to_dict() for d in parsed.decisions])
    with transaction.atomic():
        return turn_record(
            debate_id=debate_id,
            participant=now.participant,
            round_number=round_number,
            fields=fields,
            seats=now.cast.seats,
        )


def _dropped(
    participant: Participant, round_number: int, fields: dict[str, Any], reason: str
) -> None:
    """Keep what the call of a turn that is not stored used and cost."""
    dropped_call_record(
        fields=fields,
        kind="turn",
        reason=reason,
        participant=participant,
        round_number=round_number,
    )


def turn_request(
    now: context.StepContext, round_number: int, *, book: str = "", sample: int = 0
) -> ModelRequest:
    """Return the request of a participant's turn in a round, as ``now`` reads it.

    ``book`` and ``sample`` are a backtest baseline's: its answers are openings that see
    the trader's book, numbered from 1 (``ModelRequest.sample``); a debate's turns have
    neither."""
    cast, participant = now.cast, now.participant
    said = context.history(now.spoken, (round_number, participant.speak_order))
    summary = ""
    if cast.judged and round_number > 1:
        summary = round_summary_text(debate_id=cast.debate_id, round_number=round_number - 1)
    prompt_input = TurnContext(
        round=round_number,
        max_rounds=cast.max_rounds,
        personality=participant.personality,
        variant=cast.prompt_variant,
        symbols=cast.symbols,
        market_text=cast.market_text,
        strategy_role=now.strategy_role,
        custom_prompt=now.custom_prompt,
        history=tuple(said),
        participant=context.label(participant),
        output_mode=now.config.output_mode,
        summary=summary,
        positions=tuple(context.latest(said).values()) if summary else (),
        market_summary=cast.market_summary if summary else "",
        book=book,
    )
    prompt = build_turn_prompt(prompt_input)
    return ModelRequest(
        system=prompt.system,
        user=prompt.user,
        kind="turn",
        personality=participant.personality,
        round=round_number,
        max_rounds=cast.max_rounds,
        symbols=cast.symbols,
        snapshot=cast.snapshot,
        prior_actions=context.prior_actions(said, participant),
        participant=context.label(participant),
        positions=context.positions(said),
        seed=cast.debate_id * 100 + participant.speak_order,
        sample=sample,
    )


def turn_record(
    *,
    debate_id: int,
    participant: Participant,
    round_number: int,
    fields: dict[str, Any],
    seats: tuple[Participant, ...],
) -> Message | None:
    """Store a turn (a model's or a person's) and move the debate on (``machine``):
    the next speaker, the next round, the votes, or a failure; return the turn, or None
    when it was not stored (the debate stopped, or another copy stored it first). Call
    inside ``transaction.atomic()``.

    Every turn is stored under the debate's row lock, so what the round holds is read
    exactly. A turn that ends a stage of the plan holding a person's step sends the rest
    of the run: the canvas stopped there, since no task runs a person's step.
    """
    locked = lock_debate(debate_id=debate_id)
    if locked is None or locked.status != DebateStatus.RUNNING:
        state = "gone" if locked is None else locked.status
        logger.info("debate %s is %s: turn result dropped", debate_id, state)
        _dropped(participant, round_number, fields, DropReason.STOPPED)
        return None
    stored = _stored_turns(locked.pk)
    if (round_number, participant.pk) in {(r, p) for r, p, _, _ in stored}:
        _dropped(participant, round_number, fields, DropReason.DUPLICATE)
        return None  # another copy stored this turn first
    message = Message.objects.create(
        debate_id=locked.pk,
        participant=participant,
        round=round_number,
        message_type=MessageType.ANALYSIS if round_number == 1 else MessageType.REBUTTAL,
        **fields,
    )
    stored.append((round_number, participant.pk, message.status, message.decisions))
    facts = machine.Rounds(
        status=locked.status,
        current_round=locked.current_round,
        max_rounds=locked.max_rounds,
        seats=tuple(seat.pk for seat in seats),
        turns=tuple((r, p, status) for r, p, status, _ in stored),
    )
    with events.together(locked.pk):
        _announce(message)
        closing = _round_close(locked.pk, facts, round_number, seats, stored)
        state = machine.after_turn(facts, round_number, votes_now=closing.votes_now)
        transitions.turn_taken(
            debate=locked,
            round_number=round_number,
            state=state,
            seats=seats,
            turns=facts.turns,
            recorded=closing.fields,
        )
    if _ends_a_persons_stage(facts, message, seats):
        run_enqueue(debate_id=locked.pk)
    return message


def _stored_turns(debate_id: int) -> list[tuple[int, int, str, list]]:
    """Return every stored turn of a debate as (round, participant id, status, decisions).

    Read once the debate's lock is held, in a statement of its own: a statement that
    took the lock and read the turns together would see the turns as they were before
    it waited for the lock, and miss those stored by the transaction it waited for.
    """
    turns = Message.objects.filter(debate_id=debate_id).order_by()
    return list(turns.values_list("round", "participant_id", "status", "decisions"))


def _announce(message: Message) -> None:
    """Announce a stored turn, and its failure for a turn whose model call failed."""
    events.message_stored(message)
    if message.status == StepStatus.ERROR:
        step = f"round {message.round} turn"
        events.step_failed(
            message.debate_id, step=step, participant=message.participant_id, **message.error
        )


def _ends_a_persons_stage(
    facts: machine.Rounds, message: Message, seats: tuple[Participant, ...]
) -> bool:
    """Say whether ``message`` ends a stage of the plan holding a person's step: round 1
    is one stage (the openings side by side) and ends with its last turn; each later
    turn is a stage of its own."""
    if message.round == 1:
        stage = seats if machine.round_closes(facts, 1) else ()
    else:
        stage = tuple(seat for seat in seats if seat.pk == message.participant_id)
    return any(seat.is_human for seat in stage)


def _round_close(
    debate_id: int,
    facts: machine.Rounds,
    round_number: int,
    seats: tuple[Participant, ...],
    stored: list[tuple[int, int, str, list]],
) -> RoundClose:
    """Ask, when a turn closes a round that may end the rounds early, whether the votes
    begin now (the gate after the openings, the early stop after later rounds)."""
    if not machine.may_stop_early(facts, round_number):
        return RoundClose(votes_now=False)
    answered = {(r, p): d for r, p, status, d in stored if status == StepStatus.OK}
    return round_close(
        debate_id=debate_id, round_number=round_number, seats=seats, answered=answered
    )
