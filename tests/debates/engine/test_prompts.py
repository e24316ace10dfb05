"""Turn and vote prompts: content, history digests, caps and the single output contract."""

import re

import pytest

from debates.engine.personalities import PERSONALITIES, VARIANTS
from debates.engine.prompts import (
    LABEL_MAX_CHARS,
    MARKET_SUMMARY_MAX_CHARS,
    MARKET_TEXT_MAX_CHARS,
    PROMPT_FIXED_MAX_CHARS,
    SUMMARY_MAX_CHARS,
    SYMBOL_MAX_CHARS,
    HistoryEntry,
    TurnContext,
    VoteContext,
    build_turn_prompt,
    build_vote_prompt,
    max_prompt_chars,
    participant_label,
    summarise,
)
from debates.engine.types import Action, CoinDecision

SYMBOLS = ("BTCUSDT", "ETHUSDT")
PERSONALITY_IDS = list(PERSONALITIES)


def turn(round_number, history=(), **overrides):
    """Build a turn context with plain defaults."""
    values = {
        "round": round_number,
        "max_rounds": 3,
        "personality": "analyst",
        "variant": "balanced",
        "symbols": SYMBOLS,
        "market_text": "BTCUSDT 4h close 97000 RSI 61",
        "history": tuple(history),
        "participant": "P3",
    }
    return TurnContext(**(values | overrides))


def message(speak_order, round_number, reasoning="", decisions=(), failed=False):
    """Build an earlier message by the participant speaking at ``speak_order``."""
    return HistoryEntry(
        participant=participant_label(speak_order),
        personality=PERSONALITY_IDS[(speak_order - 1) % 5],
        round=round_number,
        decisions=tuple(decisions),
        reasoning=reasoning,
        failed=failed,
    )


def test_round_one_has_no_history():
    # given earlier messages handed to an opening turn by mistake
    history = [message(1, 1, "marker-from-history")]
    # when
    prompt = build_turn_prompt(turn(1, history))
    # then
    assert "The debate so far" not in prompt.user
    assert "marker-from-history" not in prompt.system + prompt.user
    assert "This is the opening round" in prompt.user
    assert "Write your opening analysis for round 1 now" in prompt.user


def test_an_opening_with_a_book_shows_the_account_before_the_turn_and_a_debates_none():
    # given an opening of a baseline's answer, with the trader's book, and a debate's own
    book = "BTCUSDT: long 0.01 at 97000; open_long would do nothing."
    with_book = build_turn_prompt(turn(1, book=book))
    plain = build_turn_prompt(turn(1))
    # then the book is shown as a vote shows it, right before the speaker's own part
    assert "## Your trader's account\nThe decision trades this account." in with_book.user
    assert with_book.user.index(book) < with_book.user.index("## Your turn")
    assert with_book.system == plain.system
    # and a debate's opening carries no account
    assert "account" not in plain.user


def test_an_opening_with_the_largest_book_stays_under_the_smallest_debates_bound():
    # given an opening of the smallest debate (2 rounds of 2) with every input over its cap
    context = turn(
        1,
        max_rounds=2,
        market_text="行情 " * 100_000,
        strategy_role="角色" * 10_000,
        custom_prompt="custom " * 10_000,
        book="账户 " * 100_000,
        symbols=tuple(f"COIN{n:02d}".ljust(SYMBOL_MAX_CHARS, "X") for n in range(10)),
    )
    # when / then
    assert len(build_turn_prompt(context)) <= max_prompt_chars(2, 2, 10)


def test_round_three_shows_every_earlier_message_as_positions_and_summary():
    # given two rounds of three participants, one of whose turns failed
    btc = CoinDecision("BTCUSDT", Action.OPEN_LONG, 80, 10, 0.3, 0.03, 0.06, "EMA20 above EMA50")
    history = [
        message(speaker, round_number, f"reasoning r{round_number} p{speaker}", [btc])
        for round_number in (1, 2)
        for speaker in (1, 2, 3)
        if (round_number, speaker) != (2, 2)
    ] + [message(2, 2, failed=True)]
    # when
    prompt = build_turn_prompt(turn(3, history))
    # then
    for round_number in (1, 2):
        for speaker in (1, 3):
            personality = PERSONALITY_IDS[speaker - 1]
            assert (
                f"[round {round_number}] P{speaker} {personality}:\n"
                "  BTCUSDT open_long confidence 80 leverage 10x size 30% SL 3% TP 6%: "
                "EMA20 above EMA50\n"
                f"  reasoning: reasoning r{round_number} p{speaker}"
            ) in prompt.user
    assert "[round 2] P2 bear: turn failed, no answer." in prompt.user
    assert prompt.user.count("[round ") == 6
    assert "Write your rebuttal for round 3 now" in prompt.user
    assert "Answer the other participants" in prompt.user


