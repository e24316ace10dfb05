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
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.db import IntegrityError, transaction
from django.db.models import Exists, F, OuterRef

from debates import events
from debates.claims import StepBusy, step_held
from debates.engine.digest import HistoryEntry, participant_label
from debates.engine.parsing import parse_output
from debates.engine.plan import OPENING, REBUTTAL, VOTING, StepKey
from debates.engine.prompts import TurnContext, VoteContext, build_turn_prompt, build_vote_prompt
from debates.engine.types import CoinDecision
from debates.locks import lock_debate
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
from debates.providers.base import ModelRequest, ProviderConfig
from debates.providers.registry import reads_snapshot
from debates.services import transitions
from debates.services.budgets import PARTICIPANTS, CallLimits, CallScope, limits_of
from debates.services.calls import (
    CONFIG_COLUMNS,
    CallOutcome,
    StepDeferred,
    call_model,
    provider_config,
)
from debates.services.judge import round_summary_text
from debates.services.levels import round_close
from debates.services.lifecycle import debate_fail
from debates.services.modes import model_refusal
from debates.services.runs import run_enqueue
from debates.state import plan_of, step_released
from strategies.snapshots import market_summary, market_text

logger = logging.getLogger(__name__)


def _label(participant: Participant) -> str:
    """Return the prompt label of a participant: P1 for the first speaker."""
    return participant_label(participant.speak_order + 1)


class _Cast:
    """The part of a started debate that its steps use and that never changes: its
    settings (the model-call cache mode and whether it has a judge among them), its seats
    in speaking order, and its market snapshot with the snapshot's two prompt renderings
    (stored by the prepare step; made here only for a debate prepared before they were
    stored)."""

    def __init__(
        self,
        debate_id: int,
        owner_id: int,
        max_rounds: int,
        prompt_variant: str,
        cache: str,
        symbols: list[str],
        snapshot: dict | None,
        seats: list[Participant],
        rendered: tuple[str, str] = ("", ""),
        *,
        judged: bool = False,
    ) -> None:
        self.debate_id = debate_id
        self.owner_id = owner_id
        self.max_rounds = max_rounds
        self.prompt_variant = prompt_variant
        self.cache = cache
        self.symbols = tuple(symbols)
        self.snapshot = snapshot
        self.seats = tuple(seats)
        self._text, self._summary = rendered
        self.judged = judged

    def seat(self, participant_id: int) -> Participant:
        for seat in self.seats:
            if seat.pk == participant_id:
                return seat
        raise Participant.DoesNotExist(f"participant {participant_id} is not in this debate")

    @functools.cached_property
    def market_text(self) -> str:
        return self._text or market_text(self.snapshot)

    @functools.cached_property
    def market_summary(self) -> str:
        return self._summary or market_summary(self.snapshot)


def _cast(debate: Debate, seats: list[Participant], snapshot: dict | None) -> _Cast:
    """Return the cast of a started debate from its row (``_DEBATE_FIELDS``), seats and
    market ``snapshot`` (when read)."""
    return _Cast(
        debate.pk,
        debate.owner_id,
        debate.max_rounds,
        debate.prompt_variant,
        debate.cache,
        debate.symbols,
        snapshot,
        seats,
        (debate.market_text, debate.market_summary),
        judged=debate.judge_model_id is not None,
    )


class _Said(NamedTuple):
    """What a prompt shows of a stored turn: its decisions and reasoning, not its text."""

    participant: Participant
    round: int
    status: str
    decisions: list
    reasoning: str


@dataclass(frozen=True)
class _Now:
    """What a step reads right before its call: the fixed cast, and what may have
    changed since the debate started (its strategy's texts, the model's settings and
    whether it may still be called, the call's limits, the turns stored so far)."""

    cast: _Cast
    participant: Participant
    config: ProviderConfig
    limits: CallLimits
    strategy_role: str
    custom_prompt: str
    spoken: list[_Said]
    refusal: str | None = None  # why the model can no longer be called (``model_refusal``)

    def has_said(self, round_number: int) -> bool:
        return any(
            said.round == round_number and said.participant == self.participant
            for said in self.spoken
        )


# What a step reads of its seats, and of their debate and its strategy, before its call.
_SEAT_FIELDS = ("kind", "ai_model", "personality", "speak_order", "temperature", "debate")
_DEBATE_FIELDS = (
    "status",
    "owner_id",
    "max_rounds",
    "prompt_variant",
    "cache",
    "symbols",
    "market_text",
    "market_summary",
    "judge_model_id",
    "auto_execute",
    "steps_released",
    "schedule_id",
    "max_output_tokens",
    "strategy",
    "strategy__role_text",
    "strategy__custom_prompt",
)


