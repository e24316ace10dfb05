"""Did the debate earn its tokens? The debate against another rule, step by step, with a
paired bootstrap over the steps. Pure: numpy, no Django.

Each reviewed step (a debate) pairs what the debate decided with what another rule
decided at the same step, on the same coins: the round-1 majority (at every reviewed
step), or the budget-matched baseline (at a backtest's step that has one). For each
step and rule: its calls judged right and judged wrong (the ledger's verdicts: a flat
one counts for neither), and the return of its calls, the mean over the step's coins of
the move its action bet on (the move for ``open_long`` and ``close_short``, minus the
move for ``open_short`` and ``close_long``, nothing for ``hold`` and ``wait``), in
percent, before fees and sizing.

The comparison gives each rule's hit rate (right over judged, over the steps) and mean
return a step, and the debate's difference from the other's (debate minus other) with
an interval from a **paired bootstrap over steps**: ``RESAMPLES`` draws of the steps
with replacement, each drawn step bringing both rules' figures with it, from a
generator seeded with ``SEED``, so the same reviews always give the same interval; the
interval holds the middle ``LEVEL`` of the resampled differences (percentiles).
``ahead`` is the share of resamples in which the debate's return was the higher.

The verdict is read against the budget-matched baseline where any step has one (the
same tokens, spent on one model), else against the round-1 majority (the same models,
no rounds after the first): the debate earned its tokens when the return difference's
interval lies above zero, did not when it lies below zero, and the data cannot tell
otherwise. Under ``MIN_STEPS`` paired steps there is no verdict.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from evaluations.scoring import FALLING, RIGHT, RISING, WRONG, LedgerRow, share

RESAMPLES = 2000
SEED = 50
LEVEL = 0.95
MIN_STEPS = 10
# How many step draws a batch of resamples holds at most (memory, not results).
DRAWS_PER_BATCH = 2_000_000
ROUND1, BASELINE = "round1_majority", "budget_matched"
AGAINST = {
    ROUND1: "the round-1 majority (the same models with no rounds after the first)",
    BASELINE: "the budget-matched baseline (one model asked again and again with the same tokens)",
}


@dataclass(frozen=True)
class Call:
    """One rule's call on one coin at a step: its action and verdict on the move."""

    action: str
    verdict: str


def call_return(action: str, move: float) -> float:
    """Return what ``action`` made of a ``move`` (a fraction), in percent."""
    side = 1 if action in RISING else -1 if action in FALLING else 0
    return side * move * 100


@dataclass(frozen=True)
class StepPair:
    """One step's figures for the debate, then the other rule: calls judged right,
    calls judged right or wrong, and the mean return of its calls (percent)."""

    right: tuple[int, int]
    judged: tuple[int, int]
    returned: tuple[float, float]

    @classmethod
    def of(cls, calls: Sequence[tuple[Call, Call, float]]) -> StepPair:
        """Return the pair of a step's ``calls``: (debate's, other's, move) per coin."""
        right = tuple(sum(pair[side].verdict == RIGHT for pair in calls) for side in (0, 1))
        judged = tuple(
            sum(pair[side].verdict in (RIGHT, WRONG) for pair in calls) for side in (0, 1)
        )
        returned = tuple(
            sum(call_return(pair[side].action, pair[2]) for pair in calls) / len(calls)
            for side in (0, 1)
        )
        return cls(right, judged, returned)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Comparison:
    """The debate against another rule over paired steps (module docstring)."""

    against: str
    steps: int
    hit_rate: tuple[float | None, float | None]
    hit_difference: float | None
    hit_interval: tuple[float, float] | None
    return_pct: tuple[float, float]
    return_difference: float
    return_interval: tuple[float, float]
    ahead: float
    resamples: int = RESAMPLES
    seed: int = SEED
    level: float = LEVEL

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        return asdict(self)


