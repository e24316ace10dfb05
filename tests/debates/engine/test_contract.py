"""The output contract's two forms: one per prompt, the same fields, one parser."""

import json
import re

import pytest

from debates.engine.contract import (
    COIN_REASONING_MAX_CHARS,
    JSON_SCHEMA,
    REASONING_MAX_CHARS,
    TAGGED,
    decision_schema,
)
from debates.engine.parsing import parse_output
from debates.engine.prompts import TurnContext, VoteContext, build_turn_prompt, build_vote_prompt
from debates.engine.types import Action, ParseStatus

SYMBOLS = ("BTCUSDT", "ETHUSDT")


def _turn(mode: str):
    return build_turn_prompt(
        TurnContext(
            round=1,
            max_rounds=2,
            personality="bull",
            variant="balanced",
            symbols=SYMBOLS,
            market_text="BTCUSDT 1h close 58000",
            participant="P1",
            output_mode=mode,
        )
    )


def _vote(mode: str):
    return build_vote_prompt(
        VoteContext("bear", "balanced", SYMBOLS, "BTC 58000", participant="P2", output_mode=mode)
    )


@pytest.mark.parametrize("build", [_turn, _vote], ids=["turn", "vote"])
def test_a_json_schema_prompt_states_the_json_form_only(build):
    # given the prompts of a model asked for the json_schema form
    prompt = build(JSON_SCHEMA)
    text = prompt.system + prompt.user
    # when
    tags = re.findall(r"</?[a-z_]+>", text)
    # then it asks for one JSON object, and no tagged block anywhere
    assert tags == []
    assert "Answer with one JSON object and nothing else:" in prompt.system
    assert prompt.user.endswith(" now, as the JSON object.")
    assert prompt.system.count("## Output format") == 1
    # with the very same field rules as the tagged form
    tagged = build(TAGGED).system
    for rule in ("- confidence: a number from 0 to 100.", "(0.03 = 3 %)", "hold: keep current"):
        assert rule in prompt.system
        assert rule in tagged


def test_an_unknown_output_mode_is_refused():
    with pytest.raises(ValueError, match="output mode"):
        _turn("yaml")


def test_the_schema_names_the_candidates_the_actions_and_bounds_every_string():
    # when
    schema = decision_schema(SYMBOLS)
    # then
    decision = schema["properties"]["decisions"]["items"]
    assert decision["properties"]["symbol"]["enum"] == list(SYMBOLS)
    assert decision["properties"]["action"]["enum"] == [action.value for action in Action]
    assert sorted(decision["required"]) == sorted(decision["properties"])
    assert decision["additionalProperties"] is False
    assert schema["additionalProperties"] is False
    assert schema["properties"]["reasoning"]["maxLength"] == REASONING_MAX_CHARS
    assert decision["properties"]["reasoning"]["maxLength"] == COIN_REASONING_MAX_CHARS
    assert schema["properties"]["decisions"]["minItems"] == 2
    assert schema["properties"]["decisions"]["maxItems"] == 2


def test_an_answer_in_the_json_form_parses_with_its_reasoning():
    # given an answer a server decoded under the schema
    answer = {
        "reasoning": "RSI 71 on the hour, above its EMA20.",
        "decisions": [
            {"symbol": "BTCUSDT", "action": "open_long", "confidence": 64, "leverage": 3,
             "position_pct": 0.2, "stop_loss": 0.02, "take_profit": 0.05, "reasoning": "trend"},
            {"symbol": "ETHUSDT", "action": "wait", "confidence": 40, "leverage": 1,
             "position_pct": 0.1, "stop_loss": 0.03, "take_profit": 0.06, "reasoning": "flat"},
        ],
    }  # fmt: skip
    # when
    parsed = parse_output(json.dumps(answer), SYMBOLS)
    # then
    assert parsed.status == ParseStatus.OK
    assert parsed.reasoning == "RSI 71 on the hour, above its EMA20."
    assert [(d.symbol, d.action, d.confidence) for d in parsed.decisions] == [
        ("BTCUSDT", Action.OPEN_LONG, 64),
        ("ETHUSDT", Action.WAIT, 40),
    ]
    assert parsed.decisions[0].stop_loss == 0.02


def test_a_tagged_answer_keeps_its_tagged_reasoning_over_an_inner_one():
    # given a tagged answer whose decision block wraps its entries in an object
    text = (
        "<reasoning>outer</reasoning><decision>"
        '{"reasoning": "inner", "decisions": [{"symbol": "BTCUSDT", "action": "hold", '
        '"confidence": 50}]}</decision>'
    )
    # when
    parsed = parse_output(text, SYMBOLS)
    # then
    assert parsed.reasoning == "outer"
    assert parsed.decisions[0].action == Action.HOLD


def test_a_single_decision_object_does_not_lend_its_reasoning_to_the_answer():
    # given an answer that is one bare decision (no wrapper of decisions)
    text = 'My view. {"symbol": "BTCUSDT", "action": "wait", "confidence": 30, "reasoning": "x"}'
    # when
    parsed = parse_output(text, SYMBOLS)
    # then the per-coin reasoning stays the coin's
    assert parsed.reasoning == "My view."
    assert parsed.decisions[0].reasoning == "x"
