"""Consensus per coin (SPEC 5.5): weights, ties, means, clamps and the strategy limits."""

import pytest

from debates.engine.consensus import (
    Ballot,
    Clamp,
    CoinConsensus,
    ConsensusLimits,
    decide,
    primary_first,
)
from debates.engine.types import Action, CoinDecision


def vote(voter, symbol, action, confidence, leverage=None, pct=None, sl=None, tp=None):
    """Build one ballot, positionally for compact tests."""
    return Ballot(voter, CoinDecision(symbol, Action(action), confidence, leverage, pct, sl, tp))


WORKED_EXAMPLE = [
    vote("P1 bull", "BTCUSDT", "open_long", 80, 10, 0.3),
    vote("P2 bear", "BTCUSDT", "open_short", 60, 5, 0.2),
    vote("P3 analyst", "BTCUSDT", "open_long", 70, 8, 0.25),
]


def test_worked_example_of_the_spec_holds_exactly():
    # given the votes of SPEC 5.5
    # when
    [result] = decide(WORKED_EXAMPLE, ["BTCUSDT"])
    # then
    assert result == CoinConsensus(
        symbol="BTCUSDT",
        action=Action.OPEN_LONG,
        confidence=75.0,
        leverage=9,
        position_pct=0.275,
        stop_loss=0.03,
        take_profit=0.06,
        scores={"open_long": 1.5, "open_short": 0.6},
        clamps=(),
        defaults=("stop_loss", "take_profit"),
        reason="open_long wins with score 1.5 from 2 of 3 votes",
        supporters=2,
        voters=3,
    )


def test_to_dict_gives_the_stored_shape():
    # given
    [result] = decide(WORKED_EXAMPLE, ["BTCUSDT"])
    # when
    data = result.to_dict()
    # then
    assert data == {
        "symbol": "BTCUSDT",
        "action": "open_long",
        "confidence": 75.0,
        "leverage": 9,
        "position_pct": 0.275,
        "stop_loss": 0.03,
        "take_profit": 0.06,
        "scores": {"open_long": 1.5, "open_short": 0.6},
        "clamps": [],
        "defaults": ["stop_loss", "take_profit"],
        "reason": "open_long wins with score 1.5 from 2 of 3 votes",
        "supporters": 2,
        "voters": 3,
    }


@pytest.mark.parametrize(
    "eth_votes",
    [
        [],
        [vote("P1", "ETHUSDT", "open_short", 100, 20, 1.0, 0.2, 0.4)],
        [vote(f"P{n}", "ETHUSDT", "close_long", 90, 1, 0.1) for n in range(1, 4)],
    ],
    ids=["no ETH votes", "one strong ETH short", "all close ETH longs"],
)
def test_opinions_on_eth_never_change_the_btc_decision(eth_votes):
    # given the worked BTC votes plus the same voters' opinions on ETH
    [alone] = decide(WORKED_EXAMPLE, ["BTCUSDT"])
    # when
    btc, _eth = decide(WORKED_EXAMPLE + eth_votes, ["BTCUSDT", "ETHUSDT"])
    # then
    assert btc == alone


def test_each_coin_gets_its_own_decision_in_candidate_order():
    # given votes on two coins, one coin with none
    votes = [
        vote("P1", "ETHUSDT", "open_short", 70, 5, 0.2, 0.02, 0.05),
        vote("P2", "ETHUSDT", "open_short", 50, 3, 0.4),
        vote("P1", "BTCUSDT", "hold", 60),
    ]
    # when
    results = decide(votes, ["SOLUSDT", "ETHUSDT", "BTCUSDT"])
    # then
    assert [(r.symbol, r.action, r.confidence, r.reason) for r in results] == [
        ("SOLUSDT", Action.WAIT, 0.0, "no votes"),
        ("ETHUSDT", Action.OPEN_SHORT, 60.0, "open_short wins with score 1.2 from 2 of 2 votes"),
        ("BTCUSDT", Action.HOLD, 60.0, "hold wins with score 0.6 from 1 of 1 votes"),
    ]
    eth = results[1]
    assert (eth.leverage, eth.position_pct, eth.stop_loss, eth.take_profit) == (4, 0.3, 0.02, 0.05)
    assert eth.defaults == ()
    btc = results[2]
    assert (btc.leverage, btc.position_pct, btc.stop_loss, btc.take_profit) == (None,) * 4