def test_speaker_is_told_its_own_label():
    # given
    # when
    prompt = build_turn_prompt(turn(2, participant="P3"))
    # then
    assert "You are P3, the 📊 Analyst; messages labelled P3 are your own." in prompt.user


@pytest.mark.parametrize(
    ("reasoning", "summary"),
    [
        ("价" * 1_000, "价" * (SUMMARY_MAX_CHARS - 1) + "…"),
        ("涨，" * 500, ("涨，" * 500)[: SUMMARY_MAX_CHARS - 1] + "…"),
        ("🐂" * 1_000, "🐂" * (SUMMARY_MAX_CHARS - 1) + "…"),
        ("word " * 200, ("word " * 80).strip() + "…"),
        ("short\n\n  text", "short text"),
    ],
    ids=["chinese", "chinese with punctuation", "emoji", "words", "short"],
)
def test_reasoning_summary_is_capped_in_characters(reasoning, summary):
    # given an earlier message with long reasoning
    history = [message(1, 1, reasoning)]
    # when
    prompt = build_turn_prompt(turn(2, history))
    # then
    assert f"  reasoning: {summary}\n" in prompt.user
    assert len(summary) <= SUMMARY_MAX_CHARS


@pytest.mark.parametrize(
    ("text", "cap", "summary"),
    [
        ("价格上涨", 4, "价格上涨"),
        ("价格上涨", 3, "价格…"),
        ("价格上涨", 1, "…"),
        ("alpha beta gamma delta", 12, "alpha beta…"),
        ("", 5, ""),
    ],
)
def test_summarise_counts_characters_not_bytes(text, cap, summary):
    assert summarise(text, cap) == summary


def test_summarise_refuses_a_cap_below_one():
    with pytest.raises(ValueError, match="max_chars must be at least 1"):
        summarise("text", 0)


def _worst_case_history(rounds, participants, coins):
    """Return every earlier message a last speaker sees, each as long as inputs allow."""
    decisions = tuple(
        CoinDecision(f"COIN{n:02d}".ljust(SYMBOL_MAX_CHARS, "X"), Action.OPEN_SHORT, 55.5,
                     10**30, 0.123456, 0.0123456, 0.0654321, "理由" * 500)
        for n in range(coins)
    )  # fmt: skip
    return [
        HistoryEntry("P" * 100 + str(speaker), "personality" * 10, round_number, decisions,
                     "很长的推理，" * 2_000)
        for round_number in range(1, rounds + 1)
        for speaker in range(1, participants + 1)
    ][:-1]  # fmt: skip


def test_largest_prompt_of_six_participants_and_five_rounds_stays_under_the_bound():
    # given 6 participants x 5 rounds x 10 coins with every input far above its cap
    rounds, participants, coins = 5, 6, 10
    symbols = tuple(f"COIN{n:02d}".ljust(SYMBOL_MAX_CHARS, "X") for n in range(coins))
    history = _worst_case_history(rounds, participants, coins)
    common = {
        "variant": "conservative",
        "symbols": symbols,
        "strategy_role": "角色" * 10_000,
        "custom_prompt": "custom " * 10_000,
        "participant": "P" * 100,
    }
    # when
    sizes = [
        len(build_turn_prompt(TurnContext(
            round=rounds, max_rounds=rounds, personality=personality,
            market_text="行情 " * 100_000, history=tuple(history), **common,
        )))
        for personality in PERSONALITIES
    ] + [
        len(build_vote_prompt(VoteContext(
            personality=personality, market_summary="摘要 " * 100_000,
            positions=tuple(history[-participants:]), **common,
        )))
        for personality in PERSONALITIES
    ]  # fmt: skip
    # then
    assert max(sizes) <= max_prompt_chars(rounds, participants, coins)
    assert max_prompt_chars(rounds, participants, coins) == 102_272


def test_fixed_text_stays_under_its_named_bound():
    # given every personality, variant and kind of prompt with empty variable parts
    fixed = {"symbols": ("X" * SYMBOL_MAX_CHARS,), "participant": "P" * LABEL_MAX_CHARS}
    kinds = [(p, v) for p in PERSONALITIES for v in VARIANTS]
    # when
    sizes = [
        len(build_turn_prompt(turn(r, personality=p, variant=v, market_text="", **fixed)))
        for p, v in kinds
        for r in (1, 2)
    ] + [len(build_vote_prompt(VoteContext(p, v, market_summary="", **fixed))) for p, v in kinds]
    # then
    assert max(sizes) <= PROMPT_FIXED_MAX_CHARS + 2 * (SYMBOL_MAX_CHARS + 2)


def test_the_bound_grows_linearly_with_rounds_times_participants():
    # given
    base = max_prompt_chars(0, 0, 10)
    # when
    steps = [max_prompt_chars(r, p, 10) - base for r, p in [(1, 1), (2, 3), (5, 6)]]
    # then
    assert steps == [steps[0] * 1, steps[0] * 6, steps[0] * 30]


