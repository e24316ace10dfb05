"""The arena page's create form: "Create and start" creates a debate and starts it, named
for the person who left the name empty; the name's placeholder reads as a hint, not a
value; on a phone the welcome points at the menu, not at a sidebar folded away."""

from __future__ import annotations

import pytest

from debates.models import Debate
from tests.web.test_browser import COINS, SEATS, arena  # noqa: F401 (the arena fixture)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_create_and_start_runs_a_debate_named_for_its_coin_rounds_and_instant(
    open_page,
    server,
    worker,
    user,
    arena,  # noqa: F811
):
    from playwright.sync_api import expect

    # given the create form, its name left empty (a hint in it, no value)
    page = open_page("/", user=user)
    page.click("#new-debate")
    expect(page.locator("#f-strategy")).to_have_value(str(arena["strategy"].pk))
    name = page.locator("#f-name")
    expect(name).to_have_value("")
    expect(name).to_have_attribute("placeholder", "left empty: the coin, rounds and date")
    page.fill("#f-symbol", "btc")
    page.fill("#f-rounds", "2")
    page.fill("#f-as-of", "2024-08-20T12:00")
    rows = page.locator(".participant-row")
    for index, (model, personality) in enumerate(zip(arena["models"], SEATS, strict=True)):
        rows.nth(index).locator("[data-name=ai_model]").select_option(str(model.pk))
        rows.nth(index).locator("[data-name=personality]").select_option(personality)
    # when "Create and start" is pressed
    page.click("#create-start")
    # then the debate is shown under a name of its coin, rounds and instant, started,
    # and runs to its end with no other click
    expect(page.locator("#debate-name")).to_have_text("BTC, 2 rounds, 2024-08-20 12:00 UTC")
    debate = Debate.objects.get()
    expect(page).to_have_url(f"{server.url}/debates/{debate.pk}/")
    expect(page.locator("#debate-status")).to_have_text("completed", timeout=60_000)
    expect(page.locator("#decisions .decision")).to_have_count(len(COINS))
    debate.refresh_from_db()
    assert (debate.name, debate.origin, debate.status) == (
        "BTC, 2 rounds, 2024-08-20 12:00 UTC",
        "manual",
        "completed",
    )
    assert debate.started_at is not None
    # and it is listed first among the user's own debates
    expect(page.locator("#debate-list .debate-link-name")).to_have_text([debate.name])


def test_create_alone_leaves_the_debate_pending(open_page, user, arena):  # noqa: F811
    from playwright.sync_api import expect

    page = open_page("/", user=user)
    page.click("#new-debate")
    expect(page.locator("#f-strategy")).to_have_value(str(arena["strategy"].pk))
    page.fill("#f-name", "Held back")
    page.click("#create-submit")
    expect(page.locator("#debate-name")).to_have_text("Held back")
    expect(page.locator("#debate-status")).to_have_text("pending")
    assert Debate.objects.get().status == "pending"


@pytest.mark.parametrize(
    ("path", "what"), [("/", "debate"), ("/backtests/", "backtest")], ids=["arena", "backtests"]
)
def test_on_a_phone_the_welcome_points_at_the_menu(open_page, user, path, what):
    from playwright.sync_api import expect

    # given a page opened on a phone, its sidebar folded away
    page = open_page(path, user=user, viewport=(390, 844))
    expect(page.locator("#sidebar")).not_to_be_in_viewport()
    # then the welcome says where the list is, and not that it is on the left
    welcome = page.locator("#welcome p.muted")
    expect(welcome).to_have_text(
        f"Open the ☰ menu to pick a {what} or start a new one.", use_inner_text=True
    )
    # and on a wide screen it is on the left
    page.set_viewport_size({"width": 1360, "height": 900})
    expect(welcome).to_have_text(
        f"Pick a {what} on the left, or start a new one.", use_inner_text=True
    )
