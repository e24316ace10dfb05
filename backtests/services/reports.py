"""The report of a backtest: what its stored debates decided, simulated under every rule.

It reads each step's debate once (decisions, round-1 openings, final votes, the
baseline's answers), builds the
price tapes of the coins traded from the bundled dataset, runs every rule through the
same simulated account (``backtests.engine``), and returns the JSON stored on the
backtest: per rule its metrics, equity curve (a point per step, then the end) and
trades, and for a rule that reads model answers what its calls spent per unit of edge
(``engine.spend``); how the budget-matched baseline's tokens matched the debate's at
each step (``budget_match``, with a baseline); the granularity of each stretch of the
window; the steps at each level, those skipped (L0) and why; the model calls, tokens and
time the run spent. A skipped step decides nothing new, for every rule: an open
position stays open, its stop and target checked on every candle.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import fields, replace
from datetime import datetime, timedelta
from decimal import Decimal
from itertools import accumulate
from typing import Any

from backtests.engine.books import iso
from backtests.engine.portfolio import Intent, Trade
from backtests.engine.rules import BUY_AND_HOLD, Account, RuleRun, StepRecord, run_rules
from backtests.engine.spend import Outlay, calls_of, edge_costs
from backtests.engine.tape import Tape
from backtests.models import Backtest, BacktestStep, BaselineAnswer
from backtests.services.spend import backtest_outlays, baseline_label, budget_match
from debates.engine.consensus import calibrated_weight
from debates.engine.digest import participant_label
from debates.engine.gate import L0
from debates.engine.types import Action, CoinDecision
from debates.models import Debate, DebateStatus, Decision, Message, StepStatus, Vote
from debates.providers.pricing import usd_text
from debates.selectors import spend_of
from evaluations import selectors
from evaluations.services import consensus_limits
from strategies.market.dataset import DATASET_END, replay_stretches
from strategies.market.sources import to_ms
from traders.services.guards import guard_limits
from traders.services.orders import strategy_risk_limits

# A vote's fields that make a decision, in ``CoinDecision``'s order.
TRADE_FIELDS = tuple(f.name for f in fields(CoinDecision) if f.name != "reasoning")
# Why a rule's trades closed, as its report counts them: a close decision (or an opening
# the other way), the stop, the target, a stop that could not rest, the window's end. A
# guard never closes a position: it pauses the openings (``guard_trips``).
CLOSE_REASONS = ("decision", "stop", "target", "unwound", "end")
# How many of a rule's refusal reasons the report lists (the most frequent first).
REFUSAL_REASONS = 10


def step_records(
    backtest: Backtest, *, before: int | None = None, votes: bool = True
) -> list[StepRecord]:
    """Return every step of ``backtest`` (those before index ``before`` when given) as
    what its debate stored, in time order; without its openings and final votes unless
    ``votes`` (the debate rule reads its decisions alone)."""
    stored = BacktestStep.objects.filter(backtest=backtest)
    if before is not None:
        stored = stored.filter(index__lt=before)
    steps = list(
        stored.select_related("debate")
        .only("index", "as_of", "debate__status", "debate__symbol", "debate__symbols")
        .order_by("index")
    )
    debate_ids = [step.debate_id for step in steps if step.debate_id is not None]
    decisions = _decisions(debate_ids)
    openings = _openings(debate_ids) if votes else {}
    ballots = _ballots(debate_ids) if votes else {}
    samples = _samples(debate_ids) if votes else {}
    return [
        StepRecord(
            index=step.index,
            at_ms=to_ms(step.as_of),
            primary=(step.debate.symbol if step.debate else "") or backtest.symbol,
            symbols=tuple(step.debate.symbols) if step.debate else (),
            completed=step.debate is not None and step.debate.status == DebateStatus.COMPLETED,
            decisions=decisions.get(step.debate_id, ()),
            openings=openings.get(step.debate_id, {}),
            ballots=ballots.get(step.debate_id, {}),
            samples=samples.get(step.debate_id, ()),
        )
        for step in steps
    ]


def _decisions(debate_ids: list[int]) -> dict[int, tuple[Intent, ...]]:
    """Return the decisions of each debate, as the simulated account takes them."""
    found: dict[int, list[Intent]] = defaultdict(list)
    intent_fields = [f.name for f in fields(Intent)]
    for row in Decision.objects.filter(debate_id__in=debate_ids).values(
        "debate_id", *intent_fields
    ):
        found[row.pop("debate_id")].append(Intent(**row))
    return {debate_id: tuple(intents) for debate_id, intents in found.items()}


def _openings(debate_ids: list[int]) -> dict[int, dict[str, tuple[CoinDecision, ...]]]:
    """Return each debate's round-1 decisions by participant label (``P1``)."""
    found: dict[int, dict[str, tuple[CoinDecision, ...]]] = defaultdict(dict)
    for debate_id, order, said in Message.objects.filter(
        debate_id__in=debate_ids, round=1, status=StepStatus.OK
    ).values_list("debate_id", "participant__speak_order", "decisions"):
        found[debate_id][participant_label(order + 1)] = tuple(
            CoinDecision.from_dict(d) for d in said
        )
    return found


