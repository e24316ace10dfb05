"""No look-ahead, as a property: changing any candle (or funding rate) after a step's
``as_of`` changes nothing in what that step's debate is shown, asks, or decides.

Each example takes a step instant, then changes one candle that had not closed by then
(any timeframe of the files, any field, by any factor) or one funding rate settled
after it, and rebuilds the step through the debate's own code: the market snapshot
(``strategies.snapshots.debate_snapshot``), its prompt rendering, every participant's
turn and vote prompts, the simulated model's answers and their parsed decisions, and
the consensus of those votes, and a budget-matched baseline's answers to the round-1
prompts (two of each seat's) with their consensus. Everything must be identical to the
unchanged run.
"""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from backtests.engine.baseline import answer_ballots
from debates.engine.consensus import Ballot, decide
from debates.engine.parsing import parse_output
from debates.engine.prompts import TurnContext, VoteContext, build_turn_prompt, build_vote_prompt
from debates.models import Debate
from debates.providers.base import ModelRequest
from debates.providers.simulated import render_answer
from strategies.market import dataset
from strategies.market.snapshot import TIMEFRAME_MS
from strategies.models import Strategy
from strategies.snapshots import debate_snapshot, market_summary, market_text

PERSONALITIES = ("bull", "bear", "analyst")
FIRST = datetime(2024, 8, 5, 3, tzinfo=UTC)  # the default strategy's first replay instant
QUARTERS = int((dataset.DATASET_END - timedelta(hours=12) - FIRST) / timedelta(minutes=15))
FIELDS = ("open", "high", "low", "close", "volume")


def step(as_of: datetime) -> dict:
    """Return what a 1-round-and-votes debate at ``as_of`` is shown, asks and decides."""
    strategy = Strategy(static_coins=["BTCUSDT", "ETHUSDT", "SOLUSDT"], market_source="dataset")
    snapshot = debate_snapshot(Debate(strategy=strategy, symbol="BTCUSDT", as_of=as_of))
    stored = snapshot.to_dict()
    text, summary = market_text(stored), market_summary(stored)
    symbols = tuple(snapshot.symbols)
    prompts, answers, ballots, samples = [], [], [], []
    for seat, personality in enumerate(PERSONALITIES):
        turn = build_turn_prompt(
            TurnContext(
                round=1,
                max_rounds=2,
                personality=personality,
                variant="balanced",
                symbols=symbols,
                market_text=text,
                participant=f"P{seat + 1}",
            )
        )
        vote = build_vote_prompt(
            VoteContext(
                personality=personality,
                variant="balanced",
                symbols=symbols,
                market_summary=summary,
                positions=(),
                participant=f"P{seat + 1}",
            )
        )
        for prompt, kind in ((turn, "turn"), (vote, "vote")):
            prompts.append((prompt.system, prompt.user))
            answer, _ = render_answer(
                ModelRequest(
                    system=prompt.system,
                    user=prompt.user,
                    kind=kind,
                    personality=personality,
                    symbols=symbols,
                    snapshot=stored,
                    seed=seat,
                )
            )
            answers.append(answer)
            if kind == "vote":
                for decision in parse_output(answer, symbols).decisions:
                    ballots.append(Ballot(f"P{seat + 1}", decision))
        for number in (1, 2):
            answer, _ = render_answer(
                ModelRequest(
                    system=turn.system,
                    user=turn.user,
                    personality=personality,
                    symbols=symbols,
                    snapshot=stored,
                    seed=seat,
                    sample=number,
                )
            )
            answers.append(answer)
            samples.append(parse_output(answer, symbols).decisions)
    consensus = [result.to_dict() for result in decide(ballots, symbols)]
    baseline = [result.to_dict() for result in decide(answer_ballots(samples), symbols)]
    return {
        "snapshot": stored,
        "prompts": prompts,
        "answers": answers,
        "consensus": consensus,
        "baseline": baseline,
    }


@st.composite
def later_change(draw):
    """Draw a step instant and a change to the data after it."""
    as_of = FIRST + timedelta(minutes=15 * draw(st.integers(0, QUARTERS)))
    symbol = draw(st.sampled_from(("BTCUSDT", "ETHUSDT", "SOLUSDT")))
    factor = draw(st.sampled_from((0.5, 0.9, 1.1, 2.0, 10.0)))
    if draw(st.booleans()):
        timeframe = draw(st.sampled_from(dataset.FILE_TIMEFRAMES))
        opens = dataset._series(symbol, timeframe).open_times
        first_open = next(
            i for i, t in enumerate(opens) if t + TIMEFRAME_MS[timeframe] > as_of.timestamp() * 1000
        )
        index = draw(st.integers(first_open, len(opens) - 1))
        return as_of, ("candle", symbol, timeframe, index, draw(st.sampled_from(FIELDS)), factor)
    times, _ = dataset._funding(symbol)
    after = [i for i, t in enumerate(times) if t > as_of.timestamp() * 1000]
    return as_of, ("funding", symbol, draw(st.sampled_from(after)), factor)


def changed(change):
    """Return replacements of the dataset's readers that apply ``change``."""
    series, funding = dataset._series, dataset._funding

    def new_series(symbol: str, timeframe: str):
        found = series(symbol, timeframe)
        if change[0] != "candle" or (symbol, timeframe) != change[1:3]:
            return found
        _, _, _, index, name, factor = change
        candles = list(found.candles)
        candles[index] = replace(candles[index], **{name: getattr(candles[index], name) * factor})
        return dataset._Series(found.open_times, tuple(candles))

    def new_funding(symbol: str):
        times, rates = funding(symbol)
        if change[0] != "funding" or symbol != change[1]:
            return times, rates
        _, _, index, factor = change
        return times, tuple(r * factor if i == index else r for i, r in enumerate(rates))

    return new_series, new_funding


@settings(max_examples=100, deadline=None, suppress_health_check=list(HealthCheck))
@given(later_change())
def test_changing_the_data_after_a_step_changes_nothing_it_sees_asks_or_decides(monkeypatch, drawn):
    # given a step instant and what its debate sees, asks and decides
    as_of, change = drawn
    before = step(as_of)
    # when a candle that had not closed by then, or a later funding rate, is changed
    new_series, new_funding = changed(change)
    with monkeypatch.context() as patch:
        patch.setattr(dataset, "_series", new_series)
        patch.setattr(dataset, "_funding", new_funding)
        after = step(as_of)
    # then the step is the same in every respect
    assert after == before


def test_the_property_can_fail_changing_a_candle_closed_by_the_step():
    # given a step and the last 1h candle closed by it
    as_of = datetime(2024, 8, 20, 12, tzinfo=UTC)
    opens = dataset._series("BTCUSDT", "1h").open_times
    index = opens.index(int((as_of - timedelta(hours=1)).timestamp() * 1000))
    new_series, new_funding = changed(("candle", "BTCUSDT", "1h", index, "close", 1.1))
    before = step(as_of)
    # when that candle is changed / then what the debate sees changes
    original = dataset._series, dataset._funding
    dataset._series, dataset._funding = new_series, new_funding
    try:
        assert step(as_of)["snapshot"] != before["snapshot"]
    finally:
        dataset._series, dataset._funding = original