def _read(debate_id: int, participant_id: int, status: str, key: StepKey) -> _Now | None:
    """Return what step ``key`` of ``participant_id`` needs, or None when the debate is
    no longer ``status`` (cancelled, say), is held before the step (``step_released``),
    or, for a vote, when its ballot is stored.

    Reads the seats with their models and, in the same statement, their debate with its
    strategy's texts and its call's limits (and, for a vote, whether its ballot is
    stored); then every stored turn: what the prompt needs, read right before the call,
    so the step asks with the model and strategy as they are now. The market snapshot
    itself is read only for a model that reads it (the simulated one); the others are
    sent its renderings.
    """
    seats_read = (
        Participant.objects.filter(debate_id=debate_id)
        .select_related("ai_model", "debate__strategy")
        .only(*_SEAT_FIELDS, *(f"debate__{name}" for name in _DEBATE_FIELDS))
        .annotate(
            owner_daily_token_cap=F("debate__owner__token_budget__daily_token_cap"),
            schedule_daily_token_cap=F("debate__schedule__daily_token_cap"),
        )
        .order_by("speak_order")
    )
    voter = key[0] == VOTING
    if voter:
        stored = Ballot.objects.filter(
            debate_id=OuterRef("debate_id"), participant_id=participant_id
        )
        seats_read = seats_read.annotate(ballot_stored=Exists(stored))
    seats = list(seats_read)
    participant = next((seat for seat in seats if seat.pk == participant_id), None)
    if participant is None or participant.debate.status != status:
        return None  # the debate is gone, or no longer ``status`` (cancelled, say)
    debate = participant.debate
    if voter and participant.ballot_stored:
        return None  # the ballot is stored already: a vote is never asked twice
    if not step_released(debate, key, seats):
        return None  # sent before the debate was held before it: it runs once released
    model = participant.ai_model
    if model is None:
        return None  # a person's seat: they write their step, no model is asked
    # Left out of the read, the snapshot is read (a statement of its own) only for a
    # model that reads it, or to render a debate prepared before its renderings were
    # stored.
    reads = reads_snapshot(model.provider) or not debate.market_text
    cast = _cast(debate, seats, debate.market_snapshot if reads else None)
    spoken = [
        _Said(cast.seat(speaker), round_number, step_status, decisions, reasoning)
        for speaker, round_number, step_status, decisions, reasoning in Message.objects.filter(
            debate_id=debate_id
        )
        .order_by()
        .values_list("participant_id", "round", "status", "decisions", "reasoning")
    ]
    spoken.sort(key=lambda said: (said.round, said.participant.speak_order))
    limits = limits_of(
        owner_id=debate.owner_id,
        schedule_id=debate.schedule_id,
        max_output_tokens=debate.max_output_tokens,
        owner_cap=participant.owner_daily_token_cap,
        schedule_cap=participant.schedule_daily_token_cap,
        role=PARTICIPANTS,
        temperature=participant.temperature,
    )
    strategy = debate.strategy
    return _Now(
        cast=cast,
        participant=participant,
        config=provider_config({name: getattr(model, name) for name in CONFIG_COLUMNS}),
        limits=limits,
        strategy_role=(strategy.role_text if strategy else "") or "",
        custom_prompt=(strategy.custom_prompt if strategy else "") or "",
        spoken=spoken,
        refusal=model_refusal(model, model.pk),
    )


def _still(debate_id: int, status: str) -> Callable[[], bool]:
    """Return a check that the debate is still ``status``, for a step that waited."""

    def check() -> bool:
        return Debate.objects.filter(pk=debate_id, status=status).exists()

    return check


def _history(spoken: list[_Said], before: tuple[int, int]) -> list[HistoryEntry]:
    """Return the turns of ``spoken`` said before (round, speak order) ``before``.

    In rounds 2..N turns follow one another, so a speaker sees the earlier rounds and
    the speakers before it in its own round.
    """
    if before[0] == 1:
        return []  # the openings are written independently, at the same time
    return [_entry(said) for said in spoken if (said.round, said.participant.speak_order) < before]