def test_coin_without_votes_waits_with_zero_confidence():
    # given no ballots at all
    # when
    [result] = decide([], ["SOLUSDT"])
    # then
    assert result == CoinConsensus(
        symbol="SOLUSDT",
        action=Action.WAIT,
        confidence=0.0,
        leverage=None,
        position_pct=None,
        stop_loss=None,
        take_profit=None,
        scores={},
        clamps=(),
        defaults=(),
        reason="no votes",
        supporters=0,
        voters=0,
    )


@pytest.mark.parametrize(
    ("actions", "winner", "tied"),
    [
        (["wait", "hold"], Action.WAIT, "hold, wait"),
        (["hold", "close_long"], Action.HOLD, "close_long, hold"),
        (["close_short", "open_long"], Action.CLOSE_SHORT, "open_long, close_short"),
        (["open_short", "hold", "open_long"], Action.HOLD, "open_long, open_short, hold"),
    ],
)
def test_ties_go_to_the_more_cautious_action(actions, winner, tied):
    # given one vote per action, all at the same confidence
    votes = [vote(f"P{n}", "BTCUSDT", action, 50) for n, action in enumerate(actions)]
    # when
    [result] = decide(votes, ["BTCUSDT"])
    # then
    assert result.action == winner
    assert result.reason == (
        f"{winner} wins with score 0.5 from 1 of {len(actions)} votes; "
        f"tie between {tied} goes to the more cautious {winner}"
    )


@pytest.mark.parametrize(
    ("actions", "pair"),
    [
        (["open_long", "open_short"], "open_long and open_short"),
        (["close_long", "close_short"], "close_long and close_short"),
        (["close_short", "open_long", "close_long"], "close_long and close_short"),
    ],
)
def test_a_tie_between_directions_is_no_consensus(actions, pair):
    # given opposite directions at the same score
    votes = [vote(f"P{n}", "BTCUSDT", action, 70, 10, 0.5) for n, action in enumerate(actions)]
    # when
    [result] = decide(votes, ["BTCUSDT"])
    # then
    assert (result.action, result.confidence) == (Action.WAIT, 0.0)
    assert result.reason == f"no consensus: {pair} tie at score 0.7"
    assert (result.leverage, result.position_pct, result.stop_loss) == (None, None, None)


def test_ties_are_exact_not_float_approximations():
    # given 0.1 + 0.2 against 0.3, which differ in floating point
    votes = [
        vote("P1", "BTCUSDT", "open_long", 10),
        vote("P2", "BTCUSDT", "open_long", 20),
        vote("P3", "BTCUSDT", "open_short", 30),
    ]
    # when
    [result] = decide(votes, ["BTCUSDT"])
    # then
    assert result.reason == "no consensus: open_long and open_short tie at score 0.3"


def test_below_the_strategy_minimum_confidence_the_decision_is_wait():
    # given a winner at confidence 75 and a strategy that needs 80
    limits = ConsensusLimits(min_confidence=80)
    # when
    [result] = decide(WORKED_EXAMPLE, ["BTCUSDT"], limits)
    # then
    assert (result.action, result.confidence) == (Action.WAIT, 0.0)
    assert result.reason == "open_long at confidence 75 is below the strategy minimum 80"
    assert result.scores == {"open_long": 1.5, "open_short": 0.6}


def test_at_the_strategy_minimum_confidence_the_winner_stands():
    # given
    limits = ConsensusLimits(min_confidence=75)
    # when
    [result] = decide(WORKED_EXAMPLE, ["BTCUSDT"], limits)
    # then
    assert result.action == Action.OPEN_LONG


