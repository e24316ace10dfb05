"""Parsing of model output (SPEC 5.4), against answers real models write."""

import pytest

from debates.engine.parsing import normalise_action, normalise_symbol, parse_output
from debates.engine.types import Action, CoinDecision, Dropped, ParseStatus

CANDIDATES = ("BTCUSDT", "ETHUSDT", "SOLUSDT")

BTC_LONG = (
    '{"symbol": "BTCUSDT", "action": "open_long", "confidence": 80, "leverage": 10, '
    '"position_pct": 0.3, "stop_loss": 0.03, "take_profit": 0.06, "reasoning": "breakout"}'
)
ETH_SHORT = '{"symbol": "ETHUSDT", "action": "open_short", "confidence": 60}'


def d(symbol, action, confidence, leverage=None, pct=None, sl=None, tp=None, reasoning=""):
    """Build the decision a test expects, positionally for a compact table."""
    return CoinDecision(symbol, Action(action), confidence, leverage, pct, sl, tp, reasoning)


BTC = d("BTCUSDT", "open_long", 80.0, 10, 0.3, 0.03, 0.06, "breakout")
ETH = d("ETHUSDT", "open_short", 60.0)
OK, PARTIAL, FAILED = ParseStatus.OK, ParseStatus.PARTIAL, ParseStatus.FAILED

