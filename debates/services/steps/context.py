"""What a participant's step reads right before its model call, and what its prompt
shows of the debate so far."""

from __future__ import annotations

import functools
from collections import defaultdict
from dataclasses import dataclass
from typing import Any, NamedTuple

from django.db.models import Exists, F

from debates.engine.book import Book, book_text, record_text
from debates.engine.digest import HistoryEntry, participant_label
from debates.engine.parsing import ParseResult, parse_output
from debates.engine.plan import VOTING, StepKey
from debates.engine.types import CoinDecision
from debates.models import Ballot, Debate, Message, ParseStatus, Participant, StepStatus
from debates.providers.base import ModelRequest, Position, ProviderConfig
from debates.providers.registry import reads_snapshot
from debates.selectors import debate_still
from debates.services.budgets import PARTICIPANTS, CallLimits, CallScope, limits_of
from debates.services.calls import CONFIG_COLUMNS, CallOutcome, call_model, provider_config
from debates.services.modes import model_refusal
from debates.state import step_released
from strategies.snapshots import market_summary, market_text


def label(participant: Participant) -> str:
    """Return the prompt label of a participant: P1 for the first speaker."""
    return participant_label(participant.speak_order + 1)


class Cast:
    """The part of a started debate that its steps use and that never changes: its
    settings, its seats in speaking order, and its market snapshot with the snapshot's
    two prompt renderings (stored by the prepare step; made here only for a debate
    prepared before they were stored)."""

    def __init__(self, debate: Debate, seats: list[Participant], snapshot: dict | None) -> None:
        self.debate_id = debate.pk
        self.owner_id = debate.owner_id
        self.max_rounds = debate.max_rounds
        self.prompt_variant = debate.prompt_variant
        self.cache = debate.cache
        self.symbols = tuple(debate.symbols)
        self.snapshot = snapshot
        self.seats = tuple(seats)
        self.judged = debate.judge_model_id is not None
        self.book = debate.book
        self.track_record = debate.track_record or {}
        self._rendered = (debate.market_text, debate.market_summary)

    def seat(self, participant_id: int) -> Participant:
        """Return the seat ``participant_id`` of the debate."""
        for seat in self.seats:
            if seat.pk == participant_id:
                return seat
        raise Participant.DoesNotExist(f"participant {participant_id} is not in this debate")

    @functools.cached_property
    def market_text(self) -> str:
        return self._rendered[0] or market_text(self.snapshot)

    @functools.cached_property
    def market_summary(self) -> str:
        return self._rendered[1] or market_summary(self.snapshot)

    @functools.cached_property
    def book_text(self) -> str:
        """Return the trader's book as the votes see it ("" without a trader)."""
        return book_text(Book.from_dict(self.book), self.symbols) if self.book else ""

    def record_text(self, participant_id: int) -> str:
        """Return a voter's track record as its vote sees it ("" when not shown)."""
        calls = self.track_record.get(str(participant_id))
        return "" if calls is None else record_text(calls)


class Said(NamedTuple):
    """What a prompt shows of a stored turn: its decisions and reasoning, not its text."""

    participant: Participant
    round: int
    status: str
    decisions: list
    reasoning: str


@dataclass(frozen=True)
class StepContext:
    """What a step reads right before its call: the fixed cast, and what may have
    changed since the debate started (its strategy's texts, the model's settings and
    whether it may still be called, the call's limits, the turns stored so far)."""

    cast: Cast
    participant: Participant
    config: ProviderConfig
    limits: CallLimits
    strategy_role: str
    custom_prompt: str
    spoken: list[Said]
    status: str  # the debate's status the step was read in
    refusal: str | None = None  # why the model can no longer be called (``model_refusal``)

    def ask(self, request: ModelRequest, *, cached_only: bool) -> CallOutcome | None:
        """Send ``request`` to the seat's model as a call of the debate (``call_model``):
        within its limits and its owner's share of the cap, through its cache mode; None
        when the call was abandoned (the debate left its status while the call waited
        for a slot). ``cached_only``: only the model-call cache may answer."""
        debate_id = self.cast.debate_id
        return call_model(
            self.config,
            request,
            still_wanted=debate_still(debate_id, (self.status,)),
            owner_id=self.cast.owner_id,
            cache=self.cast.cache,
            scope=CallScope(debate_id=debate_id, participant_id=self.participant.pk),
            limits=self.limits,
            refusal=self.refusal,
            cached_only=cached_only,
        )

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
    "book",
    "track_record",
    "judge_model_id",
    "auto_execute",
    "steps_released",
    "schedule_id",
    "max_output_tokens",
    "strategy",
    "strategy__role_text",
    "strategy__custom_prompt",
)


