"""The steps of a debate run: one participant's turn, one voter's ballot.

Each step is idempotent: a stored turn or ballot is never asked again, a second copy
of a step in flight waits for the first (``debates.claims``), and a step of a debate
that is no longer active does nothing. A model failure is stored as a failed turn or
an abstention and the debate goes on; only the rules of SPEC 5.2 fail a debate.
"""

from __future__ import annotations

import functools
import logging
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime

from django.db import IntegrityError, connection, transaction
from django.db.models import Exists, FilteredRelation, OuterRef, Q, Value
from django.utils import timezone

from debates import events
from debates.claims import StepBusy, step_held
from debates.engine.digest import HistoryEntry, participant_label
from debates.engine.parsing import parse_output
from debates.engine.prompts import TurnContext, VoteContext, build_turn_prompt, build_vote_prompt
from debates.engine.types import CoinDecision
from debates.models import (
    Ballot,
    Debate,
    DebatePhase,
    DebateStatus,
    Message,
    MessageType,
    ParseStatus,
    Participant,
    StepStatus,
    Vote,
)
from debates.providers.base import ModelRequest
from debates.services.calls import CONFIG_COLUMNS, CallOutcome, StepDeferred, call_model
from debates.services.lifecycle import debate_fail
from debates.state import STATE_COLUMNS
from strategies.snapshots import market_summary, market_text

logger = logging.getLogger(__name__)


def _label(participant: Participant) -> str:
    """Return the prompt label of a participant: P1 for the first speaker."""
    return participant_label(participant.speak_order + 1)


# What a step reads of a debate's seats: the columns it uses and no others (a step
# that touched another would pay a query for it).
_SEAT_COLUMNS = (
    "debate_id",
    "speak_order",
    "personality",
    *(f"ai_model__{name}" for name in CONFIG_COLUMNS),
    *(
        f"debate__{name}"
        for name in ("status", "max_rounds", "prompt_variant", "symbols", "started_at")
    ),
    "debate__strategy__role_text",
    "debate__strategy__custom_prompt",
)


def _seats(debate_id: int) -> list[Participant]:
    """Return the participants of a debate in speaking order, with their models, the
    debate and its strategy: one query (the market snapshot is read apart, ``_market``)."""
    return list(
        Participant.objects.filter(debate_id=debate_id)
        .select_related("ai_model", "debate__strategy")
        .only(*_SEAT_COLUMNS)
        .order_by("speak_order")
    )


@dataclass(frozen=True)
class _Market:
    """A started debate's market snapshot and its two prompt renderings."""

    snapshot: dict
    text: str
    summary: str


@functools.lru_cache(maxsize=32)
def _market(debate_id: int, started_at: datetime | None) -> _Market:
    """Return the market of a started debate.

    A snapshot never changes once stored (``debate_prepare``): each process reads and
    renders it once per debate run, instead of on every turn. A step gets it before
    taking its model slot, so that a slot waits only for its call.
    """
    snapshot = Debate.objects.values_list("market_snapshot", flat=True).get(pk=debate_id)
    return _Market(snapshot, market_text(snapshot), market_summary(snapshot))


def _seat(seats: list[Participant], participant_id: int) -> Participant:
    for seat in seats:
        if seat.pk == participant_id:
            return seat
    raise Participant.DoesNotExist(f"participant {participant_id} is not in this debate")