# (id, model output, status, decisions, reasons of the dropped parts)
MALFORMED = [
    (
        "contract as specified",
        f"<reasoning>up</reasoning>\n<decision>\n[{BTC_LONG}, {ETH_SHORT}]\n</decision>",
        OK,
        [BTC, ETH],
        [],
    ),
    ("missing closing tag", f"<decision>[{BTC_LONG}]", OK, [BTC], []),
    (
        "truncated after a complete entry",
        f'<decision>[{BTC_LONG}, {{"symbol": "ETHUSDT", "action": "open_sh',
        PARTIAL,
        [BTC],
        ["truncated entry"],
    ),
    (
        "truncated inside a number",
        f'<decision>[{BTC_LONG}, {{"symbol": "ETHUSDT", "action": "open_short", "confidence": 6',
        PARTIAL,
        [BTC],
        ["truncated entry"],
    ),
    (
        "truncated inside the only entry",
        '<decision>[{"symbol": "BTCUSDT", "action": "open_lo',
        FAILED,
        [],
        ["truncated entry"],
    ),
    (
        "closing bracket missing but entries complete",
        f"<decision>[{BTC_LONG}, {ETH_SHORT}\n",
        OK,
        [BTC, ETH],
        [],
    ),
    (
        "trailing commas",
        f"<decision>[{BTC_LONG[:-1]},}}, {ETH_SHORT},]</decision>",
        OK,
        [BTC, ETH],
        [],
    ),
    (
        "full-width commas, colons and brackets",
        '<decision>［｛"symbol"："ETHUSDT"，"action"："open_short"，'
        '"confidence"：60｝］</decision>',
        OK,
        [ETH],
        [],
    ),
    (
        "smart quotes",
        "<decision>[{“symbol”: “ETHUSDT”, “action”: “open_short”, “confidence”: 60}]</decision>",
        OK,
        [ETH],
        [],
    ),
    ("a single object", f"<decision>{ETH_SHORT}</decision>", OK, [ETH], []),
    (
        "object wrapping the array",
        f'<decision>{{"decisions": [{BTC_LONG}, {ETH_SHORT}]}}</decision>',
        OK,
        [BTC, ETH],
        [],
    ),
    (
        "object keyed by symbol",
        '<decision>{"ETHUSDT": {"action": "open_short", "confidence": 60}}</decision>',
        OK,
        [ETH],
        [],
    ),
    (
        "prose only, with trading keywords",
        "I am bullish on BTC: go long, buy the dip. ETH looks weak, short it.",
        FAILED,
        [],
        ["no decision block or JSON found"],
    ),
    ("empty output", "", FAILED, [], ["no decision block or JSON found"]),
    (
        "markdown fence inside the block",
        f"<decision>\n```json\n[{ETH_SHORT}]\n```\n</decision>",
        OK,
        [ETH],
        [],
    ),
    (
        "fenced JSON without tags",
        f"Here is my call.\n```json\n[{ETH_SHORT}]\n```",
        OK,
        [ETH],
        [],
    ),
    (
        "bare JSON without tags or fence",
        f"My decisions: [{ETH_SHORT}] and that is all.",
        OK,
        [ETH],
        [],
    ),
    (
        "numbers as strings",
        '<decision>[{"symbol": "BTCUSDT", "action": "open_long", "confidence": "80", '
        '"leverage": "10", "position_pct": "0.3", "stop_loss": "0.03", "take_profit": "0.06", '
        '"reasoning": "breakout"}]</decision>',
        OK,
        [BTC],
        [],
    ),
    (
        "percentages and an x suffix",
        '<decision>[{"symbol": "BTCUSDT", "action": "open_long", "confidence": "80%", '
        '"leverage": "10x", "position_pct": "30%", "stop_loss": "3%", "take_profit": "6%", '
        '"reasoning": "breakout"}]</decision>',
        OK,
        [BTC],
        [],
    ),
    (
        "bare percentages for size and distances",
        '<decision>[{"symbol": "BTCUSDT", "action": "open_long", "confidence": 80.0, '
        '"leverage": 10.0, "position_pct": 30, "stop_loss": 3, "take_profit": 6, '
        '"reasoning": "breakout"}]</decision>',
        OK,
        [BTC],
        [],
    ),
    (
        "unknown action next to a good entry",
        f'<decision>[{ETH_SHORT}, {{"symbol": "BTCUSDT", "action": "moon", "confidence": 90}}]'
        "</decision>",
        PARTIAL,
        [ETH],
        ["unknown action: moon"],
    ),
    (
        "ambiguous close is not guessed",
        '<decision>[{"symbol": "BTCUSDT", "action": "close", "confidence": 70}]</decision>',
        FAILED,
        [],
        ["unknown action: close"],
    ),
    (
        "foreign coin is dropped, not relabelled",
        f'<decision>[{{"symbol": "DOGE", "action": "open_long", "confidence": 90}}, {ETH_SHORT}]'
        "</decision>",
        PARTIAL,
        [ETH],
        ["not a candidate coin: DOGEUSDT"],
    ),
    (
        "Chinese reasoning with full-width punctuation in strings",
        '<reasoning>以太坊跌破支撑，成交量放大。</reasoning>\n<decision>[{"symbol": "ETHUSDT", '
        '"action": "open_short", "confidence": 60, "reasoning": "跌破支撑，看空"}]</decision>',
        OK,
        [d("ETHUSDT", "open_short", 60.0, reasoning="跌破支撑，看空")],
        [],
    ),
    ("final_vote block", f"<final_vote>[{ETH_SHORT}]</final_vote>", OK, [ETH], []),
    (
        "two decision blocks, the first wins",
        f"<decision>[{ETH_SHORT}]</decision>\n<decision>[{BTC_LONG}]</decision>",
        OK,
        [ETH],
        [],
    ),
    (
        "first block unclosed before a second one",
        f"<decision>[{ETH_SHORT}]\n<final_vote>[{BTC_LONG}]</final_vote>",
        OK,
        [ETH],
        [],
    ),
    (
        "draft decision inside think is ignored",
        f"<think>maybe <decision>[{BTC_LONG}]</decision></think><decision>[{ETH_SHORT}]</decision>",
        OK,
        [ETH],
        [],
    ),
    ("upper-case tags", f"<DECISION>[{ETH_SHORT}]</DECISION>", OK, [ETH], []),
    (
        "action synonyms in any case with spaces and dashes",
        '<decision>[{"symbol": "BTCUSDT", "action": "BUY", "confidence": 70}, '
        '{"symbol": "ETHUSDT", "action": "Go-Long", "confidence": 70}, '
        '{"symbol": "SOLUSDT", "action": "Close Short", "confidence": 70}]</decision>',
        OK,
        [
            d("BTCUSDT", "open_long", 70.0),
            d("ETHUSDT", "open_long", 70.0),
            d("SOLUSDT", "close_short", 70.0),
        ],
        [],
    ),
    (
        "exchange-style symbols",
        '<decision>[{"symbol": "BTC/USDT:USDT", "action": "hold", "confidence": 50}, '
        '{"symbol": "eth-usdt", "action": "wait", "confidence": 40}, '
        '{"symbol": "sol", "action": "sell", "confidence": 30}]</decision>',
        OK,
        [
            d("BTCUSDT", "hold", 50.0),
            d("ETHUSDT", "wait", 40.0),
            d("SOLUSDT", "open_short", 30.0),
        ],
        [],
    ),
    (
        "confidence out of range is clamped",
        '<decision>[{"symbol": "BTCUSDT", "action": "hold", "confidence": 150}, '
        '{"symbol": "ETHUSDT", "action": "wait", "confidence": -5}]</decision>',
        OK,
        [d("BTCUSDT", "hold", 100.0), d("ETHUSDT", "wait", 0.0)],
        [],
    ),
    (
        "a fraction confidence is not rescaled",
        '<decision>[{"symbol": "BTCUSDT", "action": "hold", "confidence": 0.75}]</decision>',
        OK,
        [d("BTCUSDT", "hold", 0.75)],
        [],
    ),
    (
        "missing and unreadable confidence",
        '<decision>[{"symbol": "BTCUSDT", "action": "hold"}, '
        '{"symbol": "ETHUSDT", "action": "wait", "confidence": "high"}, '
        '{"symbol": "SOLUSDT", "action": "wait", "confidence": NaN}]</decision>',
        FAILED,
        [],
        ["missing confidence", "invalid confidence: high", "invalid confidence: NaN"],
    ),
    (
        "duplicate coin: the first entry counts",
        f'<decision>[{ETH_SHORT}, {{"symbol": "ETHUSDT", "action": "open_long", '
        '"confidence": 90}]</decision>',
        PARTIAL,
        [ETH],
        ["duplicate symbol: ETHUSDT"],
    ),
    ("empty array", "<decision>[]</decision>", FAILED, [], ["decision block has no entries"]),
    (
        "entries that are not objects",
        '<decision>["BTCUSDT open_long 80"]</decision>',
        FAILED,
        [],
        ["not an object"],
    ),
    (
        "missing symbol",
        '<decision>[{"action": "open_long", "confidence": 80}]</decision>',
        FAILED,
        [],
        ["missing symbol"],
    ),
    (
        "stop loss given as a price",
        '<decision>[{"symbol": "ETHUSDT", "action": "open_short", "confidence": 60, '
        '"stop_loss": 3650, "leverage": "lots"}]</decision>',
        PARTIAL,
        [ETH],
        ["ignored invalid leverage: lots", "ignored invalid stop_loss: 3650"],
    ),
    (
        "python-style single quotes and unquoted keys",
        "<decision>[{'symbol': 'ETHUSDT', action: 'open_short', confidence: 60,}]</decision>",
        OK,
        [ETH],
        [],
    ),
    (
        "a line comment inside the JSON",
        f"<decision>[{ETH_SHORT} // my strongest call\n]</decision>",
        OK,
        [ETH],
        [],
    ),
    (
        "prose before the JSON inside the block",
        f"<decision>Based on [RSI] readings: [{ETH_SHORT}]</decision>",
        OK,
        [ETH],
        [],
    ),
    (
        "block with no JSON at all",
        "<decision>open_long BTC with high confidence</decision>",
        FAILED,
        [],
        ["no JSON entries found"],
    ),
    (
        "alternative key names and case",
        '<decision>[{"Coin": "ETH", "Action": "Short", "Conf": 60}]</decision>',
        OK,
        [ETH],
        [],
    ),
]


