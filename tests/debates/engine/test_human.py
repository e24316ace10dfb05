"""A person's turn or vote: the contract's JSON form, refused whole and by field."""

import pytest

from debates.engine.contract import decision_schema
from debates.engine.human import HUMAN_REASONING_MAX_CHARS, HumanAnswerInvalid, read_human_answer
from debates.engine.types import Action, CoinDecision, ParseStatus

SYMBOLS = ("BTCUSDT", "ETHUSDT")


def _answer(**decision):
    return {
        "reasoning": "Funding is flat and the hourly RSI turned up.",
        "decisions": [{"symbol": "BTCUSDT", "action": "open_long", "confidence": 70, **decision}],
    }


def _refusal(value, *, turn=True) -> dict[str, list[str]]:
    with pytest.raises(HumanAnswerInvalid) as caught:
        read_human_answer(value, SYMBOLS, turn=turn)
    return caught.value.fields


def test_an_answer_reads_as_a_model_answer_would():
    # given a turn deciding both coins, one with every optional field
    value = {
        "reasoning": "  BTC holds its EMA20; ETH lags.  ",
        "decisions": [
            {
                "symbol": "BTCUSDT",
                "action": "open_long",
                "confidence": 72,
                "leverage": 3,
                "position_pct": 0.25,
                "stop_loss": 0.02,
                "take_profit": 0.05,
                "reasoning": "trend",
            },
            {"symbol": "ETHUSDT", "action": "wait", "confidence": 40},
        ],
    }
    # when
    parsed = read_human_answer(value, SYMBOLS, turn=True)
    # then
    assert parsed.status == ParseStatus.OK
    assert parsed.reasoning == "BTC holds its EMA20; ETH lags."
    assert parsed.dropped == ()
    assert parsed.decisions == (
        CoinDecision("BTCUSDT", Action.OPEN_LONG, 72.0, 3, 0.25, 0.02, 0.05, "trend"),
        CoinDecision("ETHUSDT", Action.WAIT, 40.0),
    )


@pytest.mark.parametrize(
    ("decision", "field", "message"),
    [
        ({"action": "moon"}, "decisions[0].action", "Unknown action 'moon'"),
        ({"action": "long"}, "decisions[0].action", "Unknown action 'long'"),
        ({"symbol": "DOGEUSDT"}, "decisions[0].symbol", "Not a candidate coin: 'DOGEUSDT'"),
        ({"confidence": 101}, "decisions[0].confidence", "from 0 to 100; got 101"),
        ({"confidence": -1}, "decisions[0].confidence", "from 0 to 100; got -1"),
        ({"confidence": "70"}, "decisions[0].confidence", "from 0 to 100; got '70'"),
        ({"leverage": 0}, "decisions[0].leverage", "less than the minimum of 1"),
        ({"position_pct": 2}, "decisions[0].position_pct", "greater than the maximum of 1.0"),
        ({"colour": "red"}, "decisions[0].colour", "Unknown field."),
    ],
)
def test_a_bad_decision_is_refused_naming_its_field(decision, field, message):
    # when
    fields = _refusal(_answer(**decision))
    # then
    assert list(fields) == [field]
    assert message in fields[field][0]


def test_every_bad_field_is_named_at_once():
    # given two bad decisions, one of them missing its confidence, and an unknown key
    value = {
        "reasoning": "x",
        "mood": "bold",
        "decisions": [
            {"symbol": "BTCUSDT", "action": "buy_the_dip", "confidence": 50},
            {"symbol": "ETHUSDT", "action": "wait"},
        ],
    }
    # when
    fields = _refusal(value)
    # then
    assert sorted(fields) == ["decisions[0].action", "decisions[1].confidence", "mood"]
    assert fields["decisions[1].confidence"] == ["Required."]
    assert fields["mood"] == ["Unknown field."]


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({"decisions": []}, "decisions"),
        ({"reasoning": "x"}, "decisions"),
        ({"reasoning": "x", "decisions": "BTC long"}, "decisions"),
        (
            {
                "reasoning": 5,
                "decisions": [{"symbol": "BTCUSDT", "action": "hold", "confidence": 1}],
            },
            "reasoning",
        ),
        ("open_long", "non_field_errors"),
    ],
)
def test_a_bad_shape_is_refused_naming_its_field(value, field):
    assert field in _refusal(value)


def test_a_coin_decided_twice_is_refused():
    # given
    value = _answer()
    value["decisions"].append({"symbol": "BTCUSDT", "action": "wait", "confidence": 10})
    # when
    fields = _refusal(value)
    # then
    assert fields == {"decisions[1].symbol": ["BTCUSDT is decided twice."]}


def test_more_decisions_than_coins_are_refused():
    # given three entries for two candidates
    value = _answer()
    value["decisions"] += [{"symbol": "ETHUSDT", "action": "wait", "confidence": 10}] * 2
    # when
    fields = _refusal(value)
    # then
    assert "decisions" in fields


def test_a_turn_needs_its_reasoning_and_a_vote_does_not():
    # given an answer with empty reasoning
    value = {**_answer(), "reasoning": ""}
    # then
    assert _refusal(value, turn=True) == {"reasoning": ["Required."]}
    assert read_human_answer(value, SYMBOLS, turn=False).reasoning == ""


def test_reasoning_is_bounded():
    value = {**_answer(), "reasoning": "x" * (HUMAN_REASONING_MAX_CHARS + 1)}
    assert list(_refusal(value)) == ["reasoning"]


def test_a_value_the_schema_allows_but_the_parser_cannot_use_is_refused():
    # given a stop of 0, which the schema's bounds allow and no order can use
    fields = _refusal(_answer(stop_loss=0))
    # then
    assert fields == {"decisions": ["ignored invalid stop_loss: 0"]}


def test_the_model_schema_is_the_complete_form_of_the_same_contract():
    # given
    person, model = (
        decision_schema(SYMBOLS, complete=False),
        decision_schema(SYMBOLS),
    )
    person_item = person["properties"]["decisions"]["items"]
    model_item = model["properties"]["decisions"]["items"]
    # then the same fields and bounds, fewer of them required
    assert person_item["properties"] == model_item["properties"]
    assert person_item["required"] == ["symbol", "action", "confidence"]
    assert person["properties"]["decisions"]["minItems"] == 1
