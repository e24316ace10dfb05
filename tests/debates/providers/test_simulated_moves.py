"""The simulated model gives way to a confident majority of the others now and then,
seeded by the debate's seat, the turn and the coin; the contrarian never does."""

from __future__ import annotations

from typing import Any

import pytest

from debates.providers import ModelRequest
from debates.providers.base import Position
from debates.providers.simulated_moves import Leaning, give_way

ANALYST = Leaning("analyst", may_long=True, may_short=True, leverage=5, smallest=0.2)
BULL = Leaning("bull", may_long=True, may_short=False, leverage=8, smallest=0.3)
CONTRARIAN = Leaning("contrarian", may_long=True, may_short=True, leverage=4, smallest=0.15)
# Seeds whose draw for BTCUSDT in a round-2 turn is low (0.27: gives way at a fair
# chance) and above the highest chance (0.99: never gives way by chance alone).
PERSUADABLE, STUBBORN = 2, 5
SHORTS = (("P1", "open_short", 85), ("P2", "open_short", 80))


def _asked(positions, *, seed: int = PERSUADABLE, participant: str = "P3") -> ModelRequest:
    held = tuple(Position(*position) for position in positions)
    return ModelRequest(
        system="",
        user="",
        round=2,
        symbols=("BTCUSDT",),
        seed=seed,
        participant=participant,
        positions={"BTCUSDT": held},
    )


def _long(confidence: int = 60) -> dict[str, Any]:
    return {
        "symbol": "BTCUSDT",
        "action": "open_long",
        "confidence": confidence,
        "leverage": 5,
        "position_pct": 0.3,
        "stop_loss": 0.02,
        "take_profit": 0.04,
        "reasoning": "Bullish reading.",
    }


def test_a_participant_gives_way_to_a_confident_majority_less_sure_and_smaller():
    # when the analyst, long at 60, hears two confident shorts
    moved = give_way(_asked(SHORTS), ANALYST, _long())
    # then it goes short with them, at a lower confidence, leverage and size
    decision, sentence = moved
    assert decision == {
        **_long(),
        "action": "open_short",
        "confidence": 61,
        "leverage": 2,
        "position_pct": 0.2,
    }
    assert sentence == (
        "P1 open_short 85, P2 open_short 80 stand against open_long and they convince me: "
        "I move to open_short."
    )


def test_a_personality_that_may_not_take_the_majoritys_side_waits_instead():
    # when the bull, who never shorts, hears two confident shorts
    decision, _ = give_way(_asked(SHORTS), BULL, _long())
    # then it leaves the market
    assert (decision["action"], decision["leverage"], decision["position_pct"]) == ("wait", 1, 0.3)


@pytest.mark.parametrize(
    ("leaning", "positions", "seed"),
    [
        (CONTRARIAN, SHORTS, PERSUADABLE),
        (ANALYST, (("P1", "open_short", 58), ("P2", "open_short", 55)), PERSUADABLE),
        (ANALYST, (("P1", "open_short", 60), ("P2", "open_long", 90)), PERSUADABLE),
        (ANALYST, (("P1", "open_long", 85), ("P2", "open_long", 80)), PERSUADABLE),
        (ANALYST, (), PERSUADABLE),
        (ANALYST, SHORTS, STUBBORN),
    ],
    ids=[
        "the-contrarian",
        "majority-under-60",
        "less-than-half-the-weight-against",
        "the-others-agree",
        "round-1-no-positions",
        "a-draw-above-the-chance",
    ],
)
def test_a_participant_holds_its_position(leaning, positions, seed):
    # when / then
    assert give_way(_asked(positions, seed=seed), leaning, _long()) is None


def test_a_participant_that_gave_way_last_turn_keeps_to_it_whatever_the_draw():
    # given the analyst's own latest position is short already, and a draw that never moves
    positions = (*SHORTS, ("P3", "open_short", 61))
    # when its reading says long again
    decision, sentence = give_way(_asked(positions, seed=STUBBORN), ANALYST, _long())
    # then it keeps to the short
    assert decision["action"] == "open_short"
    assert sentence == (
        "I keep to open_short, as last turn: P1 open_short 85, P2 open_short 80 still stand "
        "against open_long."
    )