@pytest.mark.parametrize(
    ("text", "status", "decisions", "reasons"),
    [case[1:] for case in MALFORMED],
    ids=[case[0] for case in MALFORMED],
)
def test_parse_output_handles_real_world_malformed_answers(text, status, decisions, reasons):
    # given a model answer and three candidate coins
    # when
    result = parse_output(text, CANDIDATES)
    # then
    assert result.status == status
    assert list(result.decisions) == decisions
    assert [item.reason for item in result.dropped] == reasons


def test_the_malformed_table_has_at_least_thirty_cases():
    assert len(MALFORMED) >= 30


def test_dropped_entry_carries_an_excerpt_of_what_was_dropped():
    # given
    text = '<decision>[{"symbol": "DOGEUSDT", "action": "open_long", "confidence": 90}]</decision>'
    # when
    result = parse_output(text, CANDIDATES)
    # then
    assert result.dropped == (
        Dropped(
            '{"symbol": "DOGEUSDT", "action": "open_long", "confidence": 90}',
            "not a candidate coin: DOGEUSDT",
        ),
    )


def test_long_excerpts_are_cut_to_120_characters():
    # given an unknown action with a very long reasoning
    entry = '{"symbol": "BTCUSDT", "action": "moon", "confidence": 90, "reasoning": "%s"}'
    # when
    result = parse_output(f"<decision>[{entry % ('x' * 500)}]</decision>", CANDIDATES)
    # then
    assert len(result.dropped[0].entry) == 120
    assert result.dropped[0].entry.endswith("…")


