"""The judge's prompts and parsers: round summaries, rubric scores, three judges' medians."""

import json

import pytest

from debates.engine.contract import JSON_SCHEMA
from debates.engine.judge import (
    AGREEMENTS_MAX_CHARS,
    POINTS_MAX_CHARS,
    ROUND_SUMMARY_MAX_CHARS,
    RUBRIC,
    ItemScore,
    JudgedSeat,
    ParticipantScore,
    ScoresContext,
    ScoreSheet,
    SummaryContext,
    SummaryStatus,
    aggregate_scores,
    build_scores_prompt,
    build_summary_prompt,
    judge_temperatures,
    normalise_label,
    parse_scores,
    parse_summary,
    round_tally,
    scores_schema,
    summary_schema,
    summary_text,
)
from debates.engine.prompts import HistoryEntry
from debates.engine.types import Action, CoinDecision

SYMBOLS = ("BTCUSDT", "ETHUSDT")
LABELS = ("P1", "P2", "P3")


def said(label, round_number, actions, reasoning="", failed=False):
    """Build a turn whose per-coin actions are ``{symbol: (action, confidence)}``."""
    decisions = tuple(
        CoinDecision(symbol, Action(action), confidence)
        for symbol, (action, confidence) in actions.items()
    )
    return HistoryEntry(label, "analyst", round_number, decisions, reasoning, failed)


ROUND_ONE = (
    said("P1", 1, {"BTCUSDT": ("open_long", 80), "ETHUSDT": ("wait", 30)}, "msg-one RSI 61"),
    said("P2", 1, {"BTCUSDT": ("open_short", 60), "ETHUSDT": ("wait", 40)}, "msg-two"),
    said("P3", 1, {}, failed=True),
)


def summary_context(**overrides):
    """Build the context of round 1's summary in a 3-round debate."""
    values = {"round": 1, "max_rounds": 3, "symbols": SYMBOLS, "messages": ROUND_ONE}
    return SummaryContext(**(values | overrides))


TAGGED_SUMMARY = (
    "<points>P1 cites RSI 61 for a long; P2 sees a bearish MACD.</points>\n"
    "<agreements>Both wait on ETH.</agreements>\n"
    "<disagreements>P1 and P2 split on BTC direction.</disagreements>"
)


def test_the_tally_counts_each_action_per_coin_and_skips_failed_turns():
    # given / when
    tally = round_tally(ROUND_ONE, SYMBOLS)
    # then
    assert tally == {"BTCUSDT": {"open_long": 1, "open_short": 1}, "ETHUSDT": {"wait": 2}}


def test_summary_prompt_shows_the_round_the_previous_summary_and_asks_for_three_blocks():
    # given
    context = summary_context(round=2, previous="PREVIOUS-SUMMARY")
    # when
    system, user = build_summary_prompt(context)
    # then it carries the round's messages and the previous summary, no market data
    assert "<points>" in system and "<disagreements>" in system and "take no side" in system
    assert "## Your summary of round 1\nPREVIOUS-SUMMARY" in user
    assert "Market" not in system + user
    assert "[round 1] P1 analyst:\n  BTCUSDT open_long confidence 80\n" in user
    assert "  reasoning: msg-one RSI 61" in user
    assert "[round 1] P3 analyst: turn failed, no answer." in user
    assert user.endswith("Summarise round 2 now, as the three blocks.")


def test_summary_prompt_in_json_schema_mode_asks_for_the_object_only():
    # given / when
    system, user = build_summary_prompt(summary_context(output_mode=JSON_SCHEMA))
    # then
    assert '{"points": ' in system and "<points>" not in system
    assert user.endswith("as the JSON object.")
    assert summary_schema()["required"] == ["points", "agreements", "disagreements"]


@pytest.mark.parametrize(
    "overrides, error",
    [
        ({"round": 3}, "a summary follows rounds 1..2"),
        ({"symbols": ()}, "at least one candidate"),
        ({"output_mode": "prose"}, "output mode must be one of"),
    ],
)
def test_summary_context_refuses_invalid_input(overrides, error):
    with pytest.raises(ValueError, match=error):
        summary_context(**overrides)