def _resampled_sums(data: np.ndarray, resamples: int, seed: int) -> np.ndarray:
    """Return, for each of ``resamples`` draws of the rows of ``data`` with replacement
    (as many as it has), the sums of its columns over the rows drawn."""
    rng = np.random.default_rng(seed)
    n = len(data)
    batch = max(1, DRAWS_PER_BATCH // n)
    sums = []
    for start in range(0, resamples, batch):
        size = min(batch, resamples - start)
        drawn = rng.integers(0, n, size=(size, n)) + (np.arange(size) * n)[:, None]
        counts = np.bincount(drawn.ravel(), minlength=size * n).reshape(size, n)
        sums.append(counts @ data)
    return np.vstack(sums)


def _interval(values: np.ndarray, level: float) -> tuple[float, float] | None:
    """Return the middle ``level`` of ``values`` (NaN left out; None when all are)."""
    kept = values[~np.isnan(values)]
    if not kept.size:
        return None
    tail = (1 - level) / 2 * 100
    low, high = np.percentile(kept, [tail, 100 - tail])
    return round(float(low), 6), round(float(high), 6)


def compare(
    pairs: Sequence[StepPair],
    against: str,
    *,
    resamples: int = RESAMPLES,
    seed: int = SEED,
    level: float = LEVEL,
) -> Comparison | None:
    """Return the debate against rule ``against`` over the paired steps ``pairs`` (in a
    stable order: the draws depend on it), None without any."""
    if not pairs:
        return None
    data = np.array([[*p.right, *p.judged, *p.returned] for p in pairs], dtype=float)
    right_d, right_o, judged_d, judged_o, returned_d, returned_o = data.sum(axis=0)
    hits = (share(right_d, judged_d), share(right_o, judged_o))
    sums = _resampled_sums(data, resamples, seed)
    with np.errstate(invalid="ignore", divide="ignore"):
        hit_draws = sums[:, 0] / sums[:, 2] - sums[:, 1] / sums[:, 3]
    return_draws = (sums[:, 4] - sums[:, 5]) / len(pairs)
    returns = (round(returned_d / len(pairs), 6), round(returned_o / len(pairs), 6))
    return Comparison(
        against=against,
        steps=len(pairs),
        hit_rate=hits,
        hit_difference=None if None in hits else round(hits[0] - hits[1], 6),
        hit_interval=_interval(hit_draws, level),
        return_pct=returns,
        return_difference=round(returns[0] - returns[1], 6),
        return_interval=_interval(return_draws, level),  # type: ignore[arg-type]
        ahead=round(float(np.mean(return_draws > 0)), 6),
        resamples=resamples,
        seed=seed,
        level=level,
    )


def sentence(comparison: Comparison | None, subject: str) -> str:
    """Say in one sentence whether the debate earned its tokens on ``subject`` ("this
    strategy"), against the rule of ``comparison``, and how sure that is."""
    steps = 0 if comparison is None else comparison.steps
    if comparison is None or steps < MIN_STEPS:
        return (
            f"No verdict yet on {subject}: {steps} reviewed steps pair the debate with "
            f"another rule, and a verdict takes {MIN_STEPS}."
        )
    c = comparison
    low, high = c.return_interval
    figures = (
        f"over {c.steps} steps against {AGAINST[c.against]}, its calls returned "
        f"{c.return_difference:+.2f} % a step ({c.level * 100:.0f} % interval {low:+.2f} to "
        f"{high:+.2f}; ahead in {c.ahead * 100:.0f} % of {c.resamples:,} resamples)"
    )
    if c.hit_difference is not None and c.hit_interval is not None:
        hit_low, hit_high = (100 * bound for bound in c.hit_interval)
        figures += (
            f", and its hit rate differed by {100 * c.hit_difference:+.1f} points "
            f"({hit_low:+.1f} to {hit_high:+.1f})"
        )
    if low > 0:
        return f"The debate earned its tokens on {subject}: {figures}."
    if high < 0:
        return f"The debate did not earn its tokens on {subject}: {figures}."
    return (
        f"Whether the debate earned its tokens on {subject} cannot be told yet: {figures}; "
        "the interval holds zero."
    )


def step_pairs(rows: Sequence[LedgerRow], other: str) -> list[StepPair]:
    """Return the steps of ``rows`` (reviewed coin decisions) paired with rule ``other``'s
    calls on the same coins, in the order of their debates' ids; a coin the budget-matched
    baseline did not answer at (no baseline there) is left out."""
    by_step: dict[int, list[tuple[Call, Call, float]]] = defaultdict(list)
    for row in rows:
        if other == BASELINE:
            if not row.baseline_verdict:
                continue
            theirs = Call(row.baseline_action, row.baseline_verdict)
        else:
            theirs = Call(row.round1_action, row.round1_verdict)
        by_step[row.debate_id].append((Call(row.action, row.verdict), theirs, row.realised_return))
    return [StepPair.of(calls) for _, calls in sorted(by_step.items())]


def ledger_verdict(rows: Sequence[LedgerRow], subject: str) -> dict[str, Any]:
    """Return the verdict of the reviewed decisions ``rows`` on ``subject``: the debate
    against each rule (None where no step pairs them), the rule the sentence reads
    against (the budget-matched baseline once it has ``MIN_STEPS`` steps, else the
    round-1 majority) and the sentence."""
    comparisons = {other: compare(step_pairs(rows, other), other) for other in (ROUND1, BASELINE)}
    enough = [
        other
        for other in (BASELINE, ROUND1)
        if comparisons[other] is not None and comparisons[other].steps >= MIN_STEPS
    ]
    found = [other for other in (BASELINE, ROUND1) if comparisons[other] is not None]
    against = (enough or found or [None])[0]
    return {
        "against": against,
        "sentence": sentence(comparisons.get(against) if against else None, subject),
        "comparisons": {
            other: None if comparison is None else comparison.to_dict()
            for other, comparison in comparisons.items()
        },
    }
