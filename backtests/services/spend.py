"""What the model calls of a backtest's steps took, by the calls each rule spends
(``backtests.engine.spend``): every call of the steps' debates, their round-1 openings,
and the budget-matched baseline's answers. Each call counts what it took when a model
was called for it (``Usage.answer_tokens``), so a re-run from the cache reads the same.
"""

from __future__ import annotations

from decimal import Decimal

from django.db.models import Q, Sum

from backtests.engine.spend import DEBATE_CALLS, OPENINGS, SAMPLES, Outlay
from backtests.models import Backtest
from debates.models import Ballot, JudgeCall, Message

_SUMS = {"tokens": Sum("answer_tokens"), "cost": Sum("answer_cost_usd")}
_OPENING = Q(round=1)


def _outlay(found: dict, suffix: str = "") -> Outlay:
    return Outlay(found[f"tokens{suffix}"] or 0, found[f"cost{suffix}"] or Decimal(0))


def backtest_outlays(backtest: Backtest) -> dict[str, Outlay]:
    """Return the outlay of each kind of calls of ``backtest``'s steps: ``DEBATE_CALLS``
    (turns, ballots, judge calls), ``OPENINGS`` (round-1 turns) and ``SAMPLES`` (the
    budget-matched baseline's answers). One query a kind of stored call."""
    of_backtest = Q(debate__backtest_step__backtest=backtest)
    turns = Message.objects.filter(of_backtest).aggregate(
        **_SUMS,
        tokens_1=Sum("answer_tokens", filter=_OPENING),
        cost_1=Sum("answer_cost_usd", filter=_OPENING),
    )
    debate = _outlay(turns)
    for model in (Ballot, JudgeCall):
        debate += _outlay(model.objects.filter(of_backtest).aggregate(**_SUMS))
    return {DEBATE_CALLS: debate, OPENINGS: _outlay(turns, "_1"), SAMPLES: Outlay()}