def _ballots(debate_ids: list[int]) -> dict[int, dict[str, tuple[CoinDecision, ...]]]:
    """Return each debate's final votes (abstentions left out) by participant label."""
    found: dict[int, dict[str, list[CoinDecision]]] = defaultdict(lambda: defaultdict(list))
    for debate_id, order, *values in Vote.objects.filter(
        debate_id__in=debate_ids, abstained=False
    ).values_list("debate_id", "participant__speak_order", *TRADE_FIELDS):
        symbol, action, *numbers = values
        found[debate_id][participant_label(order + 1)].append(
            CoinDecision(symbol, Action(action), *numbers)
        )
    return {
        debate_id: {label: tuple(votes) for label, votes in seats.items()}
        for debate_id, seats in found.items()
    }


def _samples(debate_ids: list[int]) -> dict[int, tuple[tuple[CoinDecision, ...], ...]]:
    """Return each step's budget-matched baseline answers, in their order, by debate."""
    found: dict[int, list[tuple[CoinDecision, ...]]] = defaultdict(list)
    for debate_id, said in (
        BaselineAnswer.objects.filter(debate_id__in=debate_ids)
        .order_by("debate_id", "sample")
        .values_list("debate_id", "decisions")
    ):
        found[debate_id].append(tuple(CoinDecision.from_dict(d) for d in said))
    return {debate_id: tuple(answers) for debate_id, answers in found.items()}


def _with_weights(backtest: Backtest, steps: list[StepRecord]) -> list[StepRecord]:
    """Return ``steps`` with each seat's calibrated weight at its step: from the reviews
    of the seat's model and personality known by the step's instant, in this backtest's
    debates only (one query). Reviews of other debates of the same models (another
    backtest over the same window, made before or after this one) would make the report
    depend on what else was run."""
    seats = [
        (participant_label(order + 1), (seat["ai_model"], seat["personality"]))
        for order, seat in enumerate(backtest.participants)
    ]
    history = selectors.voter_history(
        [voter for _, voter in seats], until=backtest.end, scope=_scope(backtest)
    )
    known = {
        voter: ([to_ms(at) for at, _ in judged], list(accumulate(right for _, right in judged)))
        for voter, judged in history.items()
    }

    def weights(at_ms: int) -> dict[str, float]:
        found = {}
        for label, voter in seats:
            times, rights = known[voter]
            reviewed = bisect_right(times, at_ms)
            found[label] = calibrated_weight(rights[reviewed - 1] if reviewed else 0, reviewed)
        return found

    return [replace(step, weights=weights(step.at_ms)) for step in steps]


