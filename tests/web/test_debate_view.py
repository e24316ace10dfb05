"""What the arena page shows of a debate beside its transcript: a "simulated" badge on
simulated models, the market instant, prices at the coin's precision, where and why it
failed, a message's positions on a phone; and the form's market instant, sent to the API."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from tests.debates.factories import (
    DebateFactory,
    DecisionFactory,
    MessageFactory,
    ParticipantFactory,
)
from tests.traders.factories import ExecutionFactory, TraderFactory
from tests.web.test_browser import page_width

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

CANDLE = {"open_time": 1722859200000, "open": 133.64, "high": 134.1, "low": 132.87, "close": 133.5}
SNAPSHOT = {
    "source": "dataset",
    "as_of": "2024-08-05T12:00:00Z",
    "coins": [
        {
            "symbol": "SOLUSDT",
            "price": 133.5,
            "timeframes": [{"timeframe": "1h", "candles": [CANDLE], "indicators": {}}],
        }
    ],
    "notes": [],
}


def test_a_finished_debate_shows_its_badges_market_instant_and_rounded_prices(open_page, user):
    # given a finished debate of a simulated model, its turn's tokens estimated, whose
    # SOLUSDT long filled on paper
    debate = DebateFactory(
        owner=user,
        status="completed",
        phase="done",
        symbol="SOLUSDT",
        symbols=["SOLUSDT"],
        as_of=datetime(2024, 8, 5, 12, tzinfo=UTC),
        market_snapshot=SNAPSHOT,
    )
    seat = ParticipantFactory(debate=debate, speak_order=0)
    usage = {"attempts": 1, "prompt_tokens": 1200, "completion_tokens": 300}
    MessageFactory(participant=seat, round=1, tokens_estimated=True, **usage)
    decision = DecisionFactory(debate=debate, symbol="SOLUSDT", action="open_long")
    ExecutionFactory(
        decision=decision,
        trader=TraderFactory(owner=user, name="Paper desk"),
        status="filled",
        filled_quantity=Decimal("12.159533"),
        average_price=Decimal("133.64"),
        stop_loss_price=Decimal("131.628718"),
        take_profit_price=Decimal("138.652611"),
    )
    # when its page is opened
    page = open_page(f"/debates/{debate.pk}/", user=user)
    page.wait_for_selector(".execution-filled")
    # then the model is labelled simulated, the market instant is shown, and the prices
    # have the coin's two decimals
    assert page.inner_text("#debate-participants .badge-simulated") == "simulated"
    assert "market at 2024-08-05 12:00 UTC" in page.inner_text("#debate-meta")
    execution = page.inner_text(".execution-filled")
    assert "@ 133.64 · SL 131.63 · TP 138.65" in execution
    # and its tokens are labelled the simulated model's estimates, the turn's and the
    # debate's
    assert "1,500 tokens (estimated) · $0" in page.inner_text("#debate-meta")
    page.click("[data-message-id] summary")
    assert "1200 + 300 tokens (estimated)" in page.inner_text("[data-message-id]")


def test_a_refused_automatic_execution_shows_its_reason_under_the_primary_decision(open_page, user):
    # given a finished debate whose automatic execution its stopped trader refused
    refusal = {"code": "trader_stopped", "message": "Trader Sleepy is stopped."}
    debate = DebateFactory(
        owner=user,
        status="completed",
        phase="done",
        auto_execute=True,
        trader=TraderFactory(owner=user, name="Sleepy", status="stopped"),
        step_outcomes={"execution": {"status": "failed", **refusal}},
    )
    DecisionFactory(debate=debate, is_primary=True)
    # when its page is opened
    page = open_page(f"/debates/{debate.pk}/", user=user)
    # then the primary decision says why it was not executed
    refused = page.wait_for_selector(".decision.is-primary .execution-failed")
    assert refused.inner_text() == "Automatic execution refused: Trader Sleepy is stopped."


BOOK = {
    "as_of": "2024-08-05T12:00:00+00:00",
    "equity": 1021.6,
    "available": 773.6,
    "margin_in_use": 248.0,
    "realized_pnl_today": -4.25,
    "positions": [
        {
            "symbol": "SOLUSDT",
            "side": "long",
            "quantity": 8.641114,
            "entry_price": 143.5,
            "mark_price": 146.0,
            "unrealized_pnl": 21.6,
            "stop_loss": 139.195,
            "take_profit": 152.11,
            "opened_by_debate": 41,
        }
    ],
    "positions_left": 2,
    "max_position_value": 3064.8,
    "closed": [
        {
            "symbol": "BTCUSDT",
            "side": "short",
            "entry_price": 58000.0,
            "exit_price": 58600.0,
            "pnl": -6.5,
            "reason": "stop_loss",
        }
    ],
}


def test_a_debate_on_a_trader_shows_the_book_its_votes_saw(open_page, user):
    # given a finished debate whose trader held a SOL long when it was prepared
    debate = DebateFactory(
        owner=user,
        status="completed",
        phase="done",
        symbol="SOLUSDT",
        symbols=["SOLUSDT"],
        market_snapshot=SNAPSHOT,
        trader=TraderFactory(owner=user, name="Paper desk"),
        book=BOOK,
    )
    ParticipantFactory(debate=debate, speak_order=0)
    # when its page is opened
    page = open_page(f"/debates/{debate.pk}/", user=user)
    book = page.wait_for_selector("#book")
    # then the account, the long with its stop and target, the headroom and the last
    # closed trade are shown
    assert page.inner_text("#book-account") == (
        "As of 2024-08-05T12:00:00+00:00: equity 1021.60 USDT, available 773.60 USDT, "
        "margin in use 248.00 USDT, realised today -4.25 USDT"
    )
    assert page.inner_text("#book-positions") == (
        "long SOLUSDT 8.641114 @ 143.5, mark 146, unrealised 21.60 USDT · SL 139.195 · "
        "TP 152.11 · opened by debate #41"
    )
    assert "2 more position(s) may open" in page.inner_text("#book-headroom")
    assert page.inner_text("#book-closed") == (
        "Closed short BTCUSDT 58000 → 58600: -6.50 USDT (stop_loss)"
    )
    assert book.is_visible()
    assert page.is_hidden("#book-paused")


def test_a_paused_traders_book_says_it_is_paused(open_page, user):
    # given a finished debate whose trader a guard had paused when it was prepared
    debate = DebateFactory(
        owner=user,
        status="completed",
        phase="done",
        market_snapshot=SNAPSHOT,
        trader=TraderFactory(owner=user),
        book={**BOOK, "paused": "maximum drawdown: equity 1080.00 is 10.00% below its peak"},
    )
    ParticipantFactory(debate=debate, speak_order=0)
    page = open_page(f"/debates/{debate.pk}/", user=user)
    paused = page.wait_for_selector("#book-paused:not([hidden])")
    assert paused.inner_text() == (
        "Paused until you resume it: maximum drawdown: equity 1080.00 is 10.00% below its "
        "peak. No new position opens; closes still do."
    )


def test_an_execution_awaiting_approval_is_approved_on_the_page(open_page, user):
    # given a finished debate whose automatic execution awaits its owner's approval (no
    # snapshot: the staleness guard cannot judge it, and lets it through)
    debate = DebateFactory(owner=user, status="completed", phase="done", market_snapshot=None)
    ParticipantFactory(debate=debate, speak_order=0)
    decision = DecisionFactory(debate=debate, symbol="SOLUSDT", action="open_long")
    execution = ExecutionFactory(
        decision=decision,
        trader=TraderFactory(owner=user, name="Exchange desk"),
        status="awaiting_approval",
        trigger="auto",
        approval_deadline=datetime(2099, 1, 1, tzinfo=UTC),
    )
    # when its page is opened and Approve is pressed
    page = open_page(f"/debates/{debate.pk}/", user=user)
    page.wait_for_selector(".execution-awaiting_approval")
    page.click(".execution-approve")
    # then the execution is pending, sent to its exchange, and the buttons are gone
    page.wait_for_selector(".execution-pending")
    execution.refresh_from_db()
    assert execution.status == "pending"
    assert page.query_selector(".execution-approve") is None


def test_a_debate_without_a_trader_shows_no_book(open_page, user):
    debate = DebateFactory(owner=user, status="completed", phase="done", market_snapshot=SNAPSHOT)
    ParticipantFactory(debate=debate, speak_order=0)
    page = open_page(f"/debates/{debate.pk}/", user=user)
    page.wait_for_selector("#debate:not([hidden])")
    assert page.is_hidden("#book")


def test_the_form_sends_its_market_instant_and_shows_its_refusal(open_page, user):
    # given the create form with a strategy and two simulated models
    from playwright.sync_api import expect

    from tests.debates.factories import AIModelFactory
    from tests.strategies.factories import StrategyFactory

    strategy = StrategyFactory(owner=user, name="Majors")
    AIModelFactory.create_batch(2, owner=user)
    page = open_page("/", user=user)
    page.click("#new-debate")
    page.wait_for_selector("#create-form")
    # (once the form holds the strategy, read by the page after it opened: the instant is
    # checked against the strategy's dataset window, so without one it is not checked)
    expect(page.locator("#f-strategy")).to_have_value(str(strategy.pk))
    page.fill("#f-name", "Too early")
    # when a market instant before the dataset is given
    page.fill("#f-as-of", "2023-06-01T00:00")
    page.click("#create-submit")
    # then the API's refusal shows next to the field
    error = page.wait_for_selector('[data-error-for="as_of"]:not(:empty)')
    assert error.inner_text().startswith("Outside the dataset window of this strategy")


def test_a_failed_debate_shows_its_step_and_message_live_and_after_a_reload(open_page, user):
    from django.db import transaction
    from playwright.sync_api import expect

    from debates import events

    # given a running debate open on its page, its live stream connected
    debate = DebateFactory(owner=user, status="running", phase="analysis", current_round=1)
    ParticipantFactory.create_batch(2, debate=debate)
    page = open_page(f"/debates/{debate.pk}/", user=user)
    expect(page.locator("#stream-state")).to_have_text("● live")
    expect(page.locator("#debate-error")).to_be_hidden()
    # when every turn of its first round fails
    debate.status = "failed"
    debate.error = {
        "code": "round_failed",
        "step": "round 1",
        "message": "Every turn of round 1 failed.",
    }
    debate.save()
    with transaction.atomic():
        events.status_changed(debate)
    # then the page says where it failed and why, as it happens and after a reload
    failure = "Failed at round 1: Every turn of round 1 failed."
    expect(page.locator("#debate-status")).to_have_text("failed")
    expect(page.locator("#debate-error")).to_have_text(failure)
    page.reload()
    expect(page.locator("#debate-status")).to_have_text("failed")
    expect(page.locator("#debate-error")).to_have_text(failure)


def test_on_a_phone_an_opened_message_fits_the_screen(open_page, user):
    from playwright.sync_api import expect

    # given a debate whose first message takes a position on three coins
    debate = DebateFactory(owner=user, status="running", phase="analysis", current_round=1)
    decisions = [
        {
            "symbol": symbol,
            "action": "open_short",
            "confidence": 65,
            "leverage": 10,
            "position_pct": 0.125,
            "stop_loss": 0.035,
            "take_profit": 0.075,
            "reasoning": "Funding is negative while open interest climbs.",
        }
        for symbol in ("BTCUSDT", "ETHUSDT", "SOLUSDT")
    ]
    MessageFactory(participant=ParticipantFactory(debate=debate), decisions=decisions)
    # when it is opened on a phone-sized page
    page = open_page(f"/debates/{debate.pk}/", user=user, viewport=(390, 844))
    expect(page.locator("#stream-state")).to_have_text("● live")
    page.locator("[data-message-id] summary").click()
    table = page.locator("[data-message-id] .positions-table")
    expect(table.locator("tbody tr")).to_have_count(3)
    # then the page does not scroll sideways: the table leaves out the reasons, header
    # and all, and fits the message without scrolling in its own box
    assert page_width(page) <= 390
    assert table.evaluate("t => t.parentElement.scrollWidth <= t.parentElement.clientWidth")
    expect(table.locator("th:visible")).to_have_text(
        ["Coin", "Action", "Conf.", "Lev.", "Size", "SL", "TP"]
    )
