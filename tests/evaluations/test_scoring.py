"""The arithmetic of verdicts, the ledger and calibration, without a database."""

from __future__ import annotations

import pytest

from evaluations.scoring import (
    LedgerRow,
    Sample,
    calibration,
    ledger,
    move,
    verdict,
)


@pytest.mark.parametrize(
    ("action", "realised", "expected"),
    [
        ("open_long", 0.002, "right"),
        ("open_long", -0.002, "wrong"),
        ("open_long", 0.0009, "flat"),
        ("open_short", -0.001, "right"),
        ("open_short", 0.001, "wrong"),
        ("close_long", -0.003, "right"),
        ("close_short", -0.003, "wrong"),
        ("wait", 0.0005, "right"),
        ("hold", -0.0005, "right"),
        ("wait", 0.001, "wrong"),
        ("hold", -0.02, "wrong"),
    ],
)
def test_a_verdict_judges_the_side_an_action_takes(action, realised, expected):
    assert verdict(action, realised, 0.1) == expected


def test_a_hand_computed_brier_score_and_reliability_table():
    # given five judged votes: (confidence, right, move)
    samples = [
        Sample(90, True, "up"),
        Sample(80, False, "down"),
        Sample(65, True, "up"),
        Sample(60, True, "up"),
        Sample(15, False, "still"),
    ]
    # when calibrated
    found = calibration(samples)
    # then the Brier score is the mean squared gap between confidence and outcome:
    # (0.1^2 + 0.8^2 + 0.35^2 + 0.4^2 + 0.15^2) / 5 = (0.01+0.64+0.1225+0.16+0.0225)/5
    assert found.brier == 0.191
    assert (found.samples, found.right, found.hit_rate) == (5, 3, 0.6)
    # and the base rate is the most frequent move's share (up, 3 of 5): no skill
    assert (found.base_rate, found.skill) == (0.6, 0.0)
    # and the reliability table bins by tens of confidence
    rows = {b.low: (b.count, b.mean_confidence, b.share_right) for b in found.reliability}
    assert rows[10] == (1, 15, 0.0)
    assert rows[60] == (2, 62.5, 1.0)
    assert rows[80] == (1, 80, 0.0)
    assert rows[90] == (1, 90, 1.0)
    assert rows[0] == (0, None, None)
    assert [b.low for b in found.reliability] == list(range(0, 100, 10))


def test_a_voter_always_long_in_a_rising_stretch_shows_no_skill():
    # given a stretch where the price rose 7 times in 10 and a voter always long at 70
    moves = ["up"] * 7 + ["down"] * 3
    found = calibration([Sample(70, m == "up", m) for m in moves])
    # then its hit rate is the base rate of the stretch
    assert (found.hit_rate, found.base_rate, found.skill) == (0.7, 0.7, 0.0)
    # and a confidence of 70 is perfectly calibrated here: Brier 0.7*0.09 + 0.3*0.49
    assert found.brier == pytest.approx(0.21)


def test_confidence_100_falls_in_the_last_bin():
    found = calibration([Sample(100, True, "up")])
    assert found.reliability[-1].count == 1


def test_moves_under_the_threshold_are_still():
    assert (move(0.00099, 0.1), move(0.001, 0.1), move(-0.001, 0.1)) == ("still", "up", "down")


def test_the_ledger_counts_flips_useful_and_harmful():
    rows = [
        LedgerRow(1, "BTCUSDT", "open_long", "right", "open_short", "wrong"),  # useful
        LedgerRow(2, "BTCUSDT", "open_long", "wrong", "wait", "right"),  # harmful
        LedgerRow(3, "BTCUSDT", "open_short", "flat", "open_long", "flat"),  # flip, undecided
        LedgerRow(4, "BTCUSDT", "wait", "right", "wait", "right"),  # no flip
    ]
    found = ledger(rows, round_tokens=3000)
    assert (found.decisions, found.flips, found.flips_right, found.flips_wrong) == (4, 3, 1, 1)
    assert (found.useful_flips, found.harmful_flips) == (1, 1)
    assert (found.flip_rate, found.flip_accuracy) == (0.75, 0.5)
    assert (found.round1_accuracy, found.final_accuracy) == (round(2 / 3, 6), round(2 / 3, 6))
    assert found.tokens_per_useful_flip == 3000


def test_an_empty_ledger_has_no_rates():
    found = ledger([], round_tokens=0)
    assert (found.flip_rate, found.flip_accuracy, found.tokens_per_useful_flip) == (None,) * 3
