"""The simulated model: deterministic, reads the snapshot, leans by personality, real contract."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from debates.engine.judge import SummaryContext, parse_scores, parse_summary
from debates.engine.parsing import parse_output
from debates.engine.types import ParseStatus
from debates.providers import (
    DeadlineExceeded,
    ModelRequest,
    ProviderConfig,
    TerminalProviderError,
    complete,
)
from debates.providers.base import Position
from strategies.market.builder import SnapshotSpec, build_snapshot
from strategies.market.dataset import DATASET_SYMBOLS, DatasetSource
from strategies.market.snapshot import (
    Candle,
    CoinSnapshot,
    Indicators,
    MarketSnapshot,
    TimeframeView,
)

SYMBOLS = ("BTCUSDT", "ETHUSDT")
SIMULATED = ProviderConfig(provider="simulated", model_name="")


def _coin(symbol: str, price: float, direction: int) -> CoinSnapshot:
    """Return a coin whose every indicator points the same way (+1 up, -1 down)."""
    step = price * 0.004 * direction

    def view(timeframe: str) -> TimeframeView:
        candle = Candle(1_700_000_000_000, price, price * 1.01, price * 0.99, price, 1000.0)
        return TimeframeView(
            timeframe=timeframe,
            candles=(candle,),
            indicators=Indicators(
                ema20=price - step,
                ema50=price - 3 * step,
                macd=step,
                macd_signal=step / 2,
                macd_hist=step / 2,
                rsi14=50 + 11.2 * direction,
                atr14=price * 0.012,
                bb_upper=price * 1.03,
                bb_middle=price,
                bb_lower=price * 0.97,
                volume_change=0.1,
            ),
        )

    return CoinSnapshot(
        symbol=symbol,
        source_tag="static",
        price=price,
        timeframes=(view("1h"), view("4h")),
        funding_rate=0.0001,
    )


def _snapshot(direction: int) -> dict:
    return MarketSnapshot(
        source="dataset",
        exchange="binance",
        as_of="2024-06-01T00:00:00Z",
        coins=(_coin("BTCUSDT", 58_300.0, direction), _coin("ETHUSDT", 3_456.78, direction)),
    ).to_dict()


def _request(personality: str = "analyst", **overrides) -> ModelRequest:
    values = {
        "system": f"You are the {personality}.",
        "user": "Round 1 of 3.",
        "kind": "turn",
        "personality": personality,
        "round": 1,
        "max_rounds": 3,
        "symbols": SYMBOLS,
        "snapshot": _snapshot(+1),
        "seed": 7,
    }
    values.update(overrides)
    return ModelRequest(**values)


def _actions(text: str) -> dict[str, str]:
    result = parse_output(text, SYMBOLS)
    return {decision.symbol: decision.action.value for decision in result.decisions}


def test_same_input_gives_the_same_output() -> None:
    # when
    first = complete(SIMULATED, _request("bull"))
    second = complete(SIMULATED, _request("bull"))

    # then
    assert first.text == second.text
    assert first.request_id == second.request_id
    assert re.fullmatch(r"sim-[0-9a-f]{16}", first.request_id)


@pytest.mark.parametrize(
    "change",
    [{"seed": 8}, {"round": 2}, {"kind": "vote"}, {"personality": "bear"}, {"snapshot": None}],
)
def test_a_different_input_gives_a_different_answer(change: dict) -> None:
    # when
    base = complete(SIMULATED, _request("bull"))
    other = complete(SIMULATED, dataclasses.replace(_request("bull"), **change))

    # then
    assert other.request_id != base.request_id


@pytest.mark.parametrize("personality", ["bull", "bear", "analyst", "contrarian", "risk_manager"])
@pytest.mark.parametrize("kind", ["turn", "vote"])
def test_output_parses_with_the_engine_parser_one_decision_per_symbol(
    personality: str, kind: str
) -> None:
    # when
    response = complete(SIMULATED, _request(personality, kind=kind))
    result = parse_output(response.text, SYMBOLS)

    # then
    assert result.status == ParseStatus.OK
    assert [decision.symbol for decision in result.decisions] == list(SYMBOLS)
    for decision in result.decisions:
        assert 0 <= decision.confidence <= 100
        assert 0.1 <= decision.position_pct <= 1.0
        assert 0 < decision.stop_loss < decision.take_profit < 0.5
        assert decision.leverage >= 1


def test_response_is_labelled_simulated_with_plausible_usage() -> None:
    # given
    request = _request("analyst")

    # when
    response = complete(SIMULATED, request)

    # then
    assert (response.provider, response.model, response.simulated) == (
        "simulated",
        "simulated-v1",
        True,
    )
    assert (response.attempts, response.finish_reason) == (1, "stop")
    assert response.prompt_tokens == len(request.system) // 4 + len(request.user) // 4
    assert response.completion_tokens == len(response.text) // 4
    assert response.latency_ms >= 0
    # the analyst's own argument first, the market reading every participant shares after it
    reasoning = response.text.split("</reasoning>")[0]
    assert reasoning.startswith("<reasoning>\nBTCUSDT: ")
    assert "\n\nSimulated Analyst model, turn in round 1/3" in reasoning


def test_reasoning_cites_the_snapshot_numbers() -> None:
    # when
    text = complete(SIMULATED, _request("analyst")).text

    # then
    reasoning = text.split("</reasoning>")[0]
    assert (
        "BTCUSDT 1h: price 58,300.0, EMA20 58,066.8 above EMA50 57,600.4, RSI 61.2, "
        "MACD histogram +116.6, funding +0.0100%/8h, 4h trend up." in reasoning
    )
    assert "ETHUSDT 1h: price 3,456.8, EMA20 3,443.0 above EMA50 3,415.3, RSI 61.2" in reasoning


def test_bull_and_bear_disagree_on_an_uptrend() -> None:
    # when
    bull = _actions(complete(SIMULATED, _request("bull")).text)
    bear = _actions(complete(SIMULATED, _request("bear")).text)

    # then
    assert bull == {"BTCUSDT": "open_long", "ETHUSDT": "open_long"}
    assert bear == {"BTCUSDT": "wait", "ETHUSDT": "wait"}


def test_bull_and_bear_disagree_on_a_downtrend() -> None:
    # given
    down = _snapshot(-1)

    # when
    bull = _actions(complete(SIMULATED, _request("bull", snapshot=down)).text)
    bear = _actions(complete(SIMULATED, _request("bear", snapshot=down)).text)

    # then
    assert bull == {"BTCUSDT": "wait", "ETHUSDT": "wait"}
    assert bear == {"BTCUSDT": "open_short", "ETHUSDT": "open_short"}


def test_analyst_follows_the_data() -> None:
    # when
    up = _actions(complete(SIMULATED, _request("analyst")).text)
    down = _actions(complete(SIMULATED, _request("analyst", snapshot=_snapshot(-1))).text)

    # then
    assert up == {"BTCUSDT": "open_long", "ETHUSDT": "open_long"}
    assert down == {"BTCUSDT": "open_short", "ETHUSDT": "open_short"}


def test_contrarian_goes_against_the_trend_in_round_1() -> None:
    # when
    actions = _actions(complete(SIMULATED, _request("contrarian")).text)

    # then
    assert actions == {"BTCUSDT": "open_short", "ETHUSDT": "open_short"}


def test_contrarian_goes_against_the_previous_majority_in_later_rounds() -> None:
    # given: on an uptrend, the others went short on BTC and long on ETH
    prior = {
        "BTCUSDT": ("open_short", "open_short", "open_long"),
        "ETHUSDT": ("open_long", "open_long", "wait"),
    }

    # when
    response = complete(SIMULATED, _request("contrarian", round=2, prior_actions=prior))

    # then
    assert _actions(response.text) == {"BTCUSDT": "open_long", "ETHUSDT": "open_short"}
    assert "The others so far on BTCUSDT: open_long x1, open_short x2." in response.text


def test_risk_manager_sizes_smaller_with_tighter_stops_and_lower_leverage() -> None:
    # when
    analyst = parse_output(complete(SIMULATED, _request("analyst")).text, SYMBOLS).decisions
    careful = parse_output(complete(SIMULATED, _request("risk_manager")).text, SYMBOLS).decisions

    # then
    for mine, theirs in zip(careful, analyst, strict=True):
        assert mine.position_pct <= 0.2 < theirs.position_pct
        assert mine.leverage <= 2 < theirs.leverage
        assert mine.stop_loss < theirs.stop_loss


def test_no_snapshot_means_wait_on_every_symbol() -> None:
    # when
    text = complete(SIMULATED, _request("bull", snapshot=None)).text

    # then
    decisions = json.loads(text.split("<decision>")[1].split("</decision>")[0])
    assert [(d["symbol"], d["action"], d["confidence"]) for d in decisions] == [
        ("BTCUSDT", "wait", 50),
        ("ETHUSDT", "wait", 50),
    ]


def test_an_unreadable_snapshot_is_a_terminal_bad_request() -> None:
    # when
    with pytest.raises(TerminalProviderError) as caught:
        complete(SIMULATED, _request("bull", snapshot={"coins": []}))

    # then
    assert (caught.value.code, caught.value.message) == (
        "bad_request",
        "simulated: unreadable market snapshot (KeyError: 'source')",
    )


def test_artificial_latency_comes_from_settings_and_respects_the_deadline(settings) -> None:
    # given
    settings.SIMULATED_MODEL_LATENCY_S = 0.1
    hurried = ProviderConfig(provider="simulated", model_name="", timeout_s=0.05)

    # when
    response = complete(SIMULATED, _request("bull"))
    with pytest.raises(DeadlineExceeded):
        complete(hurried, _request("bull"))

    # then
    assert 100 <= response.latency_ms < 200


def test_on_the_dataset_every_personality_answers_each_coin_and_bull_differs_from_bear() -> None:
    # given: the seven dataset coins at the dataset's end, built by the market package
    spec = SnapshotSpec(coins=tuple((s, "static") for s in DATASET_SYMBOLS))
    snapshot = build_snapshot(spec, DatasetSource()).to_dict()
    symbols = tuple(DATASET_SYMBOLS)

    # when
    results = {
        personality: parse_output(
            complete(SIMULATED, _request(personality, symbols=symbols, snapshot=snapshot)).text,
            symbols,
        )
        for personality in ("bull", "bear", "analyst", "contrarian", "risk_manager")
    }

    # then
    for result in results.values():
        assert result.status == ParseStatus.OK
        assert [decision.symbol for decision in result.decisions] == list(symbols)
    bull = [decision.action for decision in results["bull"].decisions]
    bear = [decision.action for decision in results["bear"].decisions]
    assert all(mine != theirs for mine, theirs in zip(bull, bear, strict=True))


def test_in_the_json_schema_mode_it_answers_the_same_decisions_as_one_object() -> None:
    # given the same request to a tagged and a json_schema simulated model
    request = _request("bull")
    as_json = dataclasses.replace(SIMULATED, output_mode="json_schema")

    # when
    tagged = parse_output(complete(SIMULATED, request).text, SYMBOLS)
    text = complete(as_json, request).text
    answer = parse_output(text, SYMBOLS)

    # then it is one JSON object of the contract's form, and it decides the same
    assert set(json.loads(text)) == {"reasoning", "decisions"}
    assert "<decision>" not in text
    assert answer.status == ParseStatus.OK
    assert answer.decisions == tagged.decisions
    assert answer.reasoning == tagged.reasoning


def _judge(kind: str, temperature: float = 0.7, **overrides) -> str:
    request = _request(kind=kind, **overrides)
    config = dataclasses.replace(SIMULATED, temperature=temperature)
    return complete(config, request).text


def test_the_simulated_judge_summarises_the_positions_it_is_given() -> None:
    # given / when
    text = _judge(
        "judge_summary",
        prior_actions={"BTCUSDT": ("open_long", "open_short"), "ETHUSDT": ("wait", "wait")},
    )
    # then its three blocks parse, naming the split and the agreement
    summary = parse_summary(text, _summary_context())
    assert summary.status == "ok"
    assert "BTCUSDT: open_long x1, open_short x1" in summary.points
    assert summary.agreements == "everyone says wait on ETHUSDT."
    assert summary.disagreements == "long against short on BTCUSDT."


def test_the_simulated_judge_scores_every_label_and_varies_with_temperature() -> None:
    # given / when
    answers = [_judge("judge_scores", t, labels=("P1", "P2")) for t in (0.2, 0.7, 1.2, 0.2)]
    sheets = [parse_scores(answer, ("P1", "P2")) for answer in answers]
    # then every item of every label is scored, the same at the same temperature only
    assert all(sheet.problems == () for sheet in sheets)
    assert answers[0] == answers[3]
    assert len(set(answers[:3])) == 3


def _summary_context() -> SummaryContext:
    return SummaryContext(round=1, max_rounds=3, symbols=SYMBOLS, messages=())


def test_the_simulated_answer_says_it_moved_and_its_decision_is_the_moved_one():
    # given an uptrend the analyst reads long, and two confident shorts among the others
    shorts = (Position("P1", "open_short", 85), Position("P2", "open_short", 80))
    # (seed 2 draws 0.27 for BTCUSDT in a round-2 turn: under its chance of giving way)
    request = _request("analyst", round=2, seed=2, participant="P3", positions={"BTCUSDT": shorts})
    # when it answers twice
    first, second = complete(SIMULATED, request), complete(SIMULATED, request)
    # then it moved short on BTC, said why, and held its long on ETH where nobody spoke
    decisions = parse_output(first.text, SYMBOLS).decisions
    assert [(d.symbol, d.action.value) for d in decisions] == [
        ("BTCUSDT", "open_short"),
        ("ETHUSDT", "open_long"),
    ]
    assert "they convince me: I move to open_short. Decision: open_short" in first.text
    assert first.text == second.text
