"""The arena page's sidebar: the user's own debates, newest first, a page at a time, and
the schedules with the debates each fired; a backtest's debates open from its page."""

from __future__ import annotations

import pytest

from tests.backtests.factories import BacktestFactory
from tests.debates.factories import DebateFactory, ScheduleFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def listed(page) -> list[str]:
    """Return the names of the debates the sidebar lists, in its order."""
    return page.eval_on_selector_all(
        "#debate-list .debate-link-name", "els => els.map(el => el.textContent)"
    )


def test_the_sidebar_reaches_every_debate_a_page_at_a_time(open_page, user, other_user):
    from playwright.sync_api import expect

    # given 45 debates of the user (the API's pages hold 20) and one of another user
    names = [DebateFactory(owner=user, name=f"Debate {n:02}").name for n in range(45)]
    DebateFactory(owner=other_user, name="Not yours")
    newest_first = names[::-1]
    # when the arena opens
    page = open_page("/", user=user)
    more = page.locator("#more-debates")
    # then the sidebar lists the newest 20, and offers more
    expect(page.locator("#debate-list .debate-link")).to_have_count(20)
    assert listed(page) == newest_first[:20]
    expect(more).to_be_visible()
    # when more are asked for, twice
    more.click()
    expect(page.locator("#debate-list .debate-link")).to_have_count(40)
    more.click()
    # then every debate of the user is listed once, newest first, and nothing more is
    # offered
    expect(page.locator("#debate-list .debate-link")).to_have_count(45)
    assert listed(page) == newest_first
    expect(more).to_be_hidden()


def test_a_debate_created_before_more_are_asked_for_is_listed_once(open_page, user):
    from playwright.sync_api import expect

    # given the arena's sidebar showing the newest 20 of 21 debates
    for n in range(21):
        DebateFactory(owner=user, name=f"Debate {n:02}")
    page = open_page("/", user=user)
    expect(page.locator("#debate-list .debate-link")).to_have_count(20)
    # when another debate is made meanwhile (pushing the 20th onto the next page) and more
    # are asked for
    DebateFactory(owner=user, name="Latest")
    page.click("#more-debates")
    # then each is listed once: the one already shown is not repeated
    expect(page.locator("#more-debates")).to_be_hidden()
    names = listed(page)
    assert len(names) == len(set(names)) == 21
    assert "Latest" not in names


def test_the_sidebar_groups_debates_by_where_they_came_from(open_page, server, user):
    from playwright.sync_api import expect

    # given a debate of the user's own, one a schedule fired and one of a backtest's step
    mine = DebateFactory(owner=user, name="Mine")
    schedule = ScheduleFactory(owner=user, name="Hourly BTC", interval_minutes=60)
    fired = DebateFactory(owner=user, name="Hourly BTC #1", schedule=schedule)
    backtest = BacktestFactory(owner=user, name="Two weeks", status="completed")
    stepped = DebateFactory(owner=user, name="Two weeks · step 1/6", backtest=backtest)
    # when the arena opens
    page = open_page("/", user=user)
    # then its own debates are the user's alone, and the schedule is listed, folded
    expect(page.locator("#debate-list .debate-link")).to_have_count(1)
    assert listed(page) == [mine.name]
    group = page.locator(f"#schedule-list [data-schedule-id='{schedule.pk}']")
    expect(group.locator("summary")).to_contain_text("Hourly BTC")
    expect(group.locator("summary")).to_contain_text("every 60 min")
    # when the schedule is unfolded and its debate opened
    group.locator("summary").click()
    expect(group.locator(".debate-link-name")).to_have_text([fired.name])
    group.locator(".debate-link").click()
    # then the debate opens, marked in its schedule's list
    expect(page.locator("#debate-name")).to_have_text(fired.name)
    expect(group.locator(".debate-link.active")).to_have_count(1)
    # and the backtest's debate is nowhere in the sidebar
    expect(page.locator("#sidebar")).not_to_contain_text(stepped.name)

    # when the backtest's page is opened, and its debate there
    page.goto(f"{server.url}/backtests/{backtest.pk}/")
    page.locator("#step-debates summary").click()
    link = page.locator("#step-debate-group .debate-link")
    expect(link).to_have_count(1)
    link.click()
    # then the arena shows it, and its sidebar still lists the user's own debate alone
    expect(page).to_have_url(f"{server.url}/debates/{stepped.pk}/")
    expect(page.locator("#debate-name")).to_have_text(stepped.name)
    expect(page.locator("#debate-list .debate-link")).to_have_count(1)
    assert listed(page) == [mine.name]
