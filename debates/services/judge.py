"""The judge's steps: a summary after each round but the last, the scores after the votes.

A judge never fails its debate: a failed call is stored with its error, later rounds
then get the full history (``round_summary_text`` gives nothing), and the scores are
stored as missing with the reason. Each step is idempotent: a stored call is never made
again, and a step of a debate that is no longer active does nothing. They run as every
step does, through ``debates.services.steps.step_run``, which holds their claim.
"""

from __future__ import annotations

import dataclasses
import logging

from django.db import IntegrityError, transaction

from debates import events
from debates.engine.digest import HistoryEntry, participant_label
from debates.engine.judge import (
    JUDGE_FINAL,
    JUDGE_ROUND,
    ItemScore,
    JudgedSeat,
    ScoresContext,
    ScoreSheet,
    SummaryContext,
    SummaryStatus,
    aggregate_scores,
    build_scores_prompt,
    build_summary_prompt,
    judge_temperatures,
    parse_scores,
    parse_summary,
    summary_text,
)
from debates.engine.plan import DONE, FAILED, StepKey
from debates.engine.types import Action, CoinDecision
from debates.models import (
    ACTIVE_STATUSES,
    Debate,
    DebateStatus,
    DropReason,
    JudgeCall,
    JudgeCallKind,
    JudgeScore,
    Message,
    ParseStatus,
    Participant,
    StepStatus,
    Vote,
)
from debates.providers.base import ModelRequest, ProviderConfig
from debates.selectors import debate_still
from debates.services import transitions
from debates.services.budgets import JUDGE, CallScope
from debates.services.calls import (
    CONFIG_COLUMNS,
    CallOutcome,
    call_model,
    provider_config,
)
from debates.services.dropped import dropped_call_record
from debates.services.modes import model_refusal
from debates.state import step_released
from strategies.snapshots import market_summary

logger = logging.getLogger(__name__)

_DEBATE_FIELDS = (
    "owner_id",
    "schedule_id",
    "status",
    "max_rounds",
    "symbols",
    "market_snapshot",
    "market_summary",
    "cache",
    "judge_count",
    "auto_execute",
    "steps_released",
    *(f"judge_model__{name}" for name in CONFIG_COLUMNS),
    "judge_model__name",
    "judge_model__enabled",
)


def _label(participant: Participant) -> str:
    return participant_label(participant.speak_order + 1)


def _judged(debate_id: int, statuses: tuple[str, ...], key: StepKey) -> Debate | None:
    """Return the debate with its judge's model when it has a judge, is in one of
    ``statuses`` and is released to step ``key`` (``step_released``), else None."""
    debate = (
        Debate.objects.select_related("judge_model")
        .only(*_DEBATE_FIELDS)
        .filter(pk=debate_id, status__in=statuses, judge_model__isnull=False)
        .first()
    )
    return debate if debate is not None and step_released(debate, key) else None


def _config(debate: Debate, temperature: float) -> ProviderConfig:
    model = debate.judge_model
    columns = {name: getattr(model, name) for name in CONFIG_COLUMNS}
    return dataclasses.replace(provider_config(columns), temperature=temperature)


def _entry(message: Message) -> HistoryEntry:
    return HistoryEntry(
        participant=_label(message.participant),
        personality=message.participant.personality,
        round=message.round,
        decisions=tuple(CoinDecision.from_dict(d) for d in message.decisions),
        reasoning=message.reasoning,
        failed=message.status == StepStatus.ERROR,
    )


def _messages(debate_id: int, **filters: object) -> list[Message]:
    return list(
        Message.objects.filter(debate_id=debate_id, **filters)
        .select_related("participant")
        .only("round", "status", "decisions", "reasoning", "participant")
        .order_by("round", "participant__speak_order")
    )


def _call_fields(outcome: CallOutcome) -> dict:
    """Return the stored columns of a judge call: its usage and cost as a turn's, its
    answer or its error."""
    fields = outcome.usage_fields()
    if outcome.response is None:
        error = outcome.error
        fields.update(
            status=StepStatus.ERROR,
            error={"code": error.code, "message": error.message} if error else None,
        )
    else:
        fields.update(status=StepStatus.OK, content=outcome.response.text)
    return fields