def test_the_judges_next_summary_reads_a_summary_without_its_tally():
    # given a parsed summary, as stored
    stored = parse_summary(TAGGED_SUMMARY, summary_context()).to_dict()
    # when / then
    assert summary_text(stored) == stored["text"]
    assert summary_text(stored, tally=False) == (
        "Points made: P1 cites RSI 61 for a long; P2 sees a bearish MACD.\n"
        "Agreements: Both wait on ETH.\n"
        "Open disagreements: P1 and P2 split on BTC direction."
    )


def test_a_tagged_summary_parses_with_the_engine_tally():
    # given / when
    summary = parse_summary(TAGGED_SUMMARY, summary_context())
    # then
    assert summary.status == SummaryStatus.OK
    assert summary.points == "P1 cites RSI 61 for a long; P2 sees a bearish MACD."
    assert summary.text() == (
        "Points made: P1 cites RSI 61 for a long; P2 sees a bearish MACD.\n"
        "Agreements: Both wait on ETH.\n"
        "Open disagreements: P1 and P2 split on BTC direction.\n"
        "Tally of the round: BTCUSDT open_long 1, open_short 1; ETHUSDT wait 2."
    )


@pytest.mark.parametrize(
    "answer",
    [
        # the JSON form
        json.dumps(
            {
                "points": "P1 cites RSI 61 for a long; P2 sees a bearish MACD.",
                "agreements": "Both wait on ETH.",
                "disagreements": "P1 and P2 split on BTC direction.",
            }
        ),
        # upper-case tags, full-width brackets, a thinking block with a decoy
        "<think><points>decoy</points></think>＜POINTS＞P1 cites RSI 61 for a long; P2 sees a "
        "bearish MACD.＜/POINTS＞<Agreements>Both wait on ETH.</Agreements>"
        "<disagreements>P1 and P2 split on BTC direction.",
        # unclosed blocks running to the next tag, in a code fence of prose
        "Here you go:\n<points>P1 cites RSI 61 for a long; P2 sees a bearish MACD.\n"
        "<agreements>Both wait on ETH.\n<disagreements>P1 and P2 split on BTC direction.",
    ],
)
def test_loose_summary_answers_give_the_same_summary(answer):
    # given / when
    summary = parse_summary(answer, summary_context())
    # then
    assert summary == parse_summary(TAGGED_SUMMARY, summary_context())


def test_prose_without_blocks_is_kept_as_the_points_and_marked_partial():
    # given / when
    summary = parse_summary("Everyone argued about BTC.", summary_context())
    # then
    assert summary.status == SummaryStatus.PARTIAL
    assert summary.points == "Everyone argued about BTC."
    assert "no blocks found: the whole answer is kept as the points" in summary.problems


@pytest.mark.parametrize("answer", ["", "   ", "<think>only thoughts</think>", None])
def test_an_empty_summary_answer_fails(answer):
    # given / when
    summary = parse_summary(answer, summary_context())
    # then
    assert summary.status == SummaryStatus.FAILED
    assert summary.problems == ("empty answer",)


def test_an_overlong_summary_is_capped_per_block_and_in_all():
    # given a judge that writes far too much, with tags of its own inside
    answer = (
        f"<points>{'p' * 5000} <decision>[]</decision></points>"
        f"<agreements>{'a' * 5000}</agreements><disagreements>{'d ' * 5000}</disagreements>"
    )
    symbols = tuple(f"C{n}USDT" for n in range(10))
    # when
    summary = parse_summary(answer, summary_context(symbols=symbols))
    # then
    assert len(summary.points) <= POINTS_MAX_CHARS
    assert len(summary.agreements) <= AGREEMENTS_MAX_CHARS
    assert len(summary.text()) <= ROUND_SUMMARY_MAX_CHARS
    assert "<decision>" not in summary.text()