def step_context(
    debate_id: int, participant_id: int, status: str, key: StepKey
) -> StepContext | None:
    """Return what step ``key`` of ``participant_id`` needs, or None when the debate is
    gone or no longer ``status`` (cancelled, say), is held before the step
    (``step_released``), when the seat is a person's, or, for a vote, when its ballot is
    stored.

    Reads the seats with their models and, in the same statement, their debate with its
    strategy's texts and its call's limits (and, for a vote, whether its ballot is
    stored); then every stored turn, so the step asks with the model and strategy as
    they are now. The market snapshot itself is read only for a model that reads it
    (the simulated one); the others are sent its renderings.
    """
    seats = _seats(debate_id, participant_id, voter=key[0] == VOTING)
    participant = next((seat for seat in seats if seat.pk == participant_id), None)
    if participant is None or not _asked(participant, status, key, seats):
        return None
    debate, model = participant.debate, participant.ai_model
    reads = reads_snapshot(model.provider) or not debate.market_text
    cast = Cast(debate, seats, debate.market_snapshot if reads else None)
    role, custom = _strategy_texts(debate)
    return StepContext(
        cast=cast,
        participant=participant,
        config=provider_config({name: getattr(model, name) for name in CONFIG_COLUMNS}),
        limits=limits_of(
            owner_id=debate.owner_id,
            schedule_id=debate.schedule_id,
            max_output_tokens=debate.max_output_tokens,
            owner_cap=participant.owner_daily_token_cap,
            owner_usd_cap=participant.owner_daily_usd_cap,
            schedule_cap=participant.schedule_daily_token_cap,
            role=PARTICIPANTS,
            temperature=participant.temperature,
        ),
        strategy_role=role,
        custom_prompt=custom,
        spoken=_spoken(cast),
        status=status,
        refusal=model_refusal(model, model.pk),
    )


def _strategy_texts(debate: Debate) -> tuple[str, str]:
    """Return the role text and custom prompt of the debate's strategy ("" without)."""
    strategy = debate.strategy
    if strategy is None:
        return "", ""
    return strategy.role_text or "", strategy.custom_prompt or ""


def _asked(participant: Participant, status: str, key: StepKey, seats: list[Participant]) -> bool:
    """Say whether step ``key`` of ``participant`` (read by ``_seats``) asks its model."""
    if participant.debate.status != status:
        return False  # the debate is no longer ``status`` (cancelled, say)
    if getattr(participant, "ballot_stored", False):
        return False  # the ballot is stored already: a vote is never asked twice
    if not step_released(participant.debate, key, seats):
        return False  # sent before the debate was held before it: it runs once released
    return participant.ai_model is not None  # a person writes their own step


def _seats(debate_id: int, participant_id: int, *, voter: bool) -> list[Participant]:
    """Return a debate's seats in speaking order with their models, their debate and its
    strategy's texts, and the daily caps of its owner and schedule; for a vote,
    whether the ballot of ``participant_id`` is stored."""
    seats = (
        Participant.objects.filter(debate_id=debate_id)
        .select_related("ai_model", "debate__strategy")
        .only(*_SEAT_FIELDS, *(f"debate__{name}" for name in _DEBATE_FIELDS))
        .annotate(
            owner_daily_token_cap=F("debate__owner__token_budget__daily_token_cap"),
            owner_daily_usd_cap=F("debate__owner__token_budget__daily_usd_cap"),
            schedule_daily_token_cap=F("debate__schedule__daily_token_cap"),
        )
        .order_by("speak_order")
    )
    if voter:
        stored = Ballot.objects.filter(debate_id=debate_id, participant_id=participant_id)
        seats = seats.annotate(ballot_stored=Exists(stored))
    return list(seats)


