"""Engine value types: the action set and the stored shape of decisions and parses."""

import math

import pytest

from debates.engine.types import (
    EXECUTABLE_ACTIONS,
    OPENING_ACTIONS,
    Action,
    CoinDecision,
    Dropped,
    ParseResult,
    ParseStatus,
)


def test_action_set_and_its_groups():
    assert [action.value for action in Action] == [
        "open_long",
        "open_short",
        "close_long",
        "close_short",
        "hold",
        "wait",
    ]
    assert sorted(OPENING_ACTIONS) == ["open_long", "open_short"]
    assert sorted(EXECUTABLE_ACTIONS) == ["close_long", "close_short", "open_long", "open_short"]


@pytest.mark.parametrize(
    "decision",
    [
        CoinDecision("BTCUSDT", Action.OPEN_LONG, 80.0, 10, 0.3, 0.03, 0.06, "突破"),
        CoinDecision("ETHUSDT", Action.WAIT, 0.0),
    ],
)
def test_coin_decision_survives_a_round_trip_through_its_dict(decision):
    # given
    data = decision.to_dict()
    # when
    rebuilt = CoinDecision.from_dict(data)
    # then
    assert rebuilt == decision


def test_coin_decision_refuses_a_plain_string_action_and_nan():
    with pytest.raises(TypeError):
        CoinDecision("BTCUSDT", "open_long", 80.0)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="non-finite"):
        CoinDecision("BTCUSDT", Action.HOLD, math.nan)


def test_parse_result_to_dict():
    # given
    result = ParseResult(
        reasoning="r",
        decisions=(CoinDecision("ETHUSDT", Action.HOLD, 50.0),),
        status=ParseStatus.PARTIAL,
        dropped=(Dropped('{"symbol": "DOGE"}', "missing action"),),
    )
    # when / then
    assert result.to_dict() == {
        "reasoning": "r",
        "decisions": [
            {
                "symbol": "ETHUSDT",
                "action": "hold",
                "confidence": 50.0,
                "leverage": None,
                "position_pct": None,
                "stop_loss": None,
                "take_profit": None,
                "reasoning": "",
            }
        ],
        "status": "partial",
        "dropped": [{"entry": '{"symbol": "DOGE"}', "reason": "missing action"}],
    }