LONG_MARKET = "line\n" * 10_000
SUMMARY_CAP = MARKET_SUMMARY_MAX_CHARS


@pytest.mark.parametrize(
    ("builder", "context", "cap"),
    [
        (build_turn_prompt, turn(1, market_text=LONG_MARKET), MARKET_TEXT_MAX_CHARS),
        (build_vote_prompt, VoteContext("bull", "balanced", SYMBOLS, LONG_MARKET), SUMMARY_CAP),
    ],
    ids=["turn", "vote"],
)
def test_market_text_is_cut_with_a_note(builder, context, cap):
    # given market text far above its cap
    # when
    system = builder(context).system
    # then it is the system text's last section, cut
    section = system.split("\n\n")[-1]
    assert section.endswith(f" cut at {cap} characters]")
    assert len(section.split("\n", 1)[1]) <= cap


def _prompts():
    quote = "<final_vote>[]</final_vote> ```json {} ``` <decision>[]</decision>"
    history = [message(1, 1, quote), message(2, 1, "plain")]
    return [
        build_turn_prompt(turn(1)),
        build_turn_prompt(turn(2, history)),
        build_vote_prompt(VoteContext("bear", "scalping", SYMBOLS, "summary", tuple(history))),
    ]


@pytest.mark.parametrize("prompt", _prompts(), ids=["opening", "rebuttal", "vote"])
def test_every_prompt_states_exactly_one_output_contract(prompt):
    # given a turn or vote prompt, even one quoting other formats from the debate
    text = prompt.system + prompt.user
    # when
    tags = re.findall(r"</?[a-z_]+>", text)
    # then
    assert prompt.system.count("## Output format") == 1
    assert prompt.system.count("<decision>\n[\n") == 1
    assert set(tags) == {"<reasoning>", "</reasoning>", "<decision>", "</decision>"}
    assert "final_vote>" not in text
    assert "```" not in text
    assert "0.03 = 3 %" in prompt.system


def test_vote_prompt_lists_coins_summary_and_positions_by_label():
    # given the latest message of two participants
    eth = CoinDecision("ETHUSDT", Action.WAIT, 40, 1, 0.2, 0.02, 0.04, "reason-marker")
    btc = CoinDecision("BTCUSDT", Action.OPEN_SHORT, 65, 4, 0.3, 0.01, 0.02, "reason-marker")
    positions = (message(1, 3, "funding too high", [btc, eth]), message(2, 3, failed=True))
    context = VoteContext("contrarian", "aggressive", SYMBOLS, "BTC 97000 ETH 3600", positions)
    # when
    prompt = build_vote_prompt(context)
    # then
    assert prompt.system.endswith(
        "## Candidate coins\nBTCUSDT, ETHUSDT\n\n## Market summary\nBTC 97000 ETH 3600"
    )
    assert prompt.user == (
        "## Latest positions of the participants\n"
        "[round 3] P1 bull: BTCUSDT open_short conf 65 4x size 30% SL 1% TP 2%; "
        "ETHUSDT wait conf 40\n"
        "  reasoning: funding too high\n"
        "[round 3] P2 bear: turn failed, no answer.\n\n"
        "## Your vote\nIt is time for the final vote. You are the 🔄 Contrarian.\n\n"
        f"## Your role\n{PERSONALITIES['contrarian'].role}\n\n"
        "Cast your vote now, as a <reasoning> block followed by a <decision> block."
    )
    assert VARIANTS["aggressive"] in prompt.system


def test_turn_prompt_carries_role_variant_and_strategy_text():
    # given
    context = turn(
        2, personality="risk_manager", variant="scalping", strategy_role="Trend follower.",
        custom_prompt="Never short DOGE.",
    )  # fmt: skip
    # when
    prompt = build_turn_prompt(context)
    # then
    assert "Your turn in round 2/3. You are P3, the" in prompt.user
    assert PERSONALITIES["risk_manager"].role in prompt.user
    assert VARIANTS["scalping"] in prompt.system
    assert "## Strategy\nTrend follower." in prompt.system
    assert "## Additional instructions\nNever short DOGE." in prompt.system
    assert "## Candidate coins\nBTCUSDT, ETHUSDT" in prompt.system
    assert "## Market data\nBTCUSDT 4h close 97000 RSI 61" in prompt.system


@pytest.mark.parametrize(
    ("overrides", "error"),
    [
        ({"round": 0}, ValueError),
        ({"round": 4}, ValueError),
        ({"symbols": ()}, ValueError),
        ({"symbols": ("X" * 21,)}, ValueError),
        ({"personality": "shark"}, KeyError),
        ({"variant": "yolo"}, KeyError),
    ],
)
def test_turn_context_refuses_invalid_input(overrides, error):
    with pytest.raises(error):
        turn(1, **overrides)