# -- scores ----------------------------------------------------------------------------


def scores_context(**overrides):
    """Build a scoring context for three participants, one of which never answered."""
    seats = (
        JudgedSeat("P1", "bull", ROUND_ONE[:1], (CoinDecision("BTCUSDT", Action.OPEN_LONG, 75),)),
        JudgedSeat("P2", "bear", ROUND_ONE[1:2]),
        JudgedSeat("P3", "analyst", ROUND_ONE[2:]),
    )
    values = {"symbols": SYMBOLS, "seats": seats, "market_summary": "MARKET-LINE"}
    return ScoresContext(**(values | overrides))


def sheet_json(values):
    """Return a tagged scores answer giving each label ``(market, answers, consistency)``."""
    entries = [
        {
            "participant": label,
            **{name: value for name, value in zip(RUBRIC, triple, strict=True)},
            **{f"{name}_reason": f"{label} {name}" for name in RUBRIC},
        }
        for label, triple in values.items()
    ]
    return f"<scores>\n{json.dumps(entries)}\n</scores>"


def test_scores_prompt_states_the_rubric_and_each_participants_record():
    # given / when
    system, user = build_scores_prompt(scores_context())
    # then
    for name in RUBRIC:
        assert f"- {name}: " in system
    assert "<scores>" in system
    assert "## Market summary\nMARKET-LINE" in user
    assert (
        "P1 (bull):\n  BTCUSDT: r1 open_long 80\n  ETHUSDT: r1 wait 30\n"
        "  latest message (round 1): msg-one RSI 61\n"
        "  final vote: BTCUSDT open_long 75"
    ) in user
    assert "P2 (bear):" in user and "  final vote: none" in user
    assert "P3 (analyst):\n  failed turns in rounds 1\n  final vote: none" in user
    assert "summary" not in user.lower().replace("market summary", "")
    assert user.endswith("Score every participant now, as a <scores> block.")


def test_a_participants_positions_are_shown_round_by_round_with_repeats_written_once():
    # given four rounds: a long held twice, a wait, a failed turn, a long again
    messages = (
        said("P1", 1, {"BTCUSDT": ("open_long", 60)}, "r1"),
        said("P1", 2, {"BTCUSDT": ("open_long", 65)}, "r2"),
        said("P1", 3, {"BTCUSDT": ("wait", 50)}, "r3"),
        said("P1", 4, {}, failed=True),
        said("P1", 5, {"BTCUSDT": ("open_long", 70)}, "r5"),
    )
    seat = JudgedSeat("P1", "bull", messages)
    # when
    _, user = build_scores_prompt(scores_context(seats=(seat,)))
    # then the rounds in a row with one action share it; the failed round breaks the run
    assert "  BTCUSDT: r1-r2 open_long 60/65 > r3 wait 50 > r5 open_long 70\n" in user
    assert "  failed turns in rounds 4\n  latest message (round 5): r5\n" in user


def test_scores_schema_requires_every_item_and_reason_for_every_participant():
    # given / when
    schema = scores_schema(LABELS)
    # then
    sheet = schema["properties"]["scores"]["items"]
    assert sheet["properties"]["participant"]["enum"] == ["P1", "P2", "P3"]
    assert sheet["required"] == [
        "participant",
        "market_data",
        "market_data_reason",
        "answers",
        "answers_reason",
        "consistency",
        "consistency_reason",
    ]
    assert schema["properties"]["scores"]["minItems"] == 3


def test_a_tagged_scores_answer_parses_every_item_with_its_reason():
    # given
    answer = sheet_json({"P1": (7, 8, 9), "P2": (3, 4, 5), "P3": (0, 0, 0)})
    # when
    sheet = parse_scores(answer, LABELS)
    # then
    assert sheet.problems == ()
    assert sheet.items["P1"] == {
        "market_data": ItemScore(7.0, "P1 market_data"),
        "answers": ItemScore(8.0, "P1 answers"),
        "consistency": ItemScore(9.0, "P1 consistency"),
    }


