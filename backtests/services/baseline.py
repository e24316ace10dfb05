"""The budget-matched baseline of a backtest's steps: begun by the run, asked one answer
a task, and set beside the step's reviews.

A backtest with a ``baseline`` (``backtests.engine.baseline``) begins a step's once its
debate has ended and been reviewed, under the backtest's row lock (``baselines_move``,
called by the run's advance): it records the tokens the debate spent (the target) and
the seat whose model answers, and sends ``backtests.baseline_answer``. Each such task
asks one answer (``baseline_answer_ask``), through the model-call machinery every call
of a debate goes through (``call_model``: the model-call cache of the backtest, the
shared cap, the owner's daily token budgets, the model's deadline), with the seat's
round-1 request as a debate's turn builds it (``turn_request``) plus the book the
step's votes saw; stores it (``BaselineAnswer``, unique per step and number); and
sends the next task. The task that finds the tokens matched ends the baseline: it
writes the baseline's decisions beside the step's reviewed decisions
(``decision_reviews_baseline``) and advances the backtest, which counts the step done.

A task holds the step's claim while it asks, so one copy asks at a time, and marks the
baseline alive while it asks or waits for a model slot; a baseline that stops moving
for ``STALE_AFTER_FACTOR`` times ``BACKTEST_STALE_AFTER_S`` (its task lost) is sent
again by the run's advance. Answers are numbered, so a copy that asked an answer
another copy stored first stores nothing.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Sum
from django.utils import timezone

from arena.worker import send_on_commit
from backtests.engine.baseline import (
    OFF,
    answer_ballots,
    baseline_seat,
    stop_note,
    wants_another,
)
from backtests.models import ACTIVE_STATUSES, Backtest, BacktestStep, BaselineAnswer, BaselineState
from backtests.services import transitions
from debates.claims import StepDeferred, step_held
from debates.engine.consensus import decide
from debates.engine.plan import OPENING
from debates.engine.types import CoinDecision
from debates.models import DebateStatus, Participant, StepStatus
from debates.selectors import debate_call_models
from debates.services.calls import CallOutcome, call_model
from debates.services.steps import context
from debates.services.steps.turns import turn_request
from evaluations.services import consensus_limits, decision_reviews_baseline

# A baseline whose task made no progress for this long is sent again: longer than a
# debate's steps are given, since its task may wait its turn behind a run's debates.
STALE_AFTER_FACTOR = 4


def _send(step_id: int) -> None:
    from backtests.tasks import baseline_answer_task

    send_on_commit(baseline_answer_task.si(step_id))


def baselines_move(backtest: Backtest, *, ended: list[int], now: datetime) -> int:
    """Under the backtest's row lock: begin the baseline of each step whose debate is one
    of ``ended`` (they have ended, and been reviewed by this advance), send again one
    that stopped moving, and return how many of them still wait for their baseline."""
    if backtest.baseline == OFF:
        return 0
    stale = now - timedelta(seconds=settings.BACKTEST_STALE_AFTER_S * STALE_AFTER_FACTOR)
    waiting = 0
    for step in (
        BacktestStep.objects.filter(backtest=backtest, debate_id__in=ended)
        .exclude(baseline_state=BaselineState.DONE)
        .select_related("debate")
        .only("index", "baseline_state", "baseline_moved_at", "debate__status")
    ):
        if step.baseline_state == BaselineState.NONE:
            _begin(backtest, step, now)
        elif step.baseline_moved_at is None or step.baseline_moved_at < stale:
            _send_again(step.pk, now)
        waiting += step.baseline_state != BaselineState.DONE
    return waiting


def _send_again(step_id: int, now: datetime) -> None:
    """Send again the task of a baseline that stopped moving (once, however many
    advances find it)."""
    if transitions.baseline_beat(step_id, now):
        _send(step_id)


def _begin(backtest: Backtest, step: BacktestStep, now: datetime) -> None:
    """Begin the baseline of ``step``: the debate's tokens as its target and the seat
    whose model answers; a step whose debate did not complete has none (done)."""
    if step.debate.status != DebateStatus.COMPLETED:
        transitions.baseline_ended(step.pk, note="", source=BaselineState.NONE)
        step.baseline_state = BaselineState.DONE
        return
    seat = baseline_seat(backtest.baseline, step.index, len(backtest.participants))
    if transitions.baseline_begun(
        step.pk, target=debate_tokens(step.debate_id), seat=seat, now=now
    ):
        step.baseline_state = BaselineState.ASKING
        _send(step.pk)


def debate_tokens(debate_id: int) -> int:
    """Return the tokens every call of a debate took (``Usage.answer_tokens``), its
    dropped answers' included."""
    return sum(
        model.objects.filter(debate_id=debate_id).aggregate(t=Sum("answer_tokens"))["t"] or 0
        for model in debate_call_models()
    )


