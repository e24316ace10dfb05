"""The rules a backtest scores side by side, each run through the same simulated account.

Every rule reads the same stored debates and the same candles, at no extra model call:

- ``debate``: each step's consensus decisions, as stored.
- ``buy_and_hold``: the primary coin bought with the whole balance at 1x at the first
  step and sold at the end, held as the coin itself (no funding): the price ratio less
  the two fees.
- ``flat``: never trades (always wait).
- ``round1_majority``: the consensus rule (``debates.engine.consensus.decide``, with the
  strategy's limits) applied to the round-1 openings' per-coin positions, each opening a
  ballot: what the same models would have decided with no debate.
- ``seat:P<n>``: each participant alone, its own final ballot as the decision (passed
  through the same consensus rule, so the strategy's clamps and defaults apply).
- ``weighting:confidence`` and ``weighting:calibrated``: the final ballots of every
  participant through the consensus rule, weighed by confidence alone, then by
  confidence times each voter's calibrated weight at the step (``StepRecord.weights``,
  from the backtest's own reviews known by the step's instant): the two weightings side
  by side over the same ballots, whichever the debates used.
- ``budget_matched`` (a backtest with a baseline only; it costs model calls): the
  answers of one model asked the round-1 prompt again and again with the debate's
  tokens at the step (``backtests.engine.baseline``), each answer a ballot of the
  consensus rule.

A step whose debate did not complete decides nothing, for every rule. ``coins``
``primary`` executes the primary coin's decision only; ``all`` every executable
decision, the primary coin's first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from backtests.engine.baseline import answer_ballots
from backtests.engine.guards import GuardTrip
from backtests.engine.metrics import Metrics, measure
from backtests.engine.portfolio import (
    CLOSING_ACTIONS,
    OPENING_ACTIONS,
    Intent,
    Portfolio,
    Refusal,
    Trade,
)
from backtests.engine.tape import Tape
from debates.engine.consensus import (
    Ballot,
    CoinConsensus,
    ConsensusLimits,
    decide,
    round1_majority,
)
from debates.engine.types import CoinDecision
from traders.guards import GuardLimits
from traders.risk import RiskLimits

EXECUTABLE = (*OPENING_ACTIONS, *CLOSING_ACTIONS)
DEBATE, BUY_AND_HOLD, FLAT, ROUND1 = "debate", "buy_and_hold", "flat", "round1_majority"
BUDGET_MATCHED = "budget_matched"


@dataclass(frozen=True)
class StepRecord:
    """What a step's debate stored, as plain values: decisions, openings and ballots.

    ``openings`` and ``ballots`` map each participant's label (P1, P2, ...) to its
    round-1 per-coin positions and its final votes (abstentions left out); ``weights``
    to its calibrated weight at the step. ``samples`` are the budget-matched baseline's
    answers at the step, each its per-coin positions (none for an unusable answer).
    """

    index: int
    at_ms: int
    primary: str
    symbols: tuple[str, ...]
    completed: bool
    decisions: tuple[Intent, ...] = ()
    openings: Mapping[str, tuple[CoinDecision, ...]] = field(default_factory=dict)
    ballots: Mapping[str, tuple[CoinDecision, ...]] = field(default_factory=dict)
    weights: Mapping[str, float] = field(default_factory=dict)
    samples: tuple[tuple[CoinDecision, ...], ...] = ()


@dataclass(frozen=True)
class Account:
    """The simulated account every rule starts from: its money, the strategy's risk
    limits, whether it hedges, and its portfolio guards."""

    balance: Decimal
    fee_rate: Decimal
    slippage_bps: Decimal
    limits: RiskLimits
    hedging: bool = False
    guards: GuardLimits = field(default_factory=GuardLimits)


@dataclass(frozen=True)
class RuleRun:
    """One rule's run: its metrics, equity curve (a point per step, then the end),
    trades and refused decisions."""

    key: str
    label: str
    metrics: Metrics
    curve: tuple[tuple[int, Decimal], ...]
    trades: tuple[Trade, ...]
    refusals: tuple[Refusal, ...]
    trips: tuple[GuardTrip, ...] = ()


def _intent(result: CoinConsensus) -> Intent:
    return Intent(
        symbol=result.symbol,
        action=result.action.value,
        position_pct=result.position_pct,
        leverage=result.leverage,
        stop_loss=result.stop_loss,
        take_profit=result.take_profit,
    )


def round1_intents(step: StepRecord, limits: ConsensusLimits) -> tuple[Intent, ...]:
    """Return the consensus of the round-1 openings of ``step``, coin by coin."""
    return tuple(_intent(result) for result in round1_majority(step.openings, step.symbols, limits))


def seat_intents(step: StepRecord, label: str, limits: ConsensusLimits) -> tuple[Intent, ...]:
    """Return the decisions of participant ``label`` alone: its ballot through the rule."""
    ballots = [Ballot(label, d) for d in step.ballots.get(label, ())]
    return tuple(_intent(result) for result in decide(ballots, step.symbols, limits))


def sample_intents(step: StepRecord, limits: ConsensusLimits) -> tuple[Intent, ...]:
    """Return the consensus of the budget-matched baseline's answers of ``step``, each
    answer a ballot (its first position on a coin)."""
    ballots = answer_ballots(step.samples)
    return tuple(_intent(result) for result in decide(ballots, step.symbols, limits))


def weighted_intents(
    step: StepRecord, limits: ConsensusLimits, *, calibrated: bool
) -> tuple[Intent, ...]:
    """Return the consensus of every participant's final ballot of ``step``, weighed by
    confidence, or by confidence times the step's calibrated weights."""
    ballots = [Ballot(label, d) for label, voted in step.ballots.items() for d in voted]
    weights = dict(step.weights) if calibrated else None
    return tuple(
        _intent(result) for result in decide(ballots, step.symbols, limits, voter_weights=weights)
    )


