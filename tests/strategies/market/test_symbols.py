import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from arena.patterns import trimmed
from strategies.market.exceptions import InvalidSymbolError
from strategies.market.symbols import (
    base_asset,
    from_ccxt,
    normalize_symbol,
    normalize_symbols,
    to_ccxt,
)
from strategies.services import SYMBOL

# The symbol as an input's schema states it: trimmed, not blank.
PATTERN = re.compile(trimmed(SYMBOL, blank=False))

USER_FORMS = pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("btc", "BTCUSDT"),
        ("BTC", "BTCUSDT"),
        ("btcusdt", "BTCUSDT"),
        ("BTCUSDT", "BTCUSDT"),
        ("BTC/USDT", "BTCUSDT"),
        ("btc-usdt", "BTCUSDT"),
        ("BTC_USDT", "BTCUSDT"),
        ("BTC/USDT:USDT", "BTCUSDT"),
        (" ethusdt ", "ETHUSDT"),
        ("\tsol\n", "SOLUSDT"),
        ("1000pepe", "1000PEPEUSDT"),
        ("1000PEPE/USDT:USDT", "1000PEPEUSDT"),
        ("usdc", "USDCUSDT"),
    ],
)


@USER_FORMS
def test_normalize_symbol_accepts_every_user_form(raw, expected):
    # given a symbol as a user might type it
    # when it is normalised
    symbol = normalize_symbol(raw)
    # then it has the one stored form
    assert symbol == expected


@USER_FORMS
def test_the_pattern_matches_every_user_form(raw, expected):
    assert PATTERN.fullmatch(raw)


MALFORMED = pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("", "symbol is empty"),
        ("   ", "symbol is empty"),
        ("USDT", "malformed symbol 'USDT': USDT is the quote asset"),
        ("BTC USDT", "malformed symbol 'BTC USDT': the base asset must be letters and digits"),
        ("BTC$", "malformed symbol 'BTC$': the base asset must be letters and digits"),
        ("/USDT", "malformed symbol '/USDT': the base asset must be letters and digits"),
        ("BTC/", "unsupported symbol 'BTC/': only USDT pairs are traded"),
        ("BTC/USDT/X", "malformed symbol 'BTC/USDT/X': use BTC/USDT or BTC/USDT:USDT"),
        ("BTC-USDT-X", "malformed symbol 'BTC-USDT-X': use BTC, BTCUSDT or BTC/USDT"),
        ("ETH/BTC", "unsupported symbol 'ETH/BTC': only USDT pairs are traded"),
        (
            "BTC/USDC:USDC",
            "unsupported symbol 'BTC/USDC:USDC': only USDT-settled contracts are traded",
        ),
        ("BTC/USDT:", "unsupported symbol 'BTC/USDT:': only USDT-settled contracts are traded"),
        (
            "btcusdc",
            "unsupported symbol 'btcusdc': looks like a USDC pair; only USDT pairs are traded",
        ),
        (
            "BTCUSD",
            "unsupported symbol 'BTCUSD': looks like a USD pair; only USDT pairs are traded",
        ),
        ("A" * 17, f"malformed symbol '{'A' * 17}': base asset longer than 16 characters"),
    ],
)


@MALFORMED
def test_normalize_symbol_refuses_malformed_input(raw, message):
    # given a malformed or unsupported symbol
    # when it is normalised
    with pytest.raises(InvalidSymbolError) as caught:
        normalize_symbol(raw)
    # then the error says what is wrong with it
    assert str(caught.value) == message


@MALFORMED
def test_the_pattern_matches_no_malformed_input(raw, message):
    assert not PATTERN.fullmatch(raw)


# What a symbol is made of, and what can go wrong around it.
PIECES = st.lists(
    st.sampled_from(["BTC", "btc", "USDT", "usdt", "USD", "USDC", "BUSD", "FD", "1000", "A"])
    | st.sampled_from(["/", ":", "-", "_", " ", "\t", "$", "\u0131", "\u017f"]),
    max_size=7,
).map("".join)


@given(PIECES)
def test_the_pattern_matches_what_normalize_symbol_accepts_in_ascii(raw):
    # given a string of symbol pieces and separators
    try:
        normalize_symbol(raw)
        accepted = True
    except InvalidSymbolError:
        accepted = False
    # then the pattern matches it exactly when normalize_symbol accepts it, but for
    # letters outside ASCII that upper-case into A-Z, which only normalize_symbol takes
    assert bool(PATTERN.fullmatch(raw)) == (accepted and raw.strip().isascii()), raw


def test_normalize_symbol_refuses_non_text():
    # given a number where a symbol belongs
    # when it is normalised
    with pytest.raises(InvalidSymbolError) as caught:
        normalize_symbol(42)  # type: ignore[arg-type]
    # then it is refused
    assert str(caught.value) == "symbol must be text, got int"


def test_invalid_symbol_error_is_a_value_error():
    # given code that validates input by catching ValueError
    # when a symbol is refused
    # then ValueError catches it
    with pytest.raises(ValueError, match="symbol is empty"):
        normalize_symbol("")


def test_normalize_symbols_keeps_order_and_drops_duplicates():
    # given a list with the same coin spelt twice
    raw = ["eth", "BTC/USDT", "ETHUSDT", "sol"]
    # when it is normalised
    symbols = normalize_symbols(raw)
    # then each coin appears once, in first-seen order
    assert symbols == ("ETHUSDT", "BTCUSDT", "SOLUSDT")


@pytest.mark.parametrize(
    ("symbol", "unified"),
    [
        ("BTCUSDT", "BTC/USDT:USDT"),
        ("DOGEUSDT", "DOGE/USDT:USDT"),
        ("1000PEPEUSDT", "1000PEPE/USDT:USDT"),
    ],
)
def test_ccxt_mapping_round_trips(symbol, unified):
    # given a normalised symbol
    # when it is mapped to ccxt and back
    # then both directions agree
    assert to_ccxt(symbol) == unified
    assert from_ccxt(unified) == symbol


def test_base_asset_strips_the_quote():
    # given a normalised symbol
    # when its base asset is asked for
    # then the quote is gone
    assert base_asset("AVAXUSDT") == "AVAX"