def _spoken(
    debate_id: int,
    seats: list[Participant],
    through_round: int,
    status: str,
    voter: int | None = None,
) -> list[Message] | None:
    """Return every stored message of rounds 1..``through_round``, in speaking order, or
    None when the debate is no longer ``status``, or when ``voter`` has a stored ballot:
    one query reads them all, so a step makes its cancel check, and a vote its check
    that it was not cast already, with the read its prompt needs anyway."""
    earlier = FilteredRelation("messages", condition=Q(messages__round__lte=through_round))
    voted = (
        Value(False)
        if voter is None
        else Exists(Ballot.objects.filter(debate=OuterRef("pk"), participant_id=voter))
    )
    rows = list(
        Debate.objects.filter(pk=debate_id)
        .annotate(earlier=earlier, voted=voted)
        .order_by()
        # What a prompt shows of a message: its decisions and reasoning, not its raw text.
        .values_list(
            "status",
            "voted",
            *(
                f"earlier__{name}"
                for name in ("participant", "round", "status", "decisions", "reasoning")
            ),
        )
    )
    if not rows or rows[0][0] != status:
        return None  # the debate is gone, or no longer ``status`` (cancelled, say)
    if rows[0][1]:
        return None  # the ballot is stored already: a vote is never asked twice
    by_id = {seat.pk: seat for seat in seats}
    messages = [
        Message(
            participant=by_id[participant_id],
            round=round_number,
            status=step_status,
            decisions=decisions,
            reasoning=reasoning,
        )
        for _, _, participant_id, round_number, step_status, decisions, reasoning in rows
        if participant_id is not None
    ]
    messages.sort(key=lambda m: (m.round, m.participant.speak_order))
    return messages


def _history(spoken: list[Message], before: tuple[int, int]) -> list[HistoryEntry]:
    """Return the messages of ``spoken`` said before (round, speak order) ``before``.

    In rounds 2..N turns follow one another, so a speaker sees the earlier rounds and
    the speakers before it in its own round.
    """
    if before[0] == 1:
        return []  # the openings are written independently, at the same time
    return [
        _entry(message)
        for message in spoken
        if (message.round, message.participant.speak_order) < before
    ]


def _entry(message: Message) -> HistoryEntry:
    return HistoryEntry(
        participant=_label(message.participant),
        personality=message.participant.personality,
        round=message.round,
        decisions=tuple(CoinDecision.from_dict(d) for d in message.decisions),
        reasoning=message.reasoning,
        failed=message.status == StepStatus.ERROR,
    )


def _prior_actions(history: list[HistoryEntry], participant: Participant) -> dict:
    label = _label(participant)
    actions: dict[str, list[str]] = defaultdict(list)
    for entry in history:
        if entry.participant != label:
            for decision in entry.decisions:
                actions[decision.symbol].append(decision.action.value)
    return {symbol: tuple(found) for symbol, found in actions.items()}


def _usage(outcome: CallOutcome) -> dict:
    response = outcome.response
    if response is None:
        return {"attempts": outcome.error.attempts if outcome.error else 0}
    return {
        "prompt_tokens": response.prompt_tokens,
        "completion_tokens": response.completion_tokens,
        "latency_ms": response.latency_ms,
        "request_id": response.request_id[:120],
        "attempts": response.attempts,
    }


def _error(outcome: CallOutcome) -> dict | None:
    if outcome.error is None:
        return None
    return {"code": outcome.error.code, "message": outcome.error.message}


def turn_run(*, debate_id: int, round_number: int, participant_id: int, holder: str) -> None:
    """Ask one participant for its turn in a round, and store what it said.

    Raise ``StepDeferred`` when the step must be tried again later.
    """
    seats = _seats(debate_id)
    if not seats or seats[0].debate.status != DebateStatus.RUNNING:
        return
    debate = seats[0].debate
    participant = _seat(seats, participant_id)
    step = f"{debate_id}:turn:{round_number}:{participant_id}"
    try:
        with step_held(step=step, holder=holder, debate_id=debate_id):
            _ask_turn(debate, seats, participant, round_number)
    except StepBusy as exc:
        raise StepDeferred("another copy of this turn is running", retry_after=2.0) from exc


def _ask_turn(
    debate: Debate, seats: list[Participant], participant: Participant, round_number: int
) -> None:
    market = _market(debate.pk, debate.started_at)

    def request() -> ModelRequest | None:
        spoken = _spoken(debate.pk, seats, round_number, DebateStatus.RUNNING)
        if spoken is None:
            return None
        if any(m.round == round_number and m.participant_id == participant.pk for m in spoken):
            return None  # stored already: a turn is never asked twice
        return _turn_request(debate, participant, round_number, spoken, market)

    outcome = call_model(participant.ai_model, request)
    if outcome is not None:
        _store_turn(debate, seats, participant, round_number, outcome)