def executed(step: StepRecord, intents: Sequence[Intent], coins: str) -> tuple[Intent, ...]:
    """Return the intents of ``step`` its account executes: ``primary`` or ``all`` coins,
    the primary first, hold and wait left out."""
    chosen = [i for i in intents if i.action in EXECUTABLE]
    if coins == "primary":
        chosen = [i for i in chosen if i.symbol == step.primary]
    return tuple(sorted(chosen, key=lambda i: (i.symbol != step.primary, i.symbol)))


def rule_plan(
    steps: Sequence[StepRecord], decide_step: Callable[[StepRecord], Sequence[Intent]], coins: str
) -> list[tuple[int, tuple[Intent, ...]]]:
    """Return each step's instant and the intents a rule deciding by ``decide_step``
    executes then (``executed``); a step whose debate did not complete, none."""
    return [
        (step.at_ms, executed(step, decide_step(step), coins) if step.completed else ())
        for step in steps
    ]


def account_portfolio(account: Account, tapes: Mapping[str, Tape]) -> Portfolio:
    """Return a fresh simulated ``account`` trading the coins of ``tapes``."""
    return Portfolio(
        balance=account.balance,
        fee_rate=account.fee_rate,
        tapes=tapes,
        limits=account.limits,
        slippage_bps=account.slippage_bps,
        hedging=account.hedging,
        guards=account.guards,
    )


def replay(
    plan: Sequence[tuple[int, Sequence[Intent]]],
    *,
    tapes: Mapping[str, Tape],
    account: Account,
    until_ms: int,
) -> Portfolio:
    """Return the account after ``plan`` (each earlier step's instant and the intents
    executed then), walked to ``until_ms`` and measured against its guards there: what a
    step at ``until_ms`` finds, as ``run_rule`` finds it before that step's decisions."""
    portfolio = account_portfolio(account, tapes)
    for at_ms, intents in plan:
        portfolio.advance(at_ms)
        portfolio.execute(intents, at_ms)
    portfolio.advance(until_ms)
    portfolio.measure(until_ms)
    return portfolio


