"""Did the debate earn its tokens: the paired bootstrap over steps and the verdict's
sentence, without a database."""

from __future__ import annotations

import numpy as np
import pytest

from evaluations.scoring import LedgerRow
from evaluations.verdicts import (
    BASELINE,
    MIN_STEPS,
    ROUND1,
    Comparison,
    StepPair,
    call_return,
    compare,
    ledger_verdict,
    sentence,
    step_pairs,
)


def simulated(steps: int, draw: np.random.Generator) -> list[StepPair]:
    """Return ``steps`` steps of three calls each: the debate right with probability
    0.6, the other rule 0.5 (a true hit-rate difference of 0.1); returns of 0.3 and 0.1 %
    a step on average, each step's two correlated (a true difference of 0.2)."""
    pairs = []
    for _ in range(steps):
        right = (int(draw.binomial(3, 0.6)), int(draw.binomial(3, 0.5)))
        market = draw.normal(0, 1.0)
        returned = (0.3 + market + draw.normal(0, 0.5), 0.1 + market + draw.normal(0, 0.5))
        pairs.append(StepPair(right=right, judged=(3, 3), returned=returned))
    return pairs


def test_the_interval_is_the_same_under_a_seed_and_moves_with_another():
    # given one set of steps
    pairs = simulated(120, np.random.default_rng(7))
    # when it is compared twice with the default seed, and once with another
    first, again = compare(pairs, BASELINE), compare(pairs, BASELINE)
    other = compare(pairs, BASELINE, seed=51)
    # then the seeded runs agree to the last digit, and another seed draws other resamples
    assert first == again
    assert first.seed == 50 and first.resamples == 2000
    assert other.return_interval != first.return_interval
    # while the point estimates do not depend on the draws
    assert (other.return_difference, other.hit_difference) == (
        first.return_difference,
        first.hit_difference,
    )


def test_the_interval_covers_the_true_difference_about_as_often_as_it_says():
    # given 200 simulated backtests of 100 steps, where the debate's true edge is known
    draw = np.random.default_rng(2024)
    covered_return = covered_hit = 0
    for _ in range(200):
        found = compare(simulated(100, draw), BASELINE)
        covered_return += found.return_interval[0] <= 0.2 <= found.return_interval[1]
        covered_hit += found.hit_interval[0] <= 0.1 <= found.hit_interval[1]
    # then each 95 % interval covers it in about 95 % of them (binomial noise allowed)
    assert 0.89 <= covered_return / 200 <= 0.99
    assert 0.89 <= covered_hit / 200 <= 0.99


def test_a_larger_edge_over_many_steps_is_a_sure_verdict_with_its_figures():
    # given 400 simulated steps
    found = compare(simulated(400, np.random.default_rng(11)), BASELINE)
    # then the interval lies above zero and covers the true 0.2 %
    low, high = found.return_interval
    assert 0 < low <= 0.2 <= high
    text = sentence(found, "this strategy")
    assert text == (
        "The debate earned its tokens on this strategy: over 400 steps against the "
        "budget-matched baseline (one model asked again and again with the same tokens), "
        f"its calls returned {found.return_difference:+.2f} % a step (95 % interval "
        f"{low:+.2f} to {high:+.2f}; ahead in {found.ahead * 100:.0f} % of 2,000 resamples), "
        f"and its hit rate differed by {100 * found.hit_difference:+.1f} points "
        f"({100 * found.hit_interval[0]:+.1f} to {100 * found.hit_interval[1]:+.1f})."
    )


@pytest.mark.parametrize(
    ("interval", "opening"),
    [
        ((-0.4, -0.1), "The debate did not earn its tokens on this backtest: "),
        ((-0.1, 0.3), "Whether the debate earned its tokens on this backtest cannot be told"),
    ],
)
def test_an_interval_below_zero_or_holding_it_says_so(interval, opening):
    comparison = Comparison(
        against=ROUND1,
        steps=MIN_STEPS,
        hit_rate=(0.5, 0.5),
        hit_difference=0.0,
        hit_interval=(-0.1, 0.1),
        return_pct=(0.1, 0.2),
        return_difference=-0.1,
        return_interval=interval,
        ahead=0.3,
    )
    assert sentence(comparison, "this backtest").startswith(opening)
    assert "against the round-1 majority (the same models with no" in sentence(comparison, "x")


def test_too_few_steps_give_no_verdict():
    found = compare(simulated(MIN_STEPS - 1, np.random.default_rng(3)), BASELINE)
    assert sentence(found, "this strategy") == (
        "No verdict yet on this strategy: 9 reviewed steps pair the debate with another "
        "rule, and a verdict takes 10."
    )


def test_the_rows_of_a_step_pair_up_by_coin_and_a_step_without_a_baseline_is_left_out():
    # given two steps: the first with the baseline, the second without one
    rows = [
        LedgerRow(1, "BTCUSDT", "open_long", "right", "wait", "wrong", 0.01, "open_short", "wrong"),
        LedgerRow(1, "ETHUSDT", "wait", "wrong", "wait", "wrong", -0.02, "close_long", "right"),
        LedgerRow(2, "BTCUSDT", "open_short", "wrong", "open_short", "wrong", 0.03),
    ]
    # when they are paired with each rule
    with_round1, with_baseline = step_pairs(rows, ROUND1), step_pairs(rows, BASELINE)
    # then each step holds its coins' right and judged calls and mean return, in percent
    assert with_baseline == [StepPair(right=(1, 1), judged=(2, 2), returned=(0.5, 0.5))]
    assert with_round1 == [
        StepPair(right=(1, 0), judged=(2, 2), returned=(0.5, 0.0)),
        StepPair(right=(0, 0), judged=(1, 1), returned=(-3.0, -3.0)),
    ]
    assert (call_return("close_short", 0.01), call_return("hold", 0.01)) == (1.0, 0.0)
    # and the verdict reads against the rule that has enough steps, here neither
    verdict = ledger_verdict(rows, "this strategy")
    assert verdict["against"] == BASELINE
    assert verdict["comparisons"][ROUND1]["steps"] == 2
    assert verdict["sentence"].startswith("No verdict yet on this strategy: 1 reviewed steps")