@pytest.mark.parametrize(
    ("leverages", "expected"),
    [([10, 8], 9), ([9, 8], 8), ([9, 10], 9), ([7, 8, 8], 8), ([1, 2, 2], 2), ([3], 3)],
)
def test_leverage_is_the_mean_rounded_with_halves_down(leverages, expected):
    # given supporters with these leverages
    votes = [vote(f"P{n}", "BTCUSDT", "open_long", 60, lev) for n, lev in enumerate(leverages)]
    # when
    [result] = decide(votes, ["BTCUSDT"])
    # then
    assert result.leverage == expected


MAJOR_10_OTHERS_5 = ConsensusLimits.by_major(major=10, others=5)
SOL_3 = ConsensusLimits(max_leverage={"SOLUSDT": 3})


@pytest.mark.parametrize(
    ("limits", "symbol", "leverage", "reason"),
    [
        (ConsensusLimits(), "BTCUSDT", 20, "above the maximum 20"),
        (ConsensusLimits(max_leverage=12), "SOLUSDT", 12, "above the maximum 12 for SOLUSDT"),
        (MAJOR_10_OTHERS_5, "BTCUSDT", 10, "above the maximum 10 for BTCUSDT"),
        (MAJOR_10_OTHERS_5, "SOLUSDT", 5, "above the maximum 5 for SOLUSDT"),
        (SOL_3, "SOLUSDT", 3, "above the maximum 3 for SOLUSDT"),
        (SOL_3, "BTCUSDT", 20, "above the maximum 20"),
        (ConsensusLimits(max_leverage=lambda symbol: 50), "BTCUSDT", 20, "above the maximum 20"),
    ],
)
def test_leverage_is_clamped_to_20_and_the_strategy_cap(limits, symbol, leverage, reason):
    # given two supporters asking for 30x and 20x
    votes = [
        vote("P1", symbol, "open_long", 70, 30, 0.5),
        vote("P2", symbol, "open_long", 70, 20, 0.5),
    ]
    # when
    [result] = decide(votes, [symbol], limits)
    # then
    assert result.leverage == leverage
    assert result.clamps == (Clamp("leverage", 25, leverage, reason),)


@pytest.mark.parametrize(
    ("pcts", "expected", "clamps"),
    [
        ([0.05, 0.05], 0.1, (Clamp("position_pct", 0.05, 0.1, "below the minimum 0.1"),)),
        ([1.5, 1.0], 1.0, (Clamp("position_pct", 1.25, 1.0, "above the maximum 1.0"),)),
        ([0.1, 1.0], 0.55, ()),
    ],
)
def test_position_pct_is_clamped_to_a_tenth_and_the_whole_balance(pcts, expected, clamps):
    # given
    votes = [vote(f"P{n}", "BTCUSDT", "open_short", 70, 5, pct) for n, pct in enumerate(pcts)]
    # when
    [result] = decide(votes, ["BTCUSDT"])
    # then
    assert (result.position_pct, result.clamps) == (expected, clamps)


def test_vote_confidence_outside_the_scale_is_clamped_before_weighing():
    # given a confidence of 250 that would otherwise outweigh two votes
    votes = [
        vote("P1", "BTCUSDT", "open_long", 250),
        vote("P2", "BTCUSDT", "open_short", 60),
        vote("P3", "BTCUSDT", "open_short", 60),
    ]
    # when
    [result] = decide(votes, ["BTCUSDT"])
    # then
    assert result.action == Action.OPEN_SHORT
    assert result.scores == {"open_long": 1.0, "open_short": 1.2}
    assert result.clamps == (Clamp("confidence", 250.0, 100.0, "vote by P1 outside 0..100"),)


def test_means_use_only_the_values_supplied():
    # given one supporter with sizing and one without
    votes = [
        vote("P1", "BTCUSDT", "open_long", 80, 6, 0.4, 0.02, 0.08),
        vote("P2", "BTCUSDT", "open_long", 60),
    ]
    # when
    [result] = decide(votes, ["BTCUSDT"])
    # then
    assert (result.confidence, result.leverage, result.position_pct) == (70.0, 6, 0.4)
    assert (result.stop_loss, result.take_profit, result.defaults) == (0.02, 0.08, ())