def _spoken(cast: Cast) -> list[Said]:
    """Return every stored turn of the debate, in round and speaking order."""
    turns = (
        Message.objects.filter(debate_id=cast.debate_id)
        .order_by()
        .values_list("participant_id", "round", "status", "decisions", "reasoning")
    )
    spoken = [Said(cast.seat(speaker), *rest) for speaker, *rest in turns]
    return sorted(spoken, key=lambda said: (said.round, said.participant.speak_order))


def history(spoken: list[Said], before: tuple[int, int]) -> list[HistoryEntry]:
    """Return the turns of ``spoken`` said before (round, speak order) ``before``.

    In rounds 2..N turns follow one another, so a speaker sees the earlier rounds and
    the speakers before it in its own round.
    """
    if before[0] == 1:
        return []  # the openings are written independently, at the same time
    return [_entry(said) for said in spoken if (said.round, said.participant.speak_order) < before]


def _entry(said: Said) -> HistoryEntry:
    return HistoryEntry(
        participant=label(said.participant),
        personality=said.participant.personality,
        round=said.round,
        decisions=tuple(CoinDecision.from_dict(d) for d in said.decisions),
        reasoning=said.reasoning,
        failed=said.status != StepStatus.OK,  # a failed turn, or a person's skipped one
    )


def latest(entries: list[HistoryEntry]) -> dict[str, HistoryEntry]:
    """Return each participant's latest answered turn in ``entries``, in speaking order."""
    found: dict[str, HistoryEntry] = {}
    for entry in entries:
        if not entry.failed:
            found[entry.participant] = entry
    return dict(sorted(found.items(), key=lambda item: int(item[0][1:])))


def prior_actions(entries: list[HistoryEntry], participant: Participant) -> dict:
    """Return the actions the other participants took on each coin in ``entries``."""
    own = label(participant)
    actions: dict[str, list[str]] = defaultdict(list)
    for entry in entries:
        if entry.participant != own:
            for decision in entry.decisions:
                actions[decision.symbol].append(decision.action.value)
    return {symbol: tuple(found) for symbol, found in actions.items()}


def positions(entries: list[HistoryEntry]) -> dict[str, tuple[Position, ...]]:
    """Return each participant's latest answered position on each coin in ``entries``."""
    found: dict[str, list[Position]] = defaultdict(list)
    for speaker, entry in latest(entries).items():
        for decision in entry.decisions:
            position = Position(speaker, decision.action.value, decision.confidence)
            found[decision.symbol].append(position)
    return {symbol: tuple(held) for symbol, held in found.items()}


def answer_fields(
    outcome: CallOutcome, symbols: tuple[str, ...]
) -> tuple[dict[str, Any], ParseResult | None]:
    """Return the stored columns of a model's answer (a turn's or a ballot's) and what
    parsing it gave: its usage, its text and parse status, or the call's error."""
    error = outcome.error
    fields: dict[str, Any] = {
        "status": StepStatus.OK,
        **outcome.usage_fields(),
        "error": None if error is None else {"code": error.code, "message": error.message},
    }
    if outcome.response is None:
        fields.update(status=StepStatus.ERROR, parse_status=ParseStatus.NONE)
        return fields, None
    parsed = parse_output(outcome.response.text, symbols)
    fields.update(
        content=outcome.response.text,
        parse_status=parsed.status.value,
        dropped=[d.to_dict() for d in parsed.dropped],
    )
    return fields, parsed