def step_tapes(backtest: Backtest, steps: list[StepRecord]) -> dict[str, Tape]:
    """Return the tapes of the coins ``steps`` trade, over the backtest's window."""
    symbols = {step.primary for step in steps if step.primary}
    if backtest.coins == "all":
        symbols |= {symbol for step in steps for symbol in step.symbols}
    # The tapes reach past the window by the scoring horizon (the dataset's end at most).
    reach = min(backtest.end + timedelta(minutes=backtest.horizon_minutes), DATASET_END)
    return {symbol: Tape.from_dataset(symbol, backtest.start, reach) for symbol in sorted(symbols)}


def _usage(backtest: Backtest, finished_at: datetime) -> dict[str, Any]:
    """Return the model calls, cache hits, tokens, cost and seconds the run spent."""
    spend = spend_of(backtest_id=backtest.pk)
    started = backtest.started_at or backtest.created_at
    return {
        "model_calls": spend.calls,
        "cached_calls": spend.cached_calls,
        "attempts": spend.attempts,
        "prompt_tokens": spend.prompt_tokens,
        "completion_tokens": spend.completion_tokens,
        "cached_input_tokens": spend.cached_input_tokens,
        "estimated_tokens": spend.estimated_tokens,
        "cost_usd": usd_text(spend.cost_usd),
        "seconds": round((finished_at - started).total_seconds(), 3),
    }


def _money(value: Decimal) -> float:
    return float(value)


def _trade(trade: Trade) -> dict[str, Any]:
    return {
        "symbol": trade.symbol,
        "side": trade.side,
        "entry_at": iso(trade.entry_ms),
        "entry_price": _money(trade.entry_price),
        "exit_at": iso(trade.exit_ms),
        "exit_price": _money(trade.exit_price),
        "quantity": _money(trade.quantity),
        "leverage": trade.leverage,
        "pnl": _money(trade.pnl),
        "fees": _money(trade.fees),
        "funding": _money(trade.funding),
        "reason": trade.reason,
    }


def closed_by(trades: Iterable[Trade]) -> dict[str, int]:
    """Return how many of ``trades`` closed for each of ``CLOSE_REASONS``."""
    counted = Counter(trade.reason for trade in trades)
    return {reason: counted[reason] for reason in CLOSE_REASONS}


def closed_by_text(counts: dict[str, int]) -> str:
    """Return a rule's ``closed_by`` in words: "decision 3, stop 1" ("-": none closed)."""
    return ", ".join(f"{reason} {n}" for reason, n in counts.items() if n) or "-"


def _spend(run: RuleRun, outlays: dict[str, Outlay], hold_return: float | None) -> dict | None:
    """Return what rule ``run`` spent and what that bought (``engine.spend``), or None
    for a rule that reads no model answer."""
    calls = calls_of(run.key)
    if calls is None:
        return None
    figures = edge_costs(outlays[calls], run.metrics, hold_return)
    return {**figures, "cost_usd": usd_text(figures["cost_usd"])}


def _rule(run: RuleRun, spend: dict | None) -> dict[str, Any]:
    reasons = Counter(refusal.reason for refusal in run.refusals)
    return {
        "key": run.key,
        "label": run.label,
        "metrics": run.metrics.to_dict(),
        "spend": spend,
        "equity": [[at_ms, _money(value)] for at_ms, value in run.curve],
        "trades": [_trade(trade) for trade in run.trades],
        "closed_by": closed_by(run.trades),
        "guard_trips": [
            {"at": iso(trip.at_ms), "guard": trip.guard, "reason": trip.reason}
            for trip in run.trips
        ],
        "refused": len(run.refusals),
        "refusal_reasons": [
            {"reason": reason, "count": count}
            for reason, count in reasons.most_common(REFUSAL_REASONS)
        ],
    }


