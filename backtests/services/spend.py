"""What the model calls of a backtest's steps took, by the calls each rule spends
(``backtests.engine.spend``): every call of the steps' debates, their round-1 openings,
and the budget-matched baseline's answers; and how the baseline's tokens matched the
debate's at each step. Each call counts what it took when a model was called for it
(``Usage.answer_tokens``), so a re-run from the cache reads the same.
"""

from __future__ import annotations

from collections import defaultdict
from decimal import Decimal
from typing import Any

from django.db.models import Q, Sum

from backtests.engine.baseline import OFF, ROTATE
from backtests.engine.books import iso
from backtests.engine.spend import DEBATE_CALLS, OPENINGS, SAMPLES, Outlay
from backtests.models import Backtest, BacktestStep, BaselineAnswer
from debates.engine.digest import participant_label
from debates.models import Message, StepStatus
from debates.selectors import debate_call_models
from strategies.market.sources import to_ms

_SUMS = {"tokens": Sum("answer_tokens"), "cost": Sum("answer_cost_usd")}
_OPENING = Q(round=1)


def _outlay(found: dict, suffix: str = "") -> Outlay:
    return Outlay(found[f"tokens{suffix}"] or 0, found[f"cost{suffix}"] or Decimal(0))


def backtest_outlays(backtest: Backtest) -> dict[str, Outlay]:
    """Return the outlay of each kind of calls of ``backtest``'s steps: ``DEBATE_CALLS``
    (turns, ballots, judge calls, dropped answers), ``OPENINGS`` (round-1 turns) and
    ``SAMPLES`` (the budget-matched baseline's answers). One query a kind of stored
    call."""
    of_backtest = Q(debate__backtest_step__backtest=backtest)
    turns = Message.objects.filter(of_backtest).aggregate(
        **_SUMS,
        tokens_1=Sum("answer_tokens", filter=_OPENING),
        cost_1=Sum("answer_cost_usd", filter=_OPENING),
    )
    debate = _outlay(turns)
    for model in debate_call_models():
        if model is not Message:  # counted above, with its openings apart
            debate += _outlay(model.objects.filter(of_backtest).aggregate(**_SUMS))
    samples = _outlay(BaselineAnswer.objects.filter(of_backtest).aggregate(**_SUMS))
    return {DEBATE_CALLS: debate, OPENINGS: _outlay(turns, "_1"), SAMPLES: samples}


def baseline_label(backtest: Backtest) -> str:
    """Return the label of the budget-matched baseline's rule ("" without one)."""
    if backtest.baseline == OFF:
        return ""
    if backtest.baseline == ROTATE:
        return "Budget-matched: each seat in turn"
    seat = backtest.participants[int(backtest.baseline[1:]) - 1]
    return f"Budget-matched: {backtest.baseline} {seat['personality']}"


def budget_match(backtest: Backtest) -> dict[str, Any] | None:
    """Return how the baseline's tokens matched the debate's at each step it answered:
    the seat, the answers (and how many failed), the target and the tokens answered,
    and why it stopped short, if it did; then the totals, and whether every step's
    tokens came within one answer's of its target. None without a baseline."""
    if backtest.baseline == OFF:
        return None
    answers: dict[int, list[tuple[str, int]]] = defaultdict(list)
    for debate_id, status, tokens in BaselineAnswer.objects.filter(
        debate__backtest_step__backtest=backtest
    ).values_list("debate_id", "status", "answer_tokens"):
        answers[debate_id].append((status, tokens))
    steps = []
    for step in BacktestStep.objects.filter(
        backtest=backtest, baseline_target__isnull=False
    ).order_by("index"):
        answered = [tokens for status, tokens in answers[step.debate_id] if status == StepStatus.OK]
        steps.append(
            {
                "index": step.index,
                "at": iso(to_ms(step.as_of)),
                "seat": participant_label(step.baseline_seat + 1),
                "answers": len(answered),
                "failed": len(answers[step.debate_id]) - len(answered),
                "target": step.baseline_target,
                "tokens": sum(answered),
                "largest_answer": max(answered, default=0),
                "note": step.baseline_note,
            }
        )
    return {
        "steps": steps,
        "target": sum(s["target"] for s in steps),
        "tokens": sum(s["tokens"] for s in steps),
        "within_one_answer": all(
            abs(s["tokens"] - s["target"]) <= s["largest_answer"] for s in steps if not s["note"]
        ),
    }
