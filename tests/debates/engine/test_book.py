"""What each action does against the positions held on a coin, and the book a vote reads."""

from __future__ import annotations

import pytest

from debates.engine.book import (
    Book,
    BookOrders,
    ClosedTrade,
    HeldPosition,
    book_orders,
    book_text,
    effect_text,
)

LONG_ONLY, SHORT_ONLY, BOTH, NOTHING = ("long",), ("short",), ("long", "short"), ()


@pytest.mark.parametrize(
    ("action", "held", "hedging", "expected"),
    [
        ("hold", LONG_ONLY, False, BookOrders(note="nothing to do: hold keeps the long")),
        ("wait", NOTHING, False, BookOrders(note="nothing to do: nothing is open")),
        ("close_long", LONG_ONLY, False, BookOrders(closes=("long",))),
        ("close_long", NOTHING, False, BookOrders(note="nothing to do: no long open")),
        ("close_short", LONG_ONLY, False, BookOrders(note="nothing to do: no short open")),
        ("open_long", NOTHING, False, BookOrders(opens="long")),
        ("open_long", LONG_ONLY, False, BookOrders(note="nothing to do: a long is already open")),
        ("open_short", LONG_ONLY, False, BookOrders(closes=("long",), opens="short")),
        ("open_short", LONG_ONLY, True, BookOrders(opens="short")),
        ("open_long", SHORT_ONLY, False, BookOrders(closes=("short",), opens="long")),
        ("close_short", BOTH, True, BookOrders(closes=("short",))),
        ("hold", BOTH, True, BookOrders(note="nothing to do: hold keeps the long and short")),
    ],
)
def test_an_action_does_against_the_book_what_its_rule_says(action, held, hedging, expected):
    assert book_orders(action, held, hedging=hedging) == expected


def test_an_actions_effect_reads_as_its_orders():
    assert effect_text(book_orders("open_short", LONG_ONLY)) == (
        "closes the long (reduce-only), then opens a short"
    )
    assert effect_text(book_orders("close_short", NOTHING)) == "nothing to do: no short open"


LONG = HeldPosition(
    symbol="SOLUSDT",
    side="long",
    quantity=8.641114,
    entry_price=143.5,
    mark_price=146.0,
    unrealized_pnl=21.6,
    unrealized_pct=8.7,
    peak_pnl=30.0,
    leverage=5,
    stop_loss=139.195,
    take_profit=152.11,
    opened_at="2024-08-10T00:00:00+00:00",
    opened_by_debate=41,
)
BOOK = Book(
    as_of="2024-08-10T06:00:00+00:00",
    equity=1021.6,
    available=773.6,
    margin_in_use=248.0,
    realized_pnl_today=-4.25,
    positions=(LONG,),
    positions_left=2,
    max_position_value=3064.8,
    closed=(ClosedTrade("BTCUSDT", "short", 58000.0, 58600.0, -6.5, "stop_loss"),),
)


def test_the_book_text_names_each_coins_position_and_what_each_action_would_do():
    text = book_text(BOOK, ["SOLUSDT", "ETHUSDT"])
    assert text.splitlines()[0] == (
        "As of 2024-08-10T06:00:00+00:00. Equity 1,021.60 USDT, available 773.60 USDT, "
        "margin in use 248.00 USDT, realised P&L today -4.25 USDT."
    )
    assert (
        "SOLUSDT: long SOLUSDT 8.641114 at 143.5, mark 146, unrealised +21.60 USDT (+8.7% of "
        "margin), best +30.00 USDT, 5x, stop 139.195 (4.7% away), target 152.11 (4.2% away), "
        "opened 2024-08-10T00:00:00+00:00 by debate 41"
    ) in text
    assert "  close_long: closes the long (reduce-only)" in text
    assert "ETHUSDT: nothing held\n  open_long: opens a long" in text
    assert "Headroom: 2 more position(s) may open; the largest position allowed is 3,064.80" in text
    assert "Last closed trades: short BTCUSDT 58000 -> 58600, -6.50 USDT (stop_loss)" in text


def test_a_position_on_a_coin_not_debated_is_listed_apart():
    text = book_text(BOOK, ["ETHUSDT"])
    assert "Other open positions: long SOLUSDT 8.641114 at 143.5" in text


def test_a_book_survives_its_stored_form():
    assert Book.from_dict(BOOK.to_dict()) == BOOK


def test_a_paused_traders_book_says_so_and_its_openings_do_only_their_closes():
    until = "2024-08-11T00:00:00+00:00"
    paused = Book.from_dict({**BOOK.to_dict(), "paused": "daily loss limit", "paused_until": until})
    text = book_text(paused, ["SOLUSDT", "ETHUSDT"])
    assert (
        "PAUSED until 2024-08-11T00:00:00+00:00: daily loss limit. No new position opens; "
        "closes still do." in text
    )
    assert "  close_long: closes the long (reduce-only)" in text
    assert (
        "  open_short: closes the long (reduce-only); opens nothing: the trader is paused "
        "(daily loss limit)" in text
    )
    assert "  open_long: nothing to do: opens nothing: the trader is paused" in text
