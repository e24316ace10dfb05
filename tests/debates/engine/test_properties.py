"""Property tests: the parser never fails, the consensus is order-free, cautious and bounded."""

import json
from fractions import Fraction

from hypothesis import given, settings
from hypothesis import strategies as st

from debates.engine.consensus import MAX_LEVERAGE, Ballot, ConsensusLimits, MajorCaps, decide
from debates.engine.digest import (
    MESSAGE_DIGEST_MAX_CHARS,
    HistoryEntry,
    digest,
    summarise,
)
from debates.engine.normalise import parse_confidence
from debates.engine.parsing import normalise_action, normalise_symbol, parse_output
from debates.engine.types import OPENING_ACTIONS, Action, CoinDecision, ParseStatus

CANDIDATES = ("BTCUSDT", "ETHUSDT", "SOLUSDT")
SYMBOLS = st.sampled_from(["BTCUSDT", "ETHUSDT", "SOLUSDT"])
ACTIONS = st.sampled_from(list(Action))
CAUTION = {"wait": 0, "hold": 1, "close_long": 2, "close_short": 2, "open_long": 3, "open_short": 3}

FRAGMENTS = st.sampled_from(
    [
        "<decision>", "</decision>", "<final_vote>", "</final_vote>", "<reasoning>",
        "</reasoning>", "<think>", "</think>", "```json\n", "```", "[", "]", "{", "}", "［",
        "｝", ",", "，", ":", "：", '"', "“", "”", "'", '"symbol"', '"action"',
        '"confidence"', '"leverage"', '"position_pct"', '"stop_loss"', '"BTC"', '"btc/usdt"',
        '"DOGE"', '"long"', '"SELL"', '"moon"', '"hold"', "75", '"75%"', "0.3", "-1", "1e999",
        "NaN", "null", "true", "价格", "\n", " ", "//", "\\",
    ]
)  # fmt: skip


def assert_parse_invariants(result):
    assert all(isinstance(decision.action, Action) for decision in result.decisions)
    assert all(decision.symbol in CANDIDATES for decision in result.decisions)
    assert all(0 <= decision.confidence <= 100 for decision in result.decisions)
    assert len({decision.symbol for decision in result.decisions}) == len(result.decisions)
    assert (result.status == ParseStatus.FAILED) == (not result.decisions)


@settings(max_examples=300, deadline=None)
@given(st.text())
def test_parser_never_raises_on_any_text(text):
    # given any text
    # when
    result = parse_output(text, CANDIDATES)
    # then
    assert_parse_invariants(result)


@settings(max_examples=500, deadline=None)
@given(st.lists(FRAGMENTS, max_size=40).map("".join))
def test_parser_never_raises_on_decision_like_fragments(text):
    # given text assembled from the pieces of real answers
    # when
    result = parse_output(text, CANDIDATES)
    # then
    assert_parse_invariants(result)


RAW_ENTRY = st.fixed_dictionaries(
    {
        "symbol": st.sampled_from(["BTC", "eth/usdt", "SOL-USDT", "DOGE", "XRPUSDT", "", "???"]),
        "action": st.sampled_from(["long", "Open Short", "wait", "moon", "close", "", "卖"]),
        "confidence": st.one_of(st.integers(-50, 300), st.sampled_from(["80", "70%", "high"])),
    }
)


@settings(max_examples=300, deadline=None)
@given(st.lists(RAW_ENTRY, max_size=6))
def test_parser_never_relabels_a_coin_or_an_action(entries):
    # given well-formed JSON entries, some with foreign coins or unknown actions
    text = f"<decision>{json.dumps(entries, ensure_ascii=False)}</decision>"
    # when
    result = parse_output(text, CANDIDATES)
    # then each decision comes from the first usable entry naming its coin, action unchanged
    assert_parse_invariants(result)
    usable = [
        entry
        for entry in entries
        if normalise_symbol(entry["symbol"]) in CANDIDATES
        and normalise_action(entry["action"]) is not None
        and parse_confidence(entry["confidence"]) is not None
    ]
    for decision in result.decisions:
        first = next(e for e in usable if normalise_symbol(e["symbol"]) == decision.symbol)
        assert normalise_action(first["action"]) == decision.action
        assert parse_confidence(first["confidence"]) == decision.confidence
    assert len(result.decisions) == len({normalise_symbol(e["symbol"]) for e in usable})


def ballots(max_size=12):
    """Ballots with unique (voter, coin) pairs and values inside and outside the ranges."""
    decision = st.builds(
        CoinDecision,
        symbol=SYMBOLS,
        action=ACTIONS,
        confidence=st.one_of(
            st.sampled_from([0, 25, 50, 75, 100]), st.floats(-50, 300, allow_nan=False)
        ),
        leverage=st.one_of(st.none(), st.integers(-5, 200)),
        position_pct=st.one_of(st.none(), st.floats(-1, 5, allow_nan=False)),
        stop_loss=st.one_of(st.none(), st.floats(0.001, 0.5)),
        take_profit=st.one_of(st.none(), st.floats(0.001, 0.9)),
    )
    return st.lists(
        st.builds(Ballot, voter=st.sampled_from([f"P{n}" for n in range(1, 7)]), decision=decision),
        max_size=max_size,
        unique_by=lambda ballot: (ballot.voter, ballot.decision.symbol),
    )