def _entry(said: _Said) -> HistoryEntry:
    return HistoryEntry(
        participant=_label(said.participant),
        personality=said.participant.personality,
        round=said.round,
        decisions=tuple(CoinDecision.from_dict(d) for d in said.decisions),
        reasoning=said.reasoning,
        failed=said.status != StepStatus.OK,  # a failed turn, or a person's skipped one
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
    return outcome.usage_fields()


def _error(outcome: CallOutcome) -> dict | None:
    if outcome.error is None:
        return None
    return {"code": outcome.error.code, "message": outcome.error.message}


def turn_run(*, debate_id: int, round_number: int, participant_id: int, holder: str) -> None:
    """Ask one participant for its turn in a round, and store what it said.

    Raise ``StepDeferred`` when the step must be tried again later.
    """
    step = f"{debate_id}:turn:{round_number}:{participant_id}"
    try:
        with step_held(step=step, holder=holder, debate_id=debate_id):
            _ask_turn(debate_id, round_number, participant_id)
    except StepBusy as exc:
        raise StepDeferred("another copy of this turn is running", retry_after=2.0) from exc


def _ask_turn(debate_id: int, round_number: int, participant_id: int) -> None:
    kind = OPENING if round_number == 1 else REBUTTAL
    now = _read(
        debate_id, participant_id, DebateStatus.RUNNING, (kind, round_number, participant_id)
    )
    if now is None or now.has_said(round_number):
        return  # the debate stopped, or the turn is stored: a turn is never asked twice
    request = _turn_request(now, round_number)
    outcome = call_model(
        now.config,
        request,
        still_wanted=_still(debate_id, DebateStatus.RUNNING),
        owner_id=now.cast.owner_id,
        cache=now.cast.cache,
        scope=CallScope(debate_id=debate_id, participant_id=participant_id),
        limits=now.limits,
        refusal=now.refusal,
    )
    if outcome is not None:
        _store_turn(now.cast, now.participant, round_number, outcome)


def _turn_request(now: _Now, round_number: int) -> ModelRequest:
    cast, participant = now.cast, now.participant
    history = _history(now.spoken, (round_number, participant.speak_order))
    summary = ""
    if cast.judged and round_number > 1:
        summary = round_summary_text(debate_id=cast.debate_id, round_number=round_number - 1)
    context = TurnContext(
        round=round_number,
        max_rounds=cast.max_rounds,
        personality=participant.personality,
        variant=cast.prompt_variant,
        symbols=cast.symbols,
        market_text=cast.market_text,
        strategy_role=now.strategy_role,
        custom_prompt=now.custom_prompt,
        history=tuple(history),
        participant=_label(participant),
        output_mode=now.config.output_mode,
        summary=summary,
        positions=tuple(_latest(history).values()) if summary else (),
        market_summary=cast.market_summary if summary else "",
    )
    prompt = build_turn_prompt(context)
    return ModelRequest(
        system=prompt.system,
        user=prompt.user,
        kind="turn",
        personality=participant.personality,
        round=round_number,
        max_rounds=cast.max_rounds,
        symbols=cast.symbols,
        snapshot=cast.snapshot,
        prior_actions=_prior_actions(history, participant),
        seed=cast.debate_id * 100 + participant.speak_order,
    )


def _store_turn(
    cast: _Cast, participant: Participant, round_number: int, outcome: CallOutcome
) -> None:
    """Store what a model answered for its turn (``turn_record``)."""
    fields: dict = {"status": StepStatus.OK, **_usage(outcome), "error": _error(outcome)}
    if outcome.response is not None:
        parsed = parse_output(outcome.response.text, cast.symbols)
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
        turn_record(
            debate_id=cast.debate_id,
            participant=participant,
            round_number=round_number,
            fields=fields,
            seats=cast.seats,
        )


def turn_record(
    *,
    debate_id: int,
    participant: Participant,
    round_number: int,
    fields: dict[str, Any],
    seats: tuple[Participant, ...],
) -> Message | None:
    """Store a turn (a model's or a person's), close its round when it is the last one,
    and announce the state; return the turn, or None when it was not stored (the debate
    stopped, or another copy stored it first). Call inside ``transaction.atomic()``.

    Every turn is stored under the debate's row lock, so what the round holds is read
    exactly, and the whole step is a handful of statements. A turn that ends a stage of
    the plan holding a person's step sends the rest of the run: the canvas stopped
    there, since no task runs a person's step.
    """
    locked = lock_debate(debate_id=debate_id)
    if locked is None or locked.status != DebateStatus.RUNNING:
        state = "gone" if locked is None else locked.status
        logger.info("debate %s is %s: turn result dropped", debate_id, state)
        return None
    # Read once the lock is held, in a statement of its own: a statement that took
    # the lock and read the turns together would see the turns as they were before
    # it waited for the lock, and miss those stored by the transaction it waited for.
    stored = list(
        Message.objects.filter(debate_id=locked.pk)
        .order_by()
        .values_list("round", "participant_id", "status", "decisions")
    )
    if (round_number, participant.pk) in {(r, p) for r, p, _, _ in stored}:
        return None  # another copy stored this turn first
    message = Message.objects.create(
        debate_id=locked.pk,
        participant=participant,
        round=round_number,
        message_type=MessageType.ANALYSIS if round_number == 1 else MessageType.REBUTTAL,
        **fields,
    )
    stored.append((round_number, participant.pk, message.status, message.decisions))
    turns = [(r, p, status) for r, p, status, _ in stored]
    # What closing the round reads of the answered turns: their decisions.
    answered = {(r, p): decisions for r, p, status, decisions in stored if status == StepStatus.OK}
    said = {p: status for r, p, status in turns if r == round_number}
    with events.together(locked.pk):
        events.message_stored(message)
        if message.status == StepStatus.ERROR:
            events.step_failed(
                locked.pk,
                step=f"round {round_number} turn",
                participant=participant.pk,
                **fields["error"],
            )
        round_closes = locked.current_round == round_number and len(said) == len(seats)
        recorded: dict = {}
        closing = (locked, round_number, turns, seats, answered, recorded)
        if round_closes and not _close_round(*closing):
            return message  # the debate failed, and debate_fail announced it
        current = said if locked.current_round == round_number else {}
        _turn_taken(locked, seats, current, round_number, turns, recorded)
        # Round 1 is one stage (the openings side by side), each later turn a stage.
        stage = seats if round_number == 1 else (participant,)
        if (round_closes or round_number > 1) and any(seat.is_human for seat in stage):
            run_enqueue(debate_id=locked.pk)
    return message


def _close_round(
    debate: Debate,
    round_number: int,
    turns: list[tuple[int, int, str]],
    seats: tuple[Participant, ...],
    answered: dict[tuple[int, int], list[dict]],
    recorded: dict,
) -> bool:
    """Close round ``round_number``, whose every turn is stored: open the next round, or
    move to voting after the last, or earlier when the gate keeps the debate light or
    the positions have settled (``levels.round_close``, whose columns go in
    ``recorded``). Return False when the rules of SPEC 5.2 fail the debate instead.
    Runs under the debate's row lock; updates ``debate`` in memory. ``turns`` holds
    every stored turn of the debate as (round, participant id, status), ``answered``
    the decisions of each answered one by (round, participant id).
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
        closed = round_close(
            debate_id=debate.pk, round_number=round_number, seats=seats, answered=answered
        )
        recorded.update(closed.fields)
    if round_number < debate.max_rounds and not closed.votes_now:
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


def _turn_taken(
    debate: Debate,
    seats: tuple[Participant, ...],
    said: dict[int, str],
    round_number: int,
    turns: list[tuple[int, int, str]],
    recorded: dict,
) -> None:
    """Store where the debate is after a turn of ``round_number``, who speaks next
    included, and announce it with its plan of steps.

    ``debate`` holds the state read under the lock with this turn's changes applied in
    memory; ``said`` maps who has spoken in its current round, ``turns`` holds every
    stored turn. Rounds 2..N are spoken in order, so the next speaker is known the
    moment a turn is stored.
    """
    speaker_id = None
    if debate.status == DebateStatus.RUNNING and debate.current_round >= 2:
        speaker_id = next((seat.pk for seat in seats if seat.pk not in said), None)
    debate.current_speaker_id = speaker_id
    transitions.turn_taken(
        debate=debate, round_number=round_number, seats=seats, turns=turns, recorded=recorded
    )


def vote_run(*, debate_id: int, participant_id: int, holder: str) -> None:
    """Ask one participant for its final vote on every candidate coin, and store it.

    Raise ``StepDeferred`` when the step must be tried again later.
    """
    step = f"{debate_id}:vote:{participant_id}"
    try:
        with step_held(step=step, holder=holder, debate_id=debate_id):
            _ask_vote(debate_id, participant_id)
    except StepBusy as exc:
        raise StepDeferred("another copy of this vote is running", retry_after=2.0) from exc


def _ask_vote(debate_id: int, participant_id: int) -> None:
    now = _read(debate_id, participant_id, DebateStatus.VOTING, (VOTING, None, participant_id))
    if now is None:
        return  # the debate stopped, or the ballot is stored: a vote is never asked twice
    request = _vote_request(now)
    outcome = call_model(
        now.config,
        request,
        still_wanted=_still(debate_id, DebateStatus.VOTING),
        owner_id=now.cast.owner_id,
        cache=now.cast.cache,
        scope=CallScope(debate_id=debate_id, participant_id=participant_id),
        limits=now.limits,
        refusal=now.refusal,
    )
    if outcome is not None:
        _store_ballot(now.cast, now.participant, outcome)


def _latest(history: list[HistoryEntry]) -> dict[str, HistoryEntry]:
    """Return each participant's latest answered turn in ``history``, in speaking order."""
    latest: dict[str, HistoryEntry] = {}
    for entry in history:
        if not entry.failed:
            latest[entry.participant] = entry
    return dict(sorted(latest.items(), key=lambda item: int(item[0][1:])))


def _vote_request(now: _Now) -> ModelRequest:
    cast, participant = now.cast, now.participant
    history = _history(now.spoken, (cast.max_rounds + 1, 0))
    latest = _latest(history)
    context = VoteContext(
        personality=participant.personality,
        variant=cast.prompt_variant,
        symbols=cast.symbols,
        market_summary=cast.market_summary,
        positions=tuple(latest.values()),
        strategy_role=now.strategy_role,
        custom_prompt=now.custom_prompt,
        participant=_label(participant),
        output_mode=now.config.output_mode,
    )
    prompt = build_vote_prompt(context)
    return ModelRequest(
        system=prompt.system,
        user=prompt.user,
        kind="vote",
        personality=participant.personality,
        round=cast.max_rounds,
        max_rounds=cast.max_rounds,
        symbols=cast.symbols,
        snapshot=cast.snapshot,
        prior_actions=_prior_actions(history, participant),
        seed=cast.debate_id * 100 + 50 + participant.speak_order,
    )


def _store_ballot(cast: _Cast, participant: Participant, outcome: CallOutcome) -> None:
    """Store what a model answered for its vote (``ballot_record``)."""
    fields: dict = {"status": StepStatus.OK, **_usage(outcome), "error": _error(outcome)}
    decisions: dict[str, CoinDecision] = {}
    if outcome.response is not None:
        parsed = parse_output(outcome.response.text, cast.symbols)
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
    ballot_record(
        debate_id=cast.debate_id,
        participant=participant,
        fields=fields,
        decisions=decisions,
        why_not=why_not,
        symbols=cast.symbols,
        seats=cast.seats,
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
                return None
            ballot = Ballot.objects.create(debate_id=debate_id, participant=participant, **fields)
            votes = Vote.objects.bulk_create(
                vote_row(ballot, symbol, decisions.get(symbol), why_not) for symbol in symbols
            )
            with events.together(debate_id):
                if ballot.status == StepStatus.ERROR:
                    events.step_failed(
                        debate_id, step="vote", participant=participant.pk, **fields["error"]
                    )
                for vote in votes:
                    events.vote_stored(vote)
                person = any(seat.is_human for seat in seats)
                ballots: list[tuple[int, str]] = []
                if locked.steps_released is not None or person:
                    # The debate may stop after this vote (held, or waiting for a
                    # person's): its state says so, with the plan announced from the
                    # turns (they do not change while the debate votes) and the ballots
                    # stored. In the automatic pace the vote events tell the same.
                    turns = Message.objects.filter(debate_id=debate_id).order_by()
                    ballots = list(
                        Ballot.objects.filter(debate_id=debate_id)
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
            if person and len(ballots) == len(seats):
                run_enqueue(debate_id=debate_id)
            return ballot
    except IntegrityError:
        if not Ballot.objects.filter(debate_id=debate_id, participant=participant).exists():
            raise
        logger.info("debate %s: another copy stored the ballot of %s", debate_id, participant.pk)
        return None


def vote_row(ballot: Ballot, symbol: str, decision: CoinDecision | None, why_not: str) -> Vote:
    """Return the unsaved vote of ``ballot`` on ``symbol``: ``decision``, or an abstention
    saying ``why_not``."""
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