def test_every_turn_of_a_debate_begins_with_what_an_earlier_turn_sent():
    # given the turns of a 3x3 debate, each seat with its own personality
    btc = CoinDecision("BTCUSDT", Action.OPEN_LONG, 70)
    said = [message(speaker, r, f"r{r} p{speaker}", [btc]) for r in (1, 2) for speaker in (1, 2, 3)]
    seats = {1: "bull", 2: "bear", 3: "analyst"}

    def prompt(r, speaker):
        history = [m for m in said if (m.round, int(m.participant[1:])) < (r, speaker)]
        return build_turn_prompt(
            turn(r, history, personality=seats[speaker], participant=f"P{speaker}")
        )

    first, later = prompt(1, 1), prompt(2, 3)
    # then every turn's system text is the first turn's, word for word
    assert {prompt(r, s).system for r in (1, 2, 3) for s in seats} == {first.system}
    # and a later turn's user text starts with the history an earlier turn of its round sent
    earlier = prompt(2, 2).user
    shared = earlier[: earlier.index("\n\n## Your turn")]
    assert later.user.startswith(shared)
    assert "r2 p1" in shared


def test_every_vote_of_a_debate_shares_all_but_the_voters_own_part():
    # given two voters of one debate
    positions = (message(1, 3, "up", [CoinDecision("BTCUSDT", Action.OPEN_LONG, 70)]),)
    bull, bear = (
        build_vote_prompt(
            VoteContext(p, "balanced", SYMBOLS, "summary", positions, participant=label)
        )
        for p, label in (("bull", "P1"), ("bear", "P2"))
    )
    # then
    assert bull.system == bear.system
    head = bull.user[: bull.user.index("## Your vote")]
    assert bear.user.startswith(head)
    assert "final vote. You are P2, the" in bear.user


def test_a_summarised_round_carries_the_summary_and_latest_positions_not_the_history():
    # given a round-3 turn with the judge's summary of round 2 and each latest position
    btc = CoinDecision("BTCUSDT", Action.OPEN_LONG, 70, 5, reasoning="EMA20 above EMA50")
    history = [message(s, r, f"history-marker r{r} p{s}", [btc]) for r in (1, 2) for s in (1, 2)]
    latest = [message(1, 2, "latest-marker", [btc]), message(2, 2, "latest-marker", [btc])]
    context = turn(
        3,
        history,
        summary="Points made: P1 cites the EMA cross.",
        positions=tuple(latest),
        market_summary="BTCUSDT price 97,000; RSI14 4h 61",
        market_text="FULL-MARKET-TABLE",
    )
    # when
    prompt = build_turn_prompt(context)
    # then
    assert "## The judge's summary of round 2\nPoints made: P1 cites the EMA cross." in prompt.user
    assert prompt.system.endswith("## Market summary\nBTCUSDT price 97,000; RSI14 4h 61")
    assert (
        "## Latest positions of the participants\n"
        "[round 2] P1 bull: BTCUSDT open_long conf 70 5x\n"
        "[round 2] P2 bear: BTCUSDT open_long conf 70 5x\n\n"
    ) in prompt.user
    for absent in ("history-marker", "latest-marker", "FULL-MARKET-TABLE", "so far", "EMA20"):
        assert absent not in prompt.system + prompt.user


def test_a_summarised_prompt_stays_the_same_size_whatever_the_round():
    # given the same summary and positions in rounds 2 and 5, and a history 4x as long
    btc = CoinDecision("BTCUSDT", Action.WAIT, 40, reasoning="x" * 90)
    positions = tuple(message(s, 1, "r" * 400, [btc]) for s in (1, 2, 3))
    sizes = []
    for round_number in (2, 5):
        history = [message(s, r, "r" * 400, [btc]) for r in range(1, round_number) for s in (1, 2)]
        context = turn(
            round_number,
            history,
            max_rounds=5,
            summary="s" * 1400,
            positions=positions,
            market_summary="m" * 400,
        )
        # when
        sizes.append(len(build_turn_prompt(context)))
    # then
    assert sizes[0] == sizes[1]


def test_without_a_summary_a_later_round_shows_the_full_history_as_before():
    # given a round-2 turn with positions but an empty summary (the judge failed)
    history = [message(1, 1, "history-marker")]
    # when
    prompt = build_turn_prompt(turn(2, history, positions=tuple(history), summary=" "))
    # then
    assert "## The debate so far\n[round 1] P1 bull:" in prompt.user
    assert "history-marker" in prompt.user
    assert "judge's summary" not in prompt.user


def test_round_one_refuses_a_summary():
    # given / when / then
    with pytest.raises(ValueError, match="round 1 has no earlier round"):
        turn(1, summary="Points made: none.")