LIMITS = st.builds(
    ConsensusLimits,
    min_confidence=st.sampled_from([0, 50, 70.5]),
    max_leverage=st.one_of(
        st.integers(1, 30),
        st.builds(MajorCaps, st.integers(1, 30), st.integers(1, 30)),
        st.dictionaries(SYMBOLS, st.integers(1, 30)),
    ),
)


@given(ballots().flatmap(lambda votes: st.tuples(st.just(votes), st.permutations(votes))), LIMITS)
def test_consensus_is_identical_for_any_permutation_of_the_votes(votes_and_shuffled, limits):
    # given the same votes in two orders
    votes, shuffled = votes_and_shuffled
    # when / then
    assert decide(shuffled, CANDIDATES, limits) == decide(votes, CANDIDATES, limits)


@given(ballots(), ballots())
def test_votes_on_other_coins_never_change_a_coin_decision(votes, others):
    # given votes on BTC and any other votes on ETH/SOL by any voters
    btc = [ballot for ballot in votes if ballot.decision.symbol == "BTCUSDT"]
    rest = [ballot for ballot in others if ballot.decision.symbol != "BTCUSDT"]
    # when / then
    assert decide(btc + rest, CANDIDATES)[0] == decide(btc, ["BTCUSDT"])[0]


@given(ballots())
def test_every_tie_resolves_to_the_cautious_action(votes):
    # given votes drawn from few confidences, so ties are frequent
    # when
    results = decide(votes, CANDIDATES)
    # then the winner is the most cautious of the top scores, or wait on a direction tie
    for result in results:
        scores: dict[str, Fraction] = {}
        for ballot in votes:
            if ballot.decision.symbol == result.symbol:
                weight = min(Fraction(100), max(Fraction(0), Fraction(ballot.decision.confidence)))
                action = ballot.decision.action.value
                scores[action] = scores.get(action, Fraction(0)) + weight / 100
        if not scores:
            assert (result.action, result.reason) == (Action.WAIT, "no votes")
            continue
        top = [action for action, score in scores.items() if score == max(scores.values())]
        caution = min(CAUTION[action] for action in top)
        cautious = [action for action in top if CAUTION[action] == caution]
        if len(cautious) == 2:
            assert (result.action, result.confidence) == (Action.WAIT, 0.0)
            assert result.reason.startswith("no consensus: ")
        else:
            assert result.action in (cautious[0], Action.WAIT)
            assert result.action == cautious[0] or "below the strategy minimum" in result.reason


@given(ballots(), LIMITS)
def test_every_clamp_holds(votes, limits):
    # given votes with values outside every range and any strategy limits
    # when
    results = decide(votes, CANDIDATES, limits)
    # then
    for result in results:
        cap = min(MAX_LEVERAGE, limits.leverage_cap(result.symbol))
        assert 0 <= result.confidence <= 100
        assert result.leverage is None or 1 <= result.leverage <= cap
        assert result.position_pct is None or 0.1 <= result.position_pct <= 1.0
        if result.action in OPENING_ACTIONS:
            sizing = (result.leverage, result.position_pct, result.stop_loss, result.take_profit)
            assert None not in sizing
        if result.action != Action.WAIT:
            assert result.confidence >= limits.min_confidence
        assert result.voters == sum(ballot.decision.symbol == result.symbol for ballot in votes)


@given(st.text(), st.integers(1, 500))
def test_summary_never_exceeds_its_cap_in_characters(text, cap):
    # given any text, including CJK and emoji, and any cap
    # when
    summary = summarise(text, cap)
    # then
    assert len(summary) <= cap


@given(
    st.builds(
        HistoryEntry,
        participant=st.text(max_size=80),
        personality=st.text(max_size=80),
        round=st.integers(1, 5),
        decisions=st.lists(
            st.builds(
                CoinDecision,
                symbol=SYMBOLS,
                action=ACTIONS,
                confidence=st.floats(0, 100),
                leverage=st.one_of(st.none(), st.integers(1, 10**30)),
                reasoning=st.text(max_size=400),
            ),
            max_size=12,
        ).map(tuple),
        reasoning=st.text(max_size=5000),
        failed=st.booleans(),
    )
)
def test_message_digest_never_exceeds_its_cap(entry):
    # given any earlier message
    # when / then
    assert len(digest(entry)) <= MESSAGE_DIGEST_MAX_CHARS