def test_an_opening_action_without_sizing_takes_the_cautious_defaults():
    # given
    votes = [vote("P1", "BTCUSDT", "open_short", 65)]
    # when
    [result] = decide(votes, ["BTCUSDT"])
    # then
    assert (result.leverage, result.position_pct, result.stop_loss, result.take_profit) == (
        1,
        0.1,
        0.03,
        0.06,
    )
    assert result.defaults == ("leverage", "position_pct", "stop_loss", "take_profit")


def test_abstentions_are_not_ballots_and_count_nowhere():
    # given the worked example where a fourth participant abstained (no ballot)
    # when
    [result] = decide(WORKED_EXAMPLE, ["BTCUSDT"])
    # then
    assert (result.supporters, result.voters) == (2, 3)


def test_ballots_on_coins_that_are_not_candidates_count_for_nothing():
    # given
    votes = [*WORKED_EXAMPLE, vote("P1 bull", "DOGEUSDT", "open_long", 100, 20, 1.0)]
    # when
    results = decide(votes, ["BTCUSDT"])
    # then
    assert results == decide(WORKED_EXAMPLE, ["BTCUSDT"])


def test_two_ballots_by_one_voter_on_one_coin_are_refused():
    # given
    votes = [vote("P1", "BTCUSDT", "open_long", 80), vote("P1", "BTCUSDT", "open_short", 80)]
    # when / then
    with pytest.raises(ValueError, match="P1 voted twice on BTCUSDT"):
        decide(votes, ["BTCUSDT"])


def test_primary_first_moves_the_session_coin_to_the_front():
    # given
    results = decide(WORKED_EXAMPLE, ["SOLUSDT", "ETHUSDT", "BTCUSDT"])
    # when
    ordered = primary_first(results, "ETHUSDT")
    # then
    assert [r.symbol for r in ordered] == ["ETHUSDT", "SOLUSDT", "BTCUSDT"]


def test_judge_weights_turn_a_tie_of_two_directions_into_the_better_judged_side():
    # given two voters split 80/80 on opposite directions: no consensus by confidence
    votes = [vote("P1", "BTCUSDT", "open_long", 80, 5), vote("P2", "BTCUSDT", "open_short", 80, 3)]
    [tied] = decide(votes, ["BTCUSDT"])
    # when the judge scored P1 0.9 and P2 0.3
    [weighted] = decide(votes, ["BTCUSDT"], voter_weights={"P1": 0.9, "P2": 0.3})
    # then
    assert (tied.action, tied.reason) == (
        Action.WAIT,
        "no consensus: open_long and open_short tie at score 0.8",
    )
    assert weighted.action == Action.OPEN_LONG
    assert weighted.scores == {"open_long": 0.72, "open_short": 0.24}
    assert weighted.confidence == 80.0
    assert weighted.leverage == 5


def test_an_unscored_voter_weighs_the_mean_of_the_scored_ones():
    # given three voters, only two of them scored (0.2 and 0.6: mean 0.4)
    votes = [
        vote("P1", "ETHUSDT", "open_long", 50),
        vote("P2", "ETHUSDT", "open_short", 100),
        vote("P3", "ETHUSDT", "wait", 100),
    ]
    # when
    [result] = decide(votes, ["ETHUSDT"], voter_weights={"P1": 0.2, "P3": 0.6})
    # then
    assert result.scores == {"open_long": 0.1, "open_short": 0.4, "wait": 0.6}
    assert result.action == Action.WAIT


@pytest.mark.parametrize("weights", [None, {}])
def test_no_weights_is_the_confidence_rule(weights):
    # given / when
    [result] = decide(WORKED_EXAMPLE, ["BTCUSDT"], voter_weights=weights)
    # then
    assert result == decide(WORKED_EXAMPLE, ["BTCUSDT"])[0]


def test_weights_outside_zero_to_one_are_clamped():
    # given
    votes = [vote("P1", "BTCUSDT", "open_long", 50), vote("P2", "BTCUSDT", "open_short", 50)]
    # when
    [result] = decide(votes, ["BTCUSDT"], voter_weights={"P1": 3.0, "P2": -1.0})
    # then
    assert result.scores == {"open_long": 0.5, "open_short": 0.0}