def _turn_request(
    debate: Debate,
    participant: Participant,
    round_number: int,
    spoken: list[Message],
    market: _Market,
) -> ModelRequest:
    history = _history(spoken, (round_number, participant.speak_order))
    strategy = debate.strategy
    context = TurnContext(
        round=round_number,
        max_rounds=debate.max_rounds,
        personality=participant.personality,
        variant=debate.prompt_variant,
        symbols=tuple(debate.symbols),
        market_text=market.text,
        strategy_role=strategy.role_text if strategy else "",
        custom_prompt=strategy.custom_prompt if strategy else "",
        history=tuple(history),
        participant=_label(participant),
    )
    prompt = build_turn_prompt(context)
    return ModelRequest(
        system=prompt.system,
        user=prompt.user,
        kind="turn",
        personality=participant.personality,
        round=round_number,
        max_rounds=debate.max_rounds,
        symbols=tuple(debate.symbols),
        snapshot=market.snapshot,
        prior_actions=_prior_actions(history, participant),
        seed=debate.pk * 100 + participant.speak_order,
    )


def _store_turn(
    debate: Debate,
    seats: list[Participant],
    participant: Participant,
    round_number: int,
    outcome: CallOutcome,
) -> None:
    """Store a turn, close its round when it is the last one, and announce the state.

    Every turn is stored under the debate's row lock, so what the round holds is read
    exactly, and the whole step is a handful of statements.
    """
    fields: dict = {"status": StepStatus.OK, **_usage(outcome), "error": _error(outcome)}
    if outcome.response is not None:
        parsed = parse_output(outcome.response.text, debate.symbols)
        fields.update(
            content=outcome.response.text,
            reasoning=parsed.reasoning,
            decisions=[d.to_dict() for d in parsed.decisions],
            parse_status=parsed.status.value,
            dropped=[d.to_dict() for d in parsed.dropped],
        )
    else:
        fields.update(status=StepStatus.ERROR, parse_status=ParseStatus.NONE)

    with transaction.atomic():
        locked = _lock(debate.pk)
        if locked.status != DebateStatus.RUNNING:
            logger.info("debate %s is %s: turn result dropped", debate.pk, locked.status)
            return
        # Read once the lock is held, in a statement of its own: a statement that took
        # the lock and read the turns together would see the turns as they were before
        # it waited for the lock, and miss those stored by the transaction it waited for.
        turns = list(
            Message.objects.filter(debate=locked)
            .order_by()
            .values_list("round", "participant_id", "status")
        )
        if (round_number, participant.pk) in {(r, p) for r, p, _ in turns}:
            return  # another copy stored this turn first
        message = Message.objects.create(
            debate=locked,
            participant=participant,
            round=round_number,
            message_type=MessageType.ANALYSIS if round_number == 1 else MessageType.REBUTTAL,
            **fields,
        )
        before = _state(locked)
        turns.append((round_number, participant.pk, message.status))
        said = {p: status for r, p, status in turns if r == round_number}
        with events.together(debate.pk):
            events.message_stored(message)
            if message.status == StepStatus.ERROR:
                events.step_failed(
                    debate.pk,
                    step=f"round {round_number} turn",
                    participant=participant.pk,
                    **fields["error"],
                )
            round_closes = locked.current_round == round_number and len(said) == len(seats)
            if round_closes and not _close_round(locked, round_number, turns):
                return  # the debate failed, and debate_fail announced it
            current = said if locked.current_round == round_number else {}
            _announce_state(locked, seats, current, before)


def _lock(debate_id: int) -> Debate:
    """Lock a debate's row for the transaction; return its state fields (SPEC 5.6)."""
    return Debate.objects.select_for_update().only(*STATE_COLUMNS, "max_rounds").get(pk=debate_id)