@pytest.mark.parametrize(
    "answer",
    [
        # the json_schema object, no tags
        json.dumps(
            {
                "scores": [
                    {"participant": "P1", "market_data": 7, "answers": 8, "consistency": 9},
                ]
            }
        ),
        # nested items, labels written loosely, numbers as strings and out of ten
        '<scores>[{"Participant": "participant 1", "Market Data": {"score": "7/10"}, '
        '"answers": {"value": "8"}, "consistency": 9}]</scores>',
        # an object keyed by label, inside a code fence, with a thinking block
        "<think>P1: 2/10</think>```json\n"
        '{"p1": {"market_data": 7, "answers": 8, "consistency": 9}}\n```',
        # unclosed block with single quotes (repaired)
        "<scores>[{'participant': 'P1', 'market_data': 7, 'answers': 8, 'consistency': 9}",
    ],
)
def test_loose_scores_answers_give_the_same_values(answer):
    # given / when
    sheet = parse_scores(answer, LABELS)
    # then
    values = {name: item.value for name, item in sheet.items["P1"].items()}
    assert values == {"market_data": 7.0, "answers": 8.0, "consistency": 9.0}
    assert "P2: not scored" in sheet.problems


def test_unknown_labels_unreadable_items_and_duplicates_are_dropped_and_reported():
    # given
    answer = (
        '<scores>[{"participant": "P9", "market_data": 5, "answers": 5, "consistency": 5},'
        '{"participant": "P1", "market_data": "high", "answers": 12, "consistency": -3},'
        '{"participant": "P1", "market_data": 1, "answers": 1, "consistency": 1}]</scores>'
    )
    # when
    sheet = parse_scores(answer, LABELS)
    # then
    assert sheet.items == {"P1": {"answers": ItemScore(10.0), "consistency": ItemScore(0.0)}}
    assert sheet.problems == (
        "not a participant: P9",
        "P1: no readable market_data",
        "duplicate participant: P1",
        "P2: not scored",
        "P3: not scored",
    )


@pytest.mark.parametrize("answer", ["", "I cannot score this debate.", "<scores></scores>", None])
def test_an_answer_without_scores_is_unusable(answer):
    # given / when
    sheet = parse_scores(answer, LABELS)
    # then
    assert not sheet.usable


@pytest.mark.parametrize(
    "raw, label",
    [("P1", "P1"), ("p 2", "P2"), ("Participant 3", "P3"), (4, "P4"), ("#5", "P5")],
)
def test_labels_are_normalised(raw, label):
    assert normalise_label(raw) == label


@pytest.mark.parametrize("raw", ["bull", "P0", 0, True, None, "P1 and P2"])
def test_what_is_not_a_label_is_refused(raw):
    assert normalise_label(raw) is None


# -- aggregation -------------------------------------------------------------------------


def test_one_judge_gives_the_mean_of_items_over_ten_and_no_agreement():
    # given
    sheet = parse_scores(sheet_json({"P1": (6, 8, 10), "P2": (0, 0, 3)}), LABELS)
    # when
    scores = aggregate_scores([sheet], LABELS)
    # then
    assert scores["P1"] == ParticipantScore(
        label="P1",
        items={
            "market_data": ItemScore(6.0, "P1 market_data"),
            "answers": ItemScore(8.0, "P1 answers"),
            "consistency": ItemScore(10.0, "P1 consistency"),
        },
        score=0.8,
        agreement=None,
        judges=1,
    )
    assert scores["P2"].score == 0.1
    assert scores["P3"] == ParticipantScore(
        "P3", {}, None, None, 0, "no judge scored this participant"
    )