@pytest.mark.parametrize(
    ("text", "reasoning"),
    [
        (
            "<reasoning>\n 价格上涨，成交量放大。\n</reasoning><decision>[]</decision>",
            "价格上涨，成交量放大。",
        ),
        (f"<reasoning>RSI is 71<decision>[{ETH_SHORT}]</decision>", "RSI is 71"),
        (
            f"ETH lost support.\n<decision>[{ETH_SHORT}]</decision>\nThanks.",
            "ETH lost support.\n\nThanks.",
        ),
        (f"<think>draft</think>Final view.<decision>[{ETH_SHORT}]", "Final view."),
        ("Only prose here.", "Only prose here."),
        (f"```json\n[{ETH_SHORT}]\n```\nFence first, prose after.", "Fence first, prose after."),
    ],
    ids=["reasoning tag", "unclosed reasoning", "prose around", "think removed", "prose", "fence"],
)
def test_parse_output_extracts_reasoning(text, reasoning):
    # given a model answer
    # when
    result = parse_output(text, CANDIDATES)
    # then
    assert result.reasoning == reasoning


def test_candidates_are_normalised_too():
    # given candidates written the exchange way
    # when
    result = parse_output(f"<decision>[{ETH_SHORT}]</decision>", ["ETH/USDT"])
    # then
    assert result.decisions == (ETH,)


@pytest.mark.parametrize(
    ("raw", "symbol"),
    [
        ("btc", "BTCUSDT"),
        ("BTC", "BTCUSDT"),
        ("BTCUSDT", "BTCUSDT"),
        ("BTC/USDT", "BTCUSDT"),
        ("BTC-USDT", "BTCUSDT"),
        ("BTC_USDT", "BTCUSDT"),
        ("BTC/USDT:USDT", "BTCUSDT"),
        (" btc usdt ", "BTCUSDT"),
        ("BTCUSDT.P", "BTCUSDT"),
        ("BTC-USDT-SWAP", "BTCUSDT"),
        ("BTC-PERP", "BTCUSDT"),
        ("ＢＴＣ", "BTCUSDT"),
        ("1000PEPE", "1000PEPEUSDT"),
        ("PERP", "PERPUSDT"),
        ("", None),
        ("USDT", None),
        ("比特币", None),
        ("BTC$", None),
        (None, None),
        (42, None),
    ],
)
def test_normalise_symbol(raw, symbol):
    assert normalise_symbol(raw) == symbol


@pytest.mark.parametrize(
    ("raw", "action"),
    [
        ("open_long", Action.OPEN_LONG),
        ("OPEN LONG", Action.OPEN_LONG),
        ("open-long", Action.OPEN_LONG),
        ("long", Action.OPEN_LONG),
        ("Buy", Action.OPEN_LONG),
        ("go long", Action.OPEN_LONG),
        ("做多", Action.OPEN_LONG),
        ("short", Action.OPEN_SHORT),
        ("SELL", Action.OPEN_SHORT),
        ("go-short", Action.OPEN_SHORT),
        ("close long", Action.CLOSE_LONG),
        ("exit_short", Action.CLOSE_SHORT),
        ("Hold", Action.HOLD),
        ("wait.", Action.WAIT),
        ("no trade", Action.WAIT),
        ("观望", Action.WAIT),
        ("close", None),
        ("bullish", None),
        ("", None),
        (None, None),
        (1, None),
    ],
)
def test_normalise_action(raw, action):
    assert normalise_action(raw) == action


@pytest.mark.parametrize(
    "text",
    [
        "<think>" * 20_000,
        "[" * 200_000,
        "<decision>" + "{" * 200_000,
        "```" * 50_000,
        '<decision>[{"symbol": "' + "a" * 500_000,
        '<decision>[{"symbol": "BTC", "action": "long", "confidence": ' + "9" * 5_000 + "}]",
    ],
    ids=["unclosed think tags", "brackets", "braces", "fences", "endless string", "huge number"],
)
def test_parse_output_survives_pathological_answers(text):
    # given an answer built to break a parser (deep nesting, endless tokens)
    # when
    result = parse_output(text, CANDIDATES)
    # then
    assert (result.status, result.decisions) == (ParseStatus.FAILED, ())


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("10", 10), ("125x", 125), (125.4, 125), ("126", None), (1e9, None), ("0", None)],
)
def test_leverage_outside_what_an_exchange_offers_is_ignored(raw, expected):
    from debates.engine.normalise import parse_leverage

    assert parse_leverage(raw) == expected