def _close_round(debate: Debate, round_number: int, turns: list[tuple[int, int, str]]) -> bool:
    """Close round ``round_number``, whose every turn is stored: open the next round, or
    move to voting after the last. Return False when the rules of SPEC 5.2 fail the
    debate instead. Runs under the debate's row lock; updates ``debate`` in memory.
    ``turns`` holds every stored turn of the debate as (round, participant id, status).
    """
    events.round_ended(debate.pk, round_number)
    if StepStatus.OK not in {status for r, _, status in turns if r == round_number}:
        return not debate_fail(
            debate_id=debate.pk,
            step=f"round {round_number}",
            code="round_failed",
            message=f"Every turn of round {round_number} failed.",
        )
    if round_number < debate.max_rounds:
        debate.current_round, debate.phase = round_number + 1, DebatePhase.REBUTTAL
        events.round_started(debate.pk, debate.current_round)
        return True
    answered = len({p for _, p, status in turns if status == StepStatus.OK})
    if answered < 2:
        return not debate_fail(
            debate_id=debate.pk,
            step="rounds",
            code="not_enough_participants",
            message=f"Only {answered} participant(s) ever answered; a debate needs 2.",
        )
    debate.status, debate.phase = DebateStatus.VOTING, DebatePhase.VOTING
    return True


def _state(debate: Debate) -> tuple:
    return (debate.status, debate.phase, debate.current_round, debate.current_speaker_id)


def _announce_state(
    debate: Debate, seats: list[Participant], said: dict[int, str], before: tuple
) -> None:
    """Store the state after a turn, who speaks next included, and publish it if it moved.

    ``debate`` holds the state read under the lock (``before``) with this turn's
    changes applied in memory; ``said`` maps who has spoken in its current round.
    Rounds 2..N are spoken in order, so the next speaker is known the moment a turn is
    stored; announcing it here costs the next turn no extra transaction.
    """
    speaker_id = None
    if debate.status == DebateStatus.RUNNING and debate.current_round >= 2:
        speaker_id = next((seat.pk for seat in seats if seat.pk not in said), None)
    debate.current_speaker_id = speaker_id
    Debate.objects.filter(pk=debate.pk).update(
        status=debate.status,
        phase=debate.phase,
        current_round=debate.current_round,
        current_speaker_id=speaker_id,
        progressed_at=timezone.now(),
    )
    if _state(debate) != before:
        events.status_changed(debate)


def vote_run(*, debate_id: int, participant_id: int, holder: str) -> None:
    """Ask one participant for its final vote on every candidate coin, and store it.

    Raise ``StepDeferred`` when the step must be tried again later.
    """
    seats = _seats(debate_id)
    if not seats or seats[0].debate.status != DebateStatus.VOTING:
        return
    debate = seats[0].debate
    participant = _seat(seats, participant_id)
    step = f"{debate_id}:vote:{participant_id}"
    try:
        with step_held(step=step, holder=holder, debate_id=debate_id):
            _ask_vote(debate, seats, participant)
    except StepBusy as exc:
        raise StepDeferred("another copy of this vote is running", retry_after=2.0) from exc


def _ask_vote(debate: Debate, seats: list[Participant], participant: Participant) -> None:
    market = _market(debate.pk, debate.started_at)

    def request() -> ModelRequest | None:
        spoken = _spoken(
            debate.pk, seats, debate.max_rounds, DebateStatus.VOTING, voter=participant.pk
        )
        return None if spoken is None else _vote_request(debate, participant, spoken, market)

    outcome = call_model(participant.ai_model, request)
    if outcome is not None:
        _store_ballot(debate, participant, outcome)


