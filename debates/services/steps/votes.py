"""One participant's final vote: asked of its model, or written by a person, and stored
as a ballot with a vote (or an abstention) on every candidate coin.

A stored ballot is never asked again, and a vote of a debate that is no longer voting
does nothing. A model failure is stored as an abstaining ballot.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import IntegrityError, transaction

from debates import events
from debates.engine.plan import VOTING
from debates.engine.prompts import VoteContext, build_vote_prompt
from debates.engine.types import CoinDecision
from debates.locks import lock_debate
from debates.models import (
    Ballot,
    DebateStatus,
    DropReason,
    Message,
    Participant,
    StepStatus,
    Vote,
)
from debates.providers.base import ModelRequest
from debates.services import transitions
from debates.services.dropped import dropped_call_record
from debates.services.runs import run_enqueue
from debates.services.steps import context
from debates.state import plan_of

logger = logging.getLogger(__name__)


def vote_ask(*, debate_id: int, participant_id: int, cached_only: bool) -> Ballot | None:
    """Ask a participant's model for its final vote on every candidate coin, and store
    it; return the stored ballot, or None when none was stored here. ``cached_only``:
    only the model-call cache may answer (``call_model``)."""
    now = context.step_context(
        debate_id, participant_id, DebateStatus.VOTING, (VOTING, None, participant_id)
    )
    if now is None:
        return None  # the debate stopped, or the ballot is stored: never asked twice
    outcome = now.ask(_vote_request(now), cached_only=cached_only)
    if outcome is None:
        return None
    fields, parsed = context.answer_fields(outcome, now.cast.symbols)
    decisions: dict[str, CoinDecision] = {}
    for decision in parsed.decisions if parsed is not None else ():
        decisions.setdefault(decision.symbol, decision)
    why_not = (
        "no usable vote for this coin in the answer"
        if parsed is not None
        else f"the vote call failed: {outcome.error.code}"
    )
    return ballot_record(
        debate_id=debate_id,
        participant=now.participant,
        fields=fields,
        decisions=decisions,
        why_not=why_not,
        symbols=now.cast.symbols,
        seats=now.cast.seats,
    )


def _vote_request(now: context.StepContext) -> ModelRequest:
    cast, participant = now.cast, now.participant
    said = context.history(now.spoken, (cast.max_rounds + 1, 0))
    prompt_input = VoteContext(
        personality=participant.personality,
        variant=cast.prompt_variant,
        symbols=cast.symbols,
        market_summary=cast.market_summary,
        positions=tuple(context.latest(said).values()),
        strategy_role=now.strategy_role,
        custom_prompt=now.custom_prompt,
        participant=context.label(participant),
        output_mode=now.config.output_mode,
        book=cast.book_text,
        record=cast.record_text(participant.pk),
    )
    prompt = build_vote_prompt(prompt_input)
    return ModelRequest(
        system=prompt.system,
        user=prompt.user,
        kind="vote",
        personality=participant.personality,
        round=cast.max_rounds,
        max_rounds=cast.max_rounds,
        symbols=cast.symbols,
        snapshot=cast.snapshot,
        prior_actions=context.prior_actions(said, participant),
        participant=context.label(participant),
        positions=context.positions(said),
        seed=cast.debate_id * 100 + 50 + participant.speak_order,
    )


def ballot_record(
    *,
    debate_id: int,
    participant: Participant,
    fields: dict[str, Any],
    decisions: dict[str, CoinDecision],
    why_not: str,
    symbols: tuple[str, ...],
    seats: tuple[Participant, ...],
) -> Ballot | None:
    """Store a ballot (a model's or a person's) and its votes, one per coin of
    ``symbols`` (an abstention saying ``why_not`` where ``decisions`` has none), while
    the debate is voting, once; return it, or None when it was not stored.

    A second copy of the ballot is refused by its unique constraint. The last ballot of
    a debate with a person's seat sends the rest of the run (the consensus): the canvas
    stopped at the votes, since no task runs a person's vote.
    """
    try:
        with transaction.atomic():
            locked = lock_debate(debate_id=debate_id, status=DebateStatus.VOTING)
            if locked is None:
                logger.info("debate %s is no longer voting: ballot dropped", debate_id)
                _dropped(participant, fields, DropReason.STOPPED)
                return None
            ballot = Ballot.objects.create(debate_id=debate_id, participant=participant, **fields)
            votes = Vote.objects.bulk_create(
                vote_row(ballot, symbol, decisions.get(symbol), why_not) for symbol in symbols
            )
            with events.together(debate_id):
                _announce(ballot, votes)
                person = any(seat.is_human for seat in seats)
                ballots = (
                    _state_published(locked, seats)
                    if locked.steps_released is not None or person
                    else []
                )
            if person and len(ballots) == len(seats):
                run_enqueue(debate_id=debate_id)
            return ballot
    except IntegrityError:
        if not Ballot.objects.filter(debate_id=debate_id, participant=participant).exists():
            raise
        logger.info("debate %s: another copy stored the ballot of %s", debate_id, participant.pk)
        _dropped(participant, fields, DropReason.DUPLICATE)
        return None


def _dropped(participant: Participant, fields: dict[str, Any], reason: str) -> None:
    """Keep what the call of a ballot that is not stored used and cost."""
    dropped_call_record(fields=fields, kind="vote", reason=reason, participant=participant)


def _announce(ballot: Ballot, votes: list[Vote]) -> None:
    """Announce a stored ballot's votes, and its failure for a ballot whose call failed."""
    if ballot.status == StepStatus.ERROR:
        events.step_failed(
            ballot.debate_id, step="vote", participant=ballot.participant_id, **ballot.error
        )
    for vote in votes:
        events.vote_stored(vote)


def _state_published(locked: Any, seats: tuple[Participant, ...]) -> list[tuple[int, str]]:
    """Announce the state of a debate that may stop after this vote (held, or waiting
    for a person's), with its plan from the turns (they do not change while the debate
    votes) and the ballots stored; return the ballots as (participant id, status). In
    the automatic pace the vote events tell the same."""
    turns = Message.objects.filter(debate_id=locked.pk).order_by()
    ballots = list(
        Ballot.objects.filter(debate_id=locked.pk)
        .order_by()
        .values_list("participant_id", "status")
    )
    plan = plan_of(
        locked,
        seats=seats,
        turns=turns.values_list("round", "participant_id", "status"),
        ballots=ballots,
    )
    transitions.state_published(locked, plan, seats)
    return ballots


def vote_row(ballot: Ballot, symbol: str, decision: CoinDecision | None, why_not: str) -> Vote:
    """Return the unsaved vote of ``ballot`` on ``symbol``: ``decision`` (on that coin),
    or an abstention saying ``why_not``."""
    base = {
        "debate_id": ballot.debate_id,
        "ballot": ballot,
        "participant_id": ballot.participant_id,
    }
    if decision is None:
        return Vote(**base, symbol=symbol, abstained=True, abstain_reason=why_not[:200])
    return Vote(**base, **decision.to_dict())