def backtest_report(*, backtest: Backtest, finished_at: datetime) -> dict[str, Any]:
    """Return the report of ``backtest``, every step of which has ended."""
    steps = _with_weights(backtest, step_records(backtest))
    skips = list(
        BacktestStep.objects.filter(backtest=backtest)
        .exclude(skipped="")
        .order_by("index")
        .values_list("index", "as_of", "skipped", "skip_reason")
    )
    skipped = {index for index, *_ in skips}
    scope = _scope(backtest)
    return {
        "rules": _rules(backtest, _runs(backtest, steps)),
        "stretches": [
            {"timeframe": s.timeframe, "from": iso(to_ms(s.start)), "to": iso(to_ms(s.end))}
            for s in replay_stretches(backtest.start, backtest.end)
        ],
        "steps": len(steps),
        "completed_steps": sum(step.completed for step in steps),
        "unfinished_steps": [
            {"index": step.index, "at": iso(step.at_ms)}
            for step in steps
            if not step.completed and step.index not in skipped
        ],
        "levels": _levels(backtest, len(skips)),
        "skipped": _skipped(skips),
        "budget_match": budget_match(backtest),
        "usage": _usage(backtest, finished_at),
        "ledger": selectors.ledger(scope).to_dict(),
        "calibration": selectors.calibration(scope),
        "monitors": selectors.monitor_report(scope),
        "leakage": selectors.contamination(
            start=backtest.start,
            ai_model_ids=[seat["ai_model"] for seat in backtest.participants],
        ),
    }


def _rules(backtest: Backtest, runs: list[RuleRun]) -> list[dict[str, Any]]:
    """Return each rule's part of the report, with what the rules that read model
    answers spent, against buy-and-hold's return."""
    outlays = backtest_outlays(backtest)
    hold = next((run.metrics.total_return for run in runs if run.key == BUY_AND_HOLD), None)
    return [_rule(run, _spend(run, outlays, hold)) for run in runs]


def account_of(backtest: Backtest) -> Account:
    """Return the simulated account every rule of ``backtest`` starts from."""
    strategy = backtest.strategy
    return Account(
        balance=backtest.starting_balance,
        fee_rate=backtest.fee_rate,
        slippage_bps=backtest.slippage_bps,
        limits=strategy_risk_limits(strategy),
        hedging=bool(strategy and strategy.allow_hedging),
        guards=guard_limits(strategy),
    )


def _runs(backtest: Backtest, steps: list[StepRecord]) -> list[RuleRun]:
    """Return every rule run through the simulated account over ``steps`` (none when no
    step's debate completed: there is nothing to score)."""
    if not any(step.completed for step in steps):
        return []
    strategy = backtest.strategy
    return run_rules(
        steps,
        seats=[
            (participant_label(order + 1), seat["personality"])
            for order, seat in enumerate(backtest.participants)
        ],
        tapes=step_tapes(backtest, steps),
        account=account_of(backtest),
        consensus_limits=consensus_limits(strategy),
        coins=backtest.coins,
        end_ms=to_ms(backtest.end),
        step_minutes=backtest.interval_minutes,
        horizon_ms=backtest.horizon_minutes * 60_000,
        baseline=baseline_label(backtest),
    )


def _skipped(skips: list[tuple[int, datetime, str, str]]) -> dict[str, Any]:
    """Return how many steps were skipped at L0, by reason code, and each one's reason."""
    return {
        "count": len(skips),
        "by_reason": dict(Counter(code for _, _, code, _ in skips)),
        "steps": [
            {"index": index, "at": iso(to_ms(as_of)), "level": L0, "reason": reason}
            for index, as_of, _, reason in skips
        ],
    }


def _levels(backtest: Backtest, skipped: int) -> dict[str, int]:
    """Return how many steps ran at each level: L0 (skipped), then each debate's level."""
    used = Counter(
        Debate.objects.filter(backtest_step__backtest=backtest).values_list("level_used", flat=True)
    )
    found = {L0: skipped} if skipped else {}
    found.update(sorted((level or "unknown", n) for level, n in used.items()))
    return found


def _scope(backtest: Backtest) -> selectors.Scope:
    return selectors.Scope(owner_id=backtest.owner_id, backtest_id=backtest.pk)