def _vote_request(
    debate: Debate, participant: Participant, spoken: list[Message], market: _Market
) -> ModelRequest:
    history = _history(spoken, (debate.max_rounds + 1, 0))
    latest: dict[str, HistoryEntry] = {}
    for entry in history:
        if not entry.failed:
            latest[entry.participant] = entry
    strategy = debate.strategy
    context = VoteContext(
        personality=participant.personality,
        variant=debate.prompt_variant,
        symbols=tuple(debate.symbols),
        market_summary=market.summary,
        positions=tuple(latest.values()),
        strategy_role=strategy.role_text if strategy else "",
        custom_prompt=strategy.custom_prompt if strategy else "",
        participant=_label(participant),
    )
    prompt = build_vote_prompt(context)
    return ModelRequest(
        system=prompt.system,
        user=prompt.user,
        kind="vote",
        personality=participant.personality,
        round=debate.max_rounds,
        max_rounds=debate.max_rounds,
        symbols=tuple(debate.symbols),
        snapshot=market.snapshot,
        prior_actions=_prior_actions(history, participant),
        seed=debate.pk * 100 + 50 + participant.speak_order,
    )


def _store_ballot(debate: Debate, participant: Participant, outcome: CallOutcome) -> None:
    """Store a ballot and its votes while the debate is voting, once: a second copy of
    the ballot is refused by its unique constraint."""
    fields: dict = {"status": StepStatus.OK, **_usage(outcome), "error": _error(outcome)}
    decisions: dict[str, CoinDecision] = {}
    if outcome.response is not None:
        parsed = parse_output(outcome.response.text, debate.symbols)
        for decision in parsed.decisions:
            decisions.setdefault(decision.symbol, decision)
        fields.update(
            content=outcome.response.text,
            parse_status=parsed.status.value,
            dropped=[d.to_dict() for d in parsed.dropped],
        )
        why_not = "no usable vote for this coin in the answer"
    else:
        fields.update(status=StepStatus.ERROR, parse_status=ParseStatus.NONE)
        why_not = f"the vote call failed: {outcome.error.code}"

    try:
        with transaction.atomic():
            if not _share_lock_voting(debate.pk):
                logger.info("debate %s is no longer voting: ballot dropped", debate.pk)
                return
            ballot = Ballot.objects.create(debate_id=debate.pk, participant=participant, **fields)
            votes = Vote.objects.bulk_create(
                _vote(ballot, symbol, decisions.get(symbol), why_not) for symbol in debate.symbols
            )
            with events.together(debate.pk):
                if ballot.status == StepStatus.ERROR:
                    events.step_failed(
                        debate.pk, step="vote", participant=participant.pk, **fields["error"]
                    )
                for vote in votes:
                    events.vote_stored(vote)
    except IntegrityError:
        if not Ballot.objects.filter(debate_id=debate.pk, participant=participant).exists():
            raise
        logger.info("debate %s: another copy stored the ballot of %s", debate.pk, participant.pk)


def _share_lock_voting(debate_id: int) -> bool:
    """Lock a voting debate's row in share mode for the transaction; say if it is voting.

    The ballots of a debate are stored side by side (a share lock does not wait for
    another), while a cancel or the consensus, which update the row, wait until every
    ballot holding it commits: no ballot is stored after a cancel, none is missed by the
    consensus. Django's ``select_for_update`` has no share mode; SQLite, which has no
    row locks, lets one writer in at a time anyway.
    """
    table = Debate._meta.db_table
    lock = " FOR SHARE" if connection.features.has_select_for_update else ""
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT 1 FROM {table} WHERE id = %s AND status = %s{lock}",  # noqa: S608
            [debate_id, DebateStatus.VOTING],
        )
        return cursor.fetchone() is not None


def _vote(ballot: Ballot, symbol: str, decision: CoinDecision | None, why_not: str) -> Vote:
    base = {
        "debate_id": ballot.debate_id,
        "ballot": ballot,
        "participant_id": ballot.participant_id,
        "symbol": symbol,
    }
    if decision is None:
        return Vote(**base, abstained=True, abstain_reason=why_not[:200])
    return Vote(
        **base,
        action=decision.action.value,
        confidence=decision.confidence,
        leverage=decision.leverage,
        position_pct=decision.position_pct,
        stop_loss=decision.stop_loss,
        take_profit=decision.take_profit,
        reasoning=decision.reasoning,
    )
