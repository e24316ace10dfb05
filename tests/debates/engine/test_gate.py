"""The gate after the openings and the settled-rounds rule, as pure functions."""

import pytest

from debates.engine.gate import Opening, gate, settled

AGREE = [Opening("open_long", 80), Opening("open_long", 70)]


def test_agreeing_confident_openings_stop_at_l1():
    chosen = gate(requested="auto", openings=AGREE, primary="BTCUSDT")
    assert (chosen.level, chosen.forced) == ("L1", False)
    assert chosen.reasons == ("the openings agree on BTCUSDT at mean confidence 75",)


@pytest.mark.parametrize(
    ("signals", "reason"),
    [
        ({"openings": [Opening("open_long", 80), Opening("open_short", 80)]}, "disagreement"),
        ({"openings": [Opening("open_long", 50), Opening("open_long", 60)]}, "uncertainty"),
        ({"failure": "the schedule's previous debate failed"}, "failure"),
        ({"human": True}, "a human seat"),
        ({"high_impact": True}, "high impact"),
        ({"held": ["BTCUSDT"]}, "held: the trader holds BTCUSDT"),
    ],
)
def test_each_signal_moves_the_debate_to_l2_and_is_recorded(signals, reason):
    chosen = gate(**{"requested": "auto", "openings": AGREE, "primary": "BTCUSDT", **signals})
    assert chosen.level == "L2"
    assert [r for r in chosen.reasons if r.startswith(reason)]


def test_past_the_budget_a_non_forced_l2_is_lowered_to_l1():
    split = [Opening("open_long", 80), Opening("open_short", 80)]
    chosen = gate(requested="auto", openings=split, primary="BTCUSDT", over_budget="passed")
    assert chosen.level == "L1"
    assert chosen.reasons[-1] == "budget: passed, lowered to L1"


@pytest.mark.parametrize("requested", ["L2", "auto"])
def test_a_forced_l2_is_never_lowered_by_the_budget(requested):
    high = requested == "auto"
    chosen = gate(
        requested=requested, openings=AGREE, primary="X", high_impact=high, over_budget="passed"
    )
    assert (chosen.level, chosen.forced) == ("L2", True)


def test_rounds_settle_when_no_seat_changes_any_action():
    before = {1: {"BTCUSDT": "open_long", "ETHUSDT": "wait"}, 2: {"BTCUSDT": "hold"}}
    changed = {1: {"BTCUSDT": "open_long", "ETHUSDT": "open_short"}, 2: {"BTCUSDT": "hold"}}
    assert settled(before, {1: dict(before[1]), 2: dict(before[2])})
    assert not settled(before, changed)
    assert not settled({}, {})