def run_rule(
    key: str,
    label: str,
    plan: Sequence[tuple[int, Sequence[Intent]]],
    *,
    tapes: Mapping[str, Tape],
    account: Account,
    end_ms: int,
    step_minutes: int,
    horizon_ms: int,
    hold: str | None = None,
) -> RuleRun:
    """Run one rule: ``plan`` holds each step's instant and the intents executed then.

    ``hold`` names a coin bought with the whole balance at the first step instead.
    """
    portfolio = account_portfolio(account, tapes)
    curve: list[tuple[int, Decimal]] = []
    exposed = 0
    hits: list[bool] = []
    for number, (at_ms, intents) in enumerate(plan):
        portfolio.advance(at_ms)
        curve.append((at_ms, portfolio.equity(at_ms)))
        if hold is not None:
            if number == 0:
                portfolio.buy_all(hold, at_ms)
        else:
            portfolio.execute(intents, at_ms)
            hits.extend(_hits(intents, tapes, at_ms, horizon_ms))
        exposed += bool(portfolio.positions)
    portfolio.finish(end_ms)
    curve.append((end_ms, portfolio.wallet))
    metrics = measure(
        curve=[value for _, value in curve],
        trades=portfolio.trades,
        balance=account.balance,
        step_minutes=step_minutes,
        exposed_steps=exposed,
        fees=portfolio.fees,
        funding=portfolio.funding,
        hits=hits,
    )
    return RuleRun(
        key=key,
        label=label,
        metrics=metrics,
        curve=tuple(curve),
        trades=tuple(portfolio.trades),
        refusals=tuple(portfolio.refusals),
        trips=tuple(portfolio.trips),
    )


def _hits(
    intents: Sequence[Intent], tapes: Mapping[str, Tape], at_ms: int, horizon_ms: int
) -> list[bool]:
    """Say for each opening intent whether the price went its way over the horizon."""
    hits = []
    for intent in intents:
        if intent.action not in OPENING_ACTIONS:
            continue
        tape = tapes[intent.symbol]
        later = at_ms + horizon_ms
        if later > tape.close_times[-1]:
            continue  # the dataset ends before the horizon does: not scored
        move = tape.fill_price(later) - tape.fill_price(at_ms)
        hits.append(move > 0 if intent.action == "open_long" else move < 0)
    return hits


def run_rules(
    steps: Sequence[StepRecord],
    *,
    seats: Sequence[tuple[str, str]],
    tapes: Mapping[str, Tape],
    account: Account,
    consensus_limits: ConsensusLimits,
    coins: str,
    end_ms: int,
    step_minutes: int,
    horizon_ms: int,
    baseline: str = "",
) -> list[RuleRun]:
    """Run every rule over ``steps`` (in time order, at least one with a primary coin);
    ``seats`` are (label, personality); ``baseline`` labels the budget-matched baseline
    (none without one). Buy-and-hold holds the first primary coin."""

    def plan(decide_step) -> list[tuple[int, tuple[Intent, ...]]]:
        return rule_plan(steps, decide_step, coins)

    common = {
        "tapes": tapes,
        "account": account,
        "end_ms": end_ms,
        "step_minutes": step_minutes,
        "horizon_ms": horizon_ms,
    }
    primary = next(step.primary for step in steps if step.primary)
    runs = [
        run_rule(DEBATE, "Debate consensus", plan(lambda s: s.decisions), **common),
        run_rule(
            BUY_AND_HOLD, f"Buy and hold {primary}", plan(lambda s: ()), hold=primary, **common
        ),
        run_rule(FLAT, "Flat (always wait)", plan(lambda s: ()), **common),
        run_rule(
            ROUND1,
            "Round-1 majority (no debate)",
            plan(lambda s: round1_intents(s, consensus_limits)),
            **common,
        ),
    ]
    for key, label, calibrated in (
        ("weighting:confidence", "Votes weighed by confidence", False),
        ("weighting:calibrated", "Votes weighed by calibrated confidence", True),
    ):
        runs.append(
            run_rule(
                key,
                label,
                plan(
                    lambda s, calibrated=calibrated: weighted_intents(
                        s, consensus_limits, calibrated=calibrated
                    )
                ),
                **common,
            )
        )
    for label, personality in seats:
        runs.append(
            run_rule(
                f"seat:{label}",
                f"{label} {personality} alone",
                plan(lambda s, label=label: seat_intents(s, label, consensus_limits)),
                **common,
            )
        )
    if baseline:
        decide_step = lambda s: sample_intents(s, consensus_limits)  # noqa: E731
        runs.append(run_rule(BUDGET_MATCHED, baseline, plan(decide_step), **common))
    return runs