def _store_call(
    debate: Debate, statuses: tuple[str, ...], step: StepKey | None, **fields: object
) -> JudgeCall | None:
    """Store a judge call while the debate is in ``statuses``, with the outcome of its
    plan ``step`` when the call is the whole step; once (a second copy is refused by the
    unique constraint, and the stored one is returned). The call of an answer dropped
    is kept for what it used and cost (``dropped_call_record``)."""
    debate_id = debate.pk
    key = {name: fields[name] for name in ("kind", "round", "judge")}
    try:
        with transaction.atomic():
            if not Debate.objects.filter(pk=debate_id, status__in=statuses).exists():
                logger.info("debate %s is no longer active: judge call dropped", debate_id)
                _dropped(debate, fields, DropReason.STOPPED)
                return None
            call = JudgeCall.objects.create(debate_id=debate_id, **fields)
            with events.together(debate_id):
                if call.status == StepStatus.ERROR:
                    events.step_failed(debate_id, step=f"judge {call.kind}", **call.error)
                events.judge_call_stored(call)
                if step is not None:
                    _record(debate_id, step, failed=call.status == StepStatus.ERROR)
            return call
    except IntegrityError:
        stored = JudgeCall.objects.filter(debate_id=debate_id, **key).first()
        if stored is None:
            raise
        _dropped(debate, fields, DropReason.DUPLICATE)
        return stored


def _dropped(debate: Debate, fields: dict, reason: str) -> None:
    """Keep what a judge call whose answer is not stored used and cost."""
    kind = "judge_scores" if fields["kind"] == JudgeCallKind.SCORES else "judge_summary"
    dropped_call_record(
        fields=fields, kind=kind, reason=reason, debate=debate, round_number=fields["round"]
    )


def _record(debate_id: int, step: StepKey, *, failed: bool) -> None:
    """Record the outcome of a judge step in the plan: failed when no judge answered
    (the debate goes on all the same)."""
    transitions.step_recorded(debate_id=debate_id, key=step, status=FAILED if failed else DONE)


# -- the round summary ------------------------------------------------------------------


def round_summary_text(*, debate_id: int, round_number: int, tally: bool = True) -> str:
    """Return the judge's stored summary of round ``round_number``, or ``""`` when there
    is none (no judge, the call failed, or its answer held nothing usable); ``tally``:
    with the engine's tally of the round (``summary_text``)."""
    result = (
        JudgeCall.objects.filter(
            debate_id=debate_id,
            kind=JudgeCallKind.ROUND_SUMMARY,
            round=round_number,
            judge=0,
            status=StepStatus.OK,
        )
        .exclude(parse_status=ParseStatus.FAILED)
        .order_by()
        .values_list("result", flat=True)
        .first()
    )
    if not isinstance(result, dict):
        return ""
    return result.get("text", "") if tally else summary_text(result, tally=False)