def baseline_answer_ask(*, step_id: int, holder: str) -> None:
    """Ask the next answer of a step's baseline in task ``holder``, or end the baseline
    once its tokens match (see the module docstring).

    Raise ``StepDeferred`` when no model slot frees up, or another copy holds the step;
    the baseline is alive all the same (its task is retried), so it is marked so.
    """
    try:
        with step_held(step=f"baseline:{step_id}", holder=holder, on_beat=lambda: _beat(step_id)):
            _ask_or_end(step_id)
    except StepDeferred:
        _beat(step_id)
        raise


def _beat(step_id: int) -> None:
    """Mark a step's baseline alive while its task asks."""
    transitions.baseline_beat(step_id, timezone.now())


def _ask_or_end(step_id: int) -> None:
    step = (
        BacktestStep.objects.filter(
            pk=step_id,
            baseline_state=BaselineState.ASKING,
            backtest__status__in=ACTIVE_STATUSES,
        )
        .select_related("backtest")
        .first()
    )
    if step is None:
        return  # ended, or its backtest stopped
    answers = list(
        BaselineAnswer.objects.filter(debate_id=step.debate_id).values_list(
            "sample", "status", "answer_tokens"
        )
    )
    answered = [tokens for _, status, tokens in answers if status == StepStatus.OK]
    failures = len(answers) - len(answered)
    if not wants_another(step.baseline_target, answered, failures):
        _end(step, stop_note(step.baseline_target, answered, failures))
        return
    sample = max((number for number, _, _ in answers), default=0) + 1
    seat = Participant.objects.filter(debate_id=step.debate_id, speak_order=step.baseline_seat)
    seat_id = seat.values_list("pk", flat=True).first() or 0
    now = context.step_context(
        step.debate_id, seat_id, DebateStatus.COMPLETED, (OPENING, 1, seat_id)
    )
    outcome = None if now is None else _ask(step, now, sample)
    if outcome is None:
        if Backtest.objects.filter(pk=step.backtest_id, status__in=ACTIVE_STATUSES).exists():
            _end(step, "no call could be made: its debate is gone, or a daily token cap passed")
        return
    _store(step, now, sample, outcome)


def _ask(step: BacktestStep, now: context.StepContext, sample: int) -> CallOutcome | None:
    """Ask answer ``sample`` of the seat's model; None when the call was not made (the
    backtest stopped while it waited for a slot, or a daily token cap passed)."""
    backtest_id = step.backtest_id
    return call_model(
        now.config,
        turn_request(now, 1, book=now.cast.book_text, sample=sample),
        still_wanted=lambda: Backtest.objects.filter(
            pk=backtest_id, status__in=ACTIVE_STATUSES
        ).exists(),
        owner_id=now.cast.owner_id,
        cache=now.cast.cache,
        limits=now.limits,
        refusal=now.refusal,
    )


def _store(step: BacktestStep, now: context.StepContext, sample: int, outcome: CallOutcome) -> None:
    """Store answer ``sample`` of the step's baseline and send the next task; a copy
    that another stored first stores nothing."""
    fields, parsed = context.answer_fields(outcome, now.cast.symbols)
    if parsed is not None:
        fields["decisions"] = [d.to_dict() for d in parsed.decisions]
    try:
        with transaction.atomic():
            BaselineAnswer.objects.create(
                debate_id=step.debate_id, participant=now.participant, sample=sample, **fields
            )
            _beat(step.pk)
            _send(step.pk)
    except IntegrityError:
        if not BaselineAnswer.objects.filter(debate_id=step.debate_id, sample=sample).exists():
            raise


def _end(step: BacktestStep, note: str) -> None:
    """End the baseline of ``step`` (once): its decisions beside the step's reviewed
    decisions, and the backtest advanced, which counts the step done."""
    from backtests.tasks import backtest_debate_moved_task

    with transaction.atomic():
        if not transitions.baseline_ended(step.pk, note=note):
            return
        decision_reviews_baseline(debate_id=step.debate_id, actions=baseline_actions(step))
        send_on_commit(backtest_debate_moved_task.si(step.debate_id))


def baseline_actions(step: BacktestStep) -> dict[str, str]:
    """Return the action the baseline's answers of ``step`` decided on each coin."""
    debate = step.debate
    answers = [
        tuple(CoinDecision.from_dict(d) for d in decisions)
        for decisions in BaselineAnswer.objects.filter(debate=debate)
        .order_by("sample")
        .values_list("decisions", flat=True)
    ]
    limits = consensus_limits(step.backtest.strategy)
    return {
        result.symbol: result.action.value
        for result in decide(answer_ballots(answers), debate.symbols, limits)
    }