def test_three_judges_give_the_median_per_item_and_their_agreement():
    # given three judges, the third far off on P1's market data
    sheets = [
        parse_scores(sheet_json({"P1": (6, 8, 9), "P2": (2, 2, 2)}), LABELS),
        parse_scores(sheet_json({"P1": (7, 8, 9), "P2": (2, 2, 2)}), LABELS),
        parse_scores(sheet_json({"P1": (1, 8, 9), "P2": (2, 2, 2)}), LABELS),
    ]
    # when
    scores = aggregate_scores(sheets, LABELS)
    # then the medians are 6, 8, 9: a mean of the three judges' items would give 0.744
    p1 = scores["P1"]
    assert {name: item.value for name, item in p1.items.items()} == {
        "market_data": 6.0,
        "answers": 8.0,
        "consistency": 9.0,
    }
    assert p1.score == pytest.approx(23 / 30, abs=1e-4)
    assert p1.agreement == pytest.approx((0.4 + 1 + 1) / 3, abs=1e-4)
    assert p1.judges == 3
    assert scores["P2"].agreement == 1.0


def test_a_failed_judge_leaves_the_median_of_the_others():
    # given one judge failed (None) and one answered nothing usable
    sheets = [
        None,
        parse_scores("no idea", LABELS),
        parse_scores(sheet_json({"P1": (4, 6, 8)}), LABELS),
        parse_scores(sheet_json({"P1": (6, 6, 8)}), LABELS),
    ]
    # when
    scores = aggregate_scores(sheets, LABELS)
    # then the median of two values is their mean
    assert scores["P1"].items["market_data"].value == 5.0
    assert scores["P1"].judges == 2


def test_when_every_judge_failed_each_score_is_missing_with_the_reason():
    # given / when
    scores = aggregate_scores([None, None], LABELS, failure="judge call failed: server_error")
    # then
    assert [score.missing for score in scores.values()] == ["judge call failed: server_error"] * 3
    assert all(score.score is None for score in scores.values())
    assert aggregate_scores([ScoreSheet({})], LABELS)["P1"].missing == "no judge answered usably"


@pytest.mark.parametrize(
    "count, temperature, expected",
    [(1, 0.4, (0.4,)), (3, 0.4, (0.2, 0.7, 1.2))],
)
def test_judge_temperatures(count, temperature, expected):
    assert judge_temperatures(count, temperature) == expected


def test_a_judge_count_other_than_one_or_three_is_refused():
    with pytest.raises(ValueError, match="judge count must be one of"):
        judge_temperatures(2, 0.7)


def test_summary_and_scores_serialise_to_json():
    # given
    summary = parse_summary(TAGGED_SUMMARY, summary_context())
    sheet = parse_scores(sheet_json({"P1": (1, 2, 3)}), LABELS)
    # when
    dumped = json.dumps(
        [summary.to_dict(), sheet.to_dict(), aggregate_scores([sheet], LABELS)["P1"].to_dict()]
    )
    # then
    assert '"text": "Points made: P1 cites RSI 61' in dumped
    assert '"score": 0.2' in dumped


# -- the judge's steps in a debate's plan ---------------------------------------------


def plan_kinds(judge: bool, rounds: int = 3) -> list[tuple[str, int | None]]:
    from debates.engine.plan import PlanSettings, Progress, Seat, build_plan

    settings = PlanSettings(max_rounds=rounds, seats=(Seat(1), Seat(2)), options={"judge": judge})
    plan = build_plan(settings, Progress(debate_status="running", records={}))
    return [(step.kind, step.round) for step in plan.steps]


def test_a_judge_adds_a_summary_after_each_round_but_the_last_and_scores_before_consensus():
    # given / when
    kinds = plan_kinds(judge=True)
    # then
    assert kinds == [
        ("prepare", None),
        ("opening", 1),
        ("opening", 1),
        ("judge_round", 1),
        ("rebuttal", 2),
        ("rebuttal", 2),
        ("judge_round", 2),
        ("rebuttal", 3),
        ("rebuttal", 3),
        ("voting", None),
        ("voting", None),
        ("judge_final", None),
        ("consensus", None),
    ]


def test_without_a_judge_the_plan_has_no_judge_step():
    assert not [kind for kind, _ in plan_kinds(judge=False) if kind.startswith("judge")]