def judge_summary_ask(*, debate_id: int, round_number: int, cached_only: bool) -> None:
    """Have the judge summarise round ``round_number`` of a running debate, once.
    ``cached_only``: only the model-call cache may answer (``call_model``)."""
    debate = _judged(debate_id, ACTIVE_STATUSES, (JUDGE_ROUND, round_number, None))
    if debate is None or not 1 <= round_number < debate.max_rounds:
        return
    stored = JudgeCall.objects.filter(
        debate_id=debate_id, kind=JudgeCallKind.ROUND_SUMMARY, round=round_number, judge=0
    )
    if stored.exists():
        return  # a judge call is never made twice
    entries = [_entry(message) for message in _messages(debate_id, round=round_number)]
    symbols = tuple(debate.symbols)
    context = SummaryContext(
        round=round_number,
        max_rounds=debate.max_rounds,
        symbols=symbols,
        messages=tuple(entries),
        previous=round_summary_text(
            debate_id=debate_id, round_number=round_number - 1, tally=False
        ),
        output_mode=debate.judge_model.output_mode,
    )
    system, user = build_summary_prompt(context)
    actions: dict[str, list[str]] = {}
    for entry in entries:
        for decision in entry.decisions:
            actions.setdefault(decision.symbol, []).append(decision.action.value)
    request = ModelRequest(
        system=system,
        user=user,
        kind="judge_summary",
        round=round_number,
        max_rounds=debate.max_rounds,
        symbols=symbols,
        snapshot=debate.market_snapshot,
        prior_actions={symbol: tuple(found) for symbol, found in actions.items()},
        seed=debate_id * 100 + 80 + round_number,
    )
    temperature = debate.judge_model.temperature
    outcome = call_model(
        _config(debate, temperature),
        request,
        still_wanted=debate_still(debate_id, ACTIVE_STATUSES),
        owner_id=debate.owner_id,
        cache=debate.cache,
        scope=CallScope(debate_id=debate_id, role=JUDGE),
        refusal=model_refusal(debate.judge_model, debate.judge_model_id),
        cached_only=cached_only,
    )
    if outcome is None:
        return
    fields = _call_fields(outcome)
    if outcome.response is not None:
        summary = parse_summary(outcome.response.text, context)
        fields.update(result=summary.to_dict(), parse_status=_parse_status(summary.status))
    _store_call(
        debate,
        ACTIVE_STATUSES,
        (JUDGE_ROUND, round_number, None),
        kind=JudgeCallKind.ROUND_SUMMARY,
        round=round_number,
        judge=0,
        temperature=temperature,
        system=system,
        user=user,
        **fields,
    )


def _parse_status(status: SummaryStatus) -> str:
    return ParseStatus(status.value).value


# -- the scores --------------------------------------------------------------------------


def judge_scores_ask(*, debate_id: int, cached_only: bool) -> None:
    """Have the judge (1 or 3 calls) score every participant of a voting debate, once.
    ``cached_only``: only the model-call cache may answer (``call_model``)."""
    statuses = (DebateStatus.VOTING,)
    debate = _judged(debate_id, statuses, (JUDGE_FINAL, None, None))
    if debate is None or JudgeScore.objects.filter(debate_id=debate_id).exists():
        return
    seats = list(Participant.objects.filter(debate_id=debate_id).order_by("speak_order"))
    context = _scores_context(debate, seats)
    system, user = build_scores_prompt(context)
    request = ModelRequest(
        system=system,
        user=user,
        kind="judge_scores",
        round=debate.max_rounds,
        max_rounds=debate.max_rounds,
        symbols=tuple(debate.symbols),
        snapshot=debate.market_snapshot,
        seed=debate_id * 100 + 90,
        labels=context.labels,
    )
    stored = {
        call.judge: call
        for call in JudgeCall.objects.filter(debate_id=debate_id, kind=JudgeCallKind.SCORES)
    }
    temperatures = judge_temperatures(debate.judge_count, debate.judge_model.temperature)
    calls: list[JudgeCall] = []
    for judge, temperature in enumerate(temperatures):
        call = stored.get(judge) or _ask_scores(
            debate, request, (judge, temperature), context.labels, cached_only
        )
        if call is None:
            return  # the debate stopped meanwhile
        calls.append(call)
    _store_scores(debate_id, seats, calls)


def _scores_context(debate: Debate, seats: list[Participant]) -> ScoresContext:
    by_seat: dict[int, list[HistoryEntry]] = {seat.pk: [] for seat in seats}
    for message in _messages(debate.pk):
        by_seat[message.participant_id].append(_entry(message))
    votes: dict[int, list[CoinDecision]] = {seat.pk: [] for seat in seats}
    for vote in Vote.objects.filter(debate_id=debate.pk, abstained=False).order_by("symbol"):
        votes[vote.participant_id].append(
            CoinDecision(
                vote.symbol,
                Action(vote.action),
                vote.confidence,
                vote.leverage,
                vote.position_pct,
                vote.stop_loss,
                vote.take_profit,
                vote.reasoning,
            )
        )
    judged = tuple(
        JudgedSeat(_label(seat), seat.personality, tuple(by_seat[seat.pk]), tuple(votes[seat.pk]))
        for seat in seats
    )
    return ScoresContext(
        symbols=tuple(debate.symbols),
        seats=judged,
        # the rendering stored at prepare; made here only for a debate prepared before it was
        market_summary=debate.market_summary or market_summary(debate.market_snapshot),
        output_mode=debate.judge_model.output_mode,
    )


