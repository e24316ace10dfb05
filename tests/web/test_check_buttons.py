"""The Check buttons of the arena page, in headless Chromium against uvicorn and the fake
model server: beside each seat's model and each trader choice, a button that runs the
connection check of the chosen one and shows the line the API answered."""

from __future__ import annotations

import pytest

from tests.debates.factories import DecisionFactory, FakeLLMModelFactory
from tests.fakes.llm_server import Reply
from tests.traders.factories import TraderFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

PAPER_FINE = "paper: 1,000.00 USDT available, hedge mode; BTCUSDT lists no minimum order value."
KEY_REFUSED = (
    "Wrong key (openai_compatible fake-model) refused the request: "
    "openai_compatible returned HTTP 401: the provider refused the API key"
)


def test_the_create_form_checks_the_chosen_model_and_trader(open_page, user, llm):
    from playwright.sync_api import expect

    # given a running paper trader and a model whose key the fake server refuses, a
    # second later
    trader = TraderFactory(owner=user, name="Paper desk", exchange="paper")
    model = FakeLLMModelFactory(owner=user, llm=llm, name="Wrong key")
    llm.enqueue(Reply.error(401, "Incorrect API key provided", delay_s=1.0))
    # and the create form, its three seats on that model
    page = open_page("/", user=user)
    page.click("#new-debate")
    seats = page.locator(".participant-row")
    expect(seats).to_have_count(3)
    seat = seats.first
    button, line = seat.locator(".check-button"), seat.locator(".check-result")
    expect(line).to_be_hidden()

    # when the first seat's model is checked
    with page.expect_response(f"**/api/ai-models/{model.pk}/check") as answered:
        button.click()
        # then the line says so while the check runs, the button disabled
        expect(line).to_have_text("Checking…")
        expect(button).to_be_disabled()
    # and then shows, as a failure, the line the API answered
    assert answered.value.json() == {"ok": False, "message": KEY_REFUSED}
    expect(line).to_have_attribute("data-outcome", "failed")
    expect(line).to_have_text(KEY_REFUSED)
    expect(button).to_be_enabled()
    assert [call.path for call in llm.requests] == ["/v1/chat/completions"]

    # when the trader is checked
    page.click("#create-form .with-check:has(#f-trader) .check-button")
    # then its line shows, as passed, the paper account the API described
    trader_line = page.locator("#create-form .with-check:has(#f-trader) + .check-result")
    expect(trader_line).to_have_attribute("data-outcome", "ok")
    expect(trader_line).to_have_text(PAPER_FINE)

    # when the second seat becomes the person's own: nothing to check
    seats.nth(1).locator("[data-name=ai_model]").select_option("human")
    expect(seats.nth(1).locator(".check-button")).to_be_disabled()
    # and when the trader is deleted, then checked again
    trader.delete()
    page.click("#create-form .with-check:has(#f-trader) .check-button")
    # then the line shows the refusal of the request itself
    expect(trader_line).to_have_attribute("data-outcome", "failed")
    expect(trader_line).to_have_text("Trader not found.")


def test_the_execute_form_checks_the_chosen_trader(open_page, user):
    from playwright.sync_api import expect

    # given a completed debate with an open long to execute, and a running paper trader
    TraderFactory(owner=user, name="Paper desk", exchange="paper")
    decision = DecisionFactory(debate__owner=user)
    page = open_page(f"/debates/{decision.debate_id}/", user=user)
    expect(page.locator("#execute-form")).to_be_visible()
    line = page.locator("#execute-form .check-result")
    # when the trader is checked
    page.click("#execute-form .check-button")
    # then the line beside it shows, as passed, the paper account the API described
    expect(line).to_have_attribute("data-outcome", "ok")
    expect(line).to_have_text(PAPER_FINE)