def _ask_scores(
    debate: Debate,
    request: ModelRequest,
    seat: tuple[int, float],
    labels: tuple[str, ...],
    cached_only: bool,
) -> JudgeCall | None:
    """Ask judge ``seat`` (its number and temperature) for its scores, and store them."""
    judge, temperature = seat
    statuses = (DebateStatus.VOTING,)
    outcome = call_model(
        _config(debate, temperature),
        request,
        still_wanted=debate_still(debate.pk, statuses),
        owner_id=debate.owner_id,
        cache=debate.cache,
        scope=CallScope(debate_id=debate.pk, role=JUDGE),
        refusal=model_refusal(debate.judge_model, debate.judge_model_id),
        cached_only=cached_only,
    )
    if outcome is None:
        return None
    fields = _call_fields(outcome)
    if outcome.response is not None:
        sheet = parse_scores(outcome.response.text, labels)
        fields.update(
            result=sheet.to_dict(),
            parse_status=(
                ParseStatus.FAILED
                if not sheet.usable
                else ParseStatus.PARTIAL
                if sheet.problems
                else ParseStatus.OK
            ),
        )
    return _store_call(
        debate,
        statuses,
        None,
        kind=JudgeCallKind.SCORES,
        round=debate.max_rounds,
        judge=judge,
        temperature=temperature,
        system=request.system,
        user=request.user,
        **fields,
    )


def _sheet(call: JudgeCall) -> ScoreSheet | None:
    """Return the score sheet stored on a call, or None for a failed call."""
    if call.status != StepStatus.OK or not isinstance(call.result, dict):
        return None
    items = {
        label: {name: ItemScore(item["value"], item["reason"]) for name, item in scored.items()}
        for label, scored in call.result.get("items", {}).items()
    }
    return ScoreSheet(items, tuple(call.result.get("problems", ())))


def _failure(calls: list[JudgeCall]) -> str:
    """Return why no score exists when every call failed (``""`` otherwise: the
    aggregation says why)."""
    if any(call.status == StepStatus.OK for call in calls):
        return ""
    codes = sorted({(call.error or {}).get("code", "unknown") for call in calls})
    return "judge call failed: " + ", ".join(codes)


def _store_scores(debate_id: int, seats: list[Participant], calls: list[JudgeCall]) -> None:
    labels = [_label(seat) for seat in seats]
    results = aggregate_scores([_sheet(call) for call in calls], labels, failure=_failure(calls))
    rows = [
        JudgeScore(
            debate_id=debate_id,
            participant=seat,
            items={name: item.to_dict() for name, item in results[label].items.items()},
            score=results[label].score,
            agreement=results[label].agreement,
            judges=results[label].judges,
            missing=results[label].missing[:300],
        )
        for seat, label in zip(seats, labels, strict=True)
    ]
    try:
        with transaction.atomic():
            if not Debate.objects.filter(pk=debate_id, status=DebateStatus.VOTING).exists():
                return
            stored = JudgeScore.objects.bulk_create(rows)
            with events.together(debate_id):
                events.judge_scores_stored(debate_id, stored)
                unscored = all(row.score is None for row in rows)
                _record(debate_id, (JUDGE_FINAL, None, None), failed=unscored)
    except IntegrityError:
        if not JudgeScore.objects.filter(debate_id=debate_id).exists():
            raise
        logger.info("debate %s: another copy stored the judge's scores", debate_id)


def judge_weights(*, debate_id: int) -> dict[str, float]:
    """Return each scored voter's judge score, by participant id as the consensus names
    voters (empty when every score is missing)."""
    scores = (
        JudgeScore.objects.filter(debate_id=debate_id, score__isnull=False)
        .order_by()
        .values_list("participant_id", "score")
    )
    return {str(participant): score for participant, score in scores}
