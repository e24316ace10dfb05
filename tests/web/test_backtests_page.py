"""The backtests page in headless Chromium against uvicorn, a Celery worker process and
the fake model server: the start form, live progress, then the report with the equity
curves of the debate and every baseline on one chart, the metrics and the trades."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from backtests.charts import WIDTH, equity_svg
from backtests.models import Backtest
from tests.backtests.factories import BacktestFactory
from tests.backtests.test_run import contract
from tests.debates.factories import AIModelFactory, FakeLLMModelFactory
from tests.fakes.llm_server import Reply
from tests.strategies.factories import StrategyFactory
from tests.web.conftest import ARTIFACTS, drawn_width

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SEATS = ("bull", "bear", "analyst")


def test_a_backtest_from_the_form_to_its_report(open_page, server, worker, user, llm):
    from playwright.sync_api import expect

    # given a strategy on 1h and 4h candles and three models answering from the fake
    # server: long by default, the bear short, and the analyst short in its opening
    llm.set_latency(0.1)
    llm.add_rule(Reply.answer(contract("open_short", 80), match="You are P2,"))
    llm.add_rule(Reply.answer(contract("open_short", 90), match="round 1/2. You are P3,"))
    strategy = StrategyFactory(owner=user, name="Majors, 1h and 4h", timeframes=["1h", "4h"])
    models = [
        FakeLLMModelFactory(owner=user, llm=llm, name=f"Fake {personality}")
        for personality in SEATS
    ]
    page = open_page("/backtests/", user=user)
    expect(page.locator("#backtest-list-empty")).to_be_visible()

    # when the form is sent with a step that is not a multiple of 15 minutes
    page.click("#new-backtest")
    expect(page.locator("#b-strategy")).to_have_value(str(strategy.pk))
    page.fill("#b-name", "Browser backtest")
    page.fill("#b-start", "2024-08-04T12:00")
    page.fill("#b-end", "2024-08-07T12:00")
    page.fill("#b-every", "50")
    rows = page.locator(".seat-row")
    expect(rows).to_have_count(3)
    for index, model in enumerate(models):
        rows.nth(index).locator("select").first.select_option(str(model.pk))
    page.click("#create-submit")
    # then the API's refusal shows next to the field, and nothing was made
    expect(page.locator('[data-error-for="interval_minutes"]')).to_have_text(
        "Ensure this value is a multiple of step size 15."
    )
    assert not Backtest.objects.exists()

    # when it is sent again at 4h, with P1's model as the budget-matched baseline
    page.fill("#b-every", "240")
    page.select_option("#b-baseline", "P1")
    page.evaluate(
        """() => {
          window.progressSeen = [];
          const text = document.querySelector("#progress-text");
          new MutationObserver(() => {
            if (text.textContent !== window.progressSeen.at(-1))
              window.progressSeen.push(text.textContent);
          }).observe(text, {childList: true, characterData: true, subtree: true});
        }"""
    )
    page.click("#create-submit")
    # then the backtest opens and its progress moves live to its end, with no reload
    expect(page.locator("#backtest-name")).to_have_text("Browser backtest")
    backtest = Backtest.objects.get()
    expect(page).to_have_url(f"{server.url}/backtests/{backtest.pk}/")
    expect(page.locator("#backtest-status")).to_have_text("completed", timeout=90_000)
    seen = page.evaluate("window.progressSeen")
    assert seen[-1] == "18 / 18 debates" and len(seen) >= 2, seen
    # and the report shows every rule's curve on one chart, the metrics and the trades
    chart = page.locator("#equity-chart")
    expect(chart).to_be_visible()
    assert drawn_width(chart) > 0
    expect(page.locator("#metrics tbody tr")).to_have_count(10)
    expect(page.locator("#metrics tbody tr td:first-child")).to_have_text(
        [
            "Debate consensus",
            "Buy and hold BTCUSDT",
            "Flat (always wait)",
            "Round-1 majority (no debate)",
            "Votes weighed by confidence",
            "Votes weighed by calibrated confidence",
            "P1 bull alone",
            "P2 bear alone",
            "P3 analyst alone",
            "Budget-matched: P1 bull",
        ]
    )
    # and what the tokens of every rule that reads model answers bought, and how the
    # baseline's tokens matched the debate's
    expect(page.locator("#spend tbody tr")).to_have_count(8)
    expect(page.locator("#spend tbody tr").last.locator("td").first).to_have_text(
        "Budget-matched: P1 bull"
    )
    expect(page.locator("#usage")).to_contain_text("Budget-matched baseline: ")
    expect(page.locator("#backtest-settings")).to_contain_text("baseline P1")
    report = Backtest.objects.get().report
    trades = len(report["rules"][0]["trades"])
    sides = {r["key"]: {t["side"] for t in r["trades"]} for r in report["rules"]}
    assert (sides["debate"], sides["round1_majority"], sides["seat:P2"]) == (
        {"long"},
        {"short"},
        {"short"},
    )
    expect(page.locator("#trades tbody tr")).to_have_count(trades)
    # and, the votes having seen the book (the form's default), why each rule's trades
    # closed and its guard trips
    assert Backtest.objects.get().book == "aware"
    expect(page.locator("#backtest-settings")).to_contain_text("book aware")
    debate = report["rules"][0]
    words = ", ".join(f"{reason} {n}" for reason, n in debate["closed_by"].items() if n)
    expect(page.locator("#closed-by")).to_have_text(f"Closed by: {words}. Guard trips: none.")
    expect(page.locator("#stretches")).to_contain_text("1h from 2024-08-04 12:00, then 15m")
    expect(page.locator("#backtest-actions [data-action=delete]")).to_be_visible()
    # and the chart, drawn by the server, holds a line per rule
    svg = page.request.get(f"{server.url}/backtests/{backtest.pk}/equity.svg").text()
    assert svg.count("<polyline") == 10
    # and the outcome reviews: the ledger (every decision a flip from the round-1 short),
    # each voter's calibration and its reliability chart, drawn by the server
    ledger = report["ledger"]
    expect(page.locator("#ledger tbody td").first).to_have_text(str(ledger["decisions"]))
    assert ledger["flips"] == ledger["decisions"] > 0
    # and whether the debate earned its tokens, against the round-1 majority and the
    # budget-matched baseline (the strategy has no other steps: nothing more to say)
    expect(page.locator("#verdict")).to_have_text(ledger["verdict"]["sentence"])
    expect(page.locator("#verdict-table tbody tr td:first-child")).to_have_text(
        ["Round-1 majority", "Budget-matched baseline"]
    )
    expect(page.locator("#strategy-verdict")).to_be_hidden()
    expect(page.locator("#calibration tbody tr")).to_have_count(len(report["calibration"]))
    assert drawn_width(page.locator("#reliability-chart")) > 0
    reliability = page.request.get(f"{server.url}/backtests/{backtest.pk}/reliability.svg")
    assert reliability.headers["content-type"] == "image/svg+xml"
    assert reliability.text().count("<circle") >= len(report["calibration"])
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.set_viewport_size({"width": 1360, "height": 1000})
    # and a figure that rounds to zero shows no sign
    cells = page.locator("#metrics tbody td").all_inner_texts()
    assert [cell for cell in cells if re.fullmatch(r"-0(\.0+)?%?", cell)] == []
    # and on a laptop's width the metrics fit without scrolling sideways
    metrics = page.locator(".table-scroll:has(#metrics)")
    assert metrics.evaluate("el => el.scrollWidth <= el.clientWidth"), "the metrics scroll"
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=ARTIFACTS / "backtest-report.png", full_page=True)


def test_progress_that_arrives_while_a_list_link_is_pressed_does_not_swallow_the_click(
    open_page, user
):
    from django.db import transaction
    from playwright.sync_api import expect

    from backtests import events

    # given two backtests in the list, the newer one running, open and streaming live
    other = BacktestFactory(owner=user, name="Another backtest", status="cancelled")
    running = BacktestFactory(owner=user, name="Running backtest", status="running", steps_done=1)
    page = open_page(f"/backtests/{running.pk}/", user=user)
    expect(page.locator("#stream-state")).to_have_text("● live")
    running_row = page.locator(f'#backtest-list [data-backtest-id="{running.pk}"]')
    expect(running_row).to_contain_text("1/6")
    # when the person presses the other backtest's link, and the running one's progress
    # moves in the list before they let go
    box = page.locator(f'#backtest-list [data-backtest-id="{other.pk}"]').bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    running.steps_done = 2
    with transaction.atomic():
        running.save(update_fields=["steps_done"])
        events.progress(running)
    expect(running_row).to_contain_text("2/6")
    page.mouse.up()
    # then the click still opens the other backtest
    expect(page.locator("#backtest-name")).to_have_text("Another backtest")


def test_every_label_of_the_charts_legend_fits_in_the_chart(browser):
    # given a report whose rules carry the longest labels a backtest gives them
    labels = (
        "Debate consensus",
        "Buy and hold 1000SHIBUSDT",
        "Round-1 majority (no debate)",
        "Votes weighed by calibrated confidence",
        "P6 risk_manager alone",
        "Budget-matched: each seat in turn",
        "Budget-matched: P6 risk_manager",
    )
    report = {
        "rules": [
            {
                "key": f"rule:{index}",
                "label": label,
                "metrics": {"final_equity": 1000.0 + index},
                "equity": [[1722816000000, 1000.0], [1722830400000, 1000.0 + index]],
            }
            for index, label in enumerate(labels)
        ]
    }
    # when its chart is drawn in the browser
    page = browser.new_page()
    page.set_content(equity_svg(report))
    # then no text of it reaches past the chart's right edge
    right = page.evaluate(
        """() => Math.max(...[...document.querySelectorAll("svg text")].map((text) => {
             const box = text.getBBox();
             return box.x + box.width;
           }))"""
    )
    assert 0 < right <= WIDTH


def test_on_a_phone_the_menu_lists_and_starts_backtests(open_page, server, user):
    from playwright.sync_api import expect

    # given a phone-sized page of a user with a finished backtest and simulated models
    done = BacktestFactory(owner=user, name="Pocket backtest", status="completed", steps_done=6)
    for _ in SEATS:
        AIModelFactory(owner=user)
    page = open_page("/backtests/", user=user, viewport=(390, 844))
    sidebar = page.locator("#sidebar")
    # then the sidebar is folded away, and the menu button shows it
    expect(sidebar).not_to_be_in_viewport()
    page.click("#menu-toggle")
    expect(sidebar).to_be_in_viewport(ratio=1)
    expect(page.locator("#menu-toggle")).to_have_attribute("aria-expanded", "true")
    # when a backtest is picked, it opens and the sidebar folds away again
    page.click(f'#backtest-list [data-backtest-id="{done.pk}"]')
    expect(page.locator("#backtest-name")).to_have_text("Pocket backtest")
    expect(sidebar).not_to_be_in_viewport()
    # when the backdrop folds away a sidebar opened again, nothing else changes
    page.click("#menu-toggle")
    expect(sidebar).to_be_in_viewport(ratio=1)
    page.mouse.click(380, 400)
    expect(sidebar).not_to_be_in_viewport()
    expect(page.locator("#backtest-name")).to_have_text("Pocket backtest")
    # when a new backtest is started from the menu
    page.click("#menu-toggle")
    page.click("#new-backtest")
    expect(sidebar).not_to_be_in_viewport()
    expect(page.locator(".seat-row")).to_have_count(3)
    page.fill("#b-name", "Started on a phone")
    page.fill("#b-start", "2024-08-10T00:00")
    page.fill("#b-end", "2024-08-11T00:00")
    page.click("#create-submit")
    # then it opens, and the page never scrolls sideways
    expect(page.locator("#backtest-name")).to_have_text("Started on a phone")
    started = Backtest.objects.get(name="Started on a phone")
    expect(page).to_have_url(f"{server.url}/backtests/{started.pk}/")
    assert page.evaluate("document.documentElement.scrollWidth") <= 390


@pytest.mark.parametrize("whose", ["another user's", "nonexistent"])
def test_opening_a_backtest_that_is_not_there_says_so(open_page, user, other_user, whose):
    from playwright.sync_api import expect

    # given the address of another user's backtest, or of none
    backtest_id = BacktestFactory(owner=other_user).pk if whose == "another user's" else 999_999
    # when it is opened
    page = open_page(f"/backtests/{backtest_id}/", user=user)
    # then the welcome says the backtest was not found (and the page throws nothing)
    expect(page.locator("#welcome-error")).to_have_text("Backtest not found.")
    expect(page.locator("#welcome")).to_be_visible()
    expect(page.locator("#backtest")).to_be_hidden()
    # and the message goes once the form is opened
    page.click("#new-backtest")
    expect(page.locator("#welcome-error")).to_be_hidden()


def test_deleting_a_backtest_asks_first(open_page, user):
    from playwright.sync_api import expect

    # given an open finished backtest
    done = BacktestFactory(owner=user, name="Keep me?", status="completed", steps_done=6)
    page = open_page(f"/backtests/{done.pk}/", user=user)
    expect(page.locator("#backtest-name")).to_have_text("Keep me?")
    asked: list[str] = []

    def answer(accept: bool):
        def handle(dialog) -> None:
            asked.append(dialog.message)
            dialog.accept() if accept else dialog.dismiss()

        return handle

    # when Delete is pressed and the question is dismissed
    page.once("dialog", answer(False))
    page.click("#backtest-actions [data-action=delete]")
    # then it asked, and the backtest stays, open and listed
    expect(page.locator("#backtest-name")).to_have_text("Keep me?")
    assert asked == ['Delete "Keep me?"?']
    assert Backtest.objects.filter(pk=done.pk).exists()
    expect(page.locator(f'#backtest-list [data-backtest-id="{done.pk}"]')).to_have_count(1)
    # when Delete is pressed again and the question accepted
    page.once("dialog", answer(True))
    page.click("#backtest-actions [data-action=delete]")
    # then the backtest is gone
    expect(page.locator("#welcome")).to_be_visible()
    expect(page.locator(f'#backtest-list [data-backtest-id="{done.pk}"]')).to_have_count(0)
    assert asked == ['Delete "Keep me?"?', 'Delete "Keep me?"?']
    assert not Backtest.objects.filter(pk=done.pk).exists()


def test_the_untouched_form_starts_a_backtest(open_page, server, user):
    from playwright.sync_api import expect

    # given a strategy on 15m, 1h and 4h candles reading the most rows a strategy may, and
    # simulated models
    strategy = StrategyFactory(owner=user, timeframes=["15m", "1h", "4h"], rows_per_timeframe=200)
    for _ in SEATS:
        AIModelFactory(owner=user)
    page = open_page("/backtests/", user=user)
    # when the form is sent as it opens
    page.click("#new-backtest")
    expect(page.locator("#b-strategy")).to_have_value(str(strategy.pk))
    expect(page.locator(".seat-row")).to_have_count(3)
    page.click("#create-submit")
    # then the backtest starts: two weeks at 4h, inside the 15m candles
    expect(page.locator("#backtest-name")).to_have_text("BTC, two weeks at 4h")
    backtest = Backtest.objects.get()
    expect(page).to_have_url(f"{server.url}/backtests/{backtest.pk}/")
    assert (backtest.start, backtest.end, backtest.steps_total) == (
        datetime(2024, 8, 8, tzinfo=UTC),
        datetime(2024, 8, 22, tzinfo=UTC),
        84,
    )


def finished_backtest(user, rules: list[dict]):
    """Return a completed 6-step backtest of ``user`` whose report holds ``rules`` (15m
    candles, no model call)."""
    report = {
        "rules": rules,
        "stretches": [{"timeframe": "15m", "from": "2024-08-10T00:00:00Z"}],
        "steps": 6,
        "completed_steps": 6,
        "usage": {"model_calls": 0, "cached_calls": 0, "prompt_tokens": 0},
    }
    report["usage"].update(completion_tokens=0, seconds=1.0)
    return BacktestFactory(owner=user, status="completed", steps_done=6, report=report)


def test_trade_prices_show_their_coins_own_decimals(open_page, user):
    from playwright.sync_api import expect

    # given a finished backtest whose debate lost on a DOGE stop and won on BTC
    def trade(symbol, entry, exit_, pnl, reason):
        return {
            **{"symbol": symbol, "side": "long", "quantity": 1.0, "leverage": 2},
            **{"entry_at": "2024-08-10T04:00:00Z", "exit_at": "2024-08-10T08:00:00Z"},
            **{"entry_price": entry, "exit_price": exit_, "pnl": pnl, "reason": reason},
            **{"fees": 0.1, "funding": 0.0},
        }

    trades = [
        trade("DOGEUSDT", 0.10987, 0.1065, -30.22, "stop"),
        trade("BTCUSDT", 60123.45, 61000.1, 12.5, "target"),
    ]
    debate = {
        **{"key": "debate", "label": "Debate consensus", "trades": trades},
        "metrics": {"final_equity": 982.28, "trades": 2},
        "equity": [[1723262400000, 1000.0], [1723276800000, 982.28]],
    }
    done = finished_backtest(user, [debate])
    # when it is opened
    page = open_page(f"/backtests/{done.pk}/", user=user)
    # then each trade's prices show as many decimals as its coin's candles
    rows = page.locator("#trades tbody tr")
    expect(rows).to_have_count(2)
    expect(rows.nth(0).locator("td")).to_contain_text(["DOGEUSDT", "0.10987", "0.10650", "-30.22"])
    expect(rows.nth(1).locator("td")).to_contain_text(["BTCUSDT", "60123.45", "61000.10", "12.50"])


def test_a_rule_that_never_lost_shows_an_infinite_profit_factor(open_page, user):
    from playwright.sync_api import expect

    # given a finished backtest whose debate closed two winning trades, and a flat rule
    # that traded nothing
    def rule(key, label, **metrics):
        figures = {"final_equity": 1000.0, "trades": 0, "win_rate": None, "profit_factor": None}
        figures.update(metrics)
        equity = [[1723262400000, 1000.0], [1723276800000, figures["final_equity"]]]
        return {"key": key, "label": label, "trades": [], "metrics": figures, "equity": equity}

    done = finished_backtest(
        user,
        [
            rule("debate", "Debate consensus", trades=2, win_rate=1.0, final_equity=1012.5),
            rule("flat", "Always wait"),
        ],
    )
    # when it is opened
    page = open_page(f"/backtests/{done.pk}/", user=user)
    # then the debate's profit factor reads infinite, the flat rule's is missing
    column = 1 + 7  # the rule's label, then the profit factor, seventh of the metrics
    cell = 'tr[data-rule="{}"] td:nth-child({})'
    expect(page.locator("#metrics " + cell.format("debate", column))).to_have_text("∞")
    expect(page.locator("#metrics " + cell.format("flat", column))).to_have_text("–")


def test_the_simulated_models_tokens_show_as_estimates(open_page, user):
    from playwright.sync_api import expect

    # given a finished backtest of simulated models, whose tokens are their estimates
    equity = [[1723262400000, 1000.0], [1723276800000, 1000.0]]
    metrics = {"final_equity": 1000.0, "trades": 0}
    debate = {"key": "debate", "label": "Debate", "trades": [], "metrics": metrics}
    done = finished_backtest(user, [{**debate, "equity": equity}])
    usage = {"model_calls": 54, "prompt_tokens": 120_000, "completion_tokens": 30_000}
    done.report["usage"].update(**usage, estimated_tokens=150_000)
    done.save(update_fields=["report"])
    # when it is opened
    page = open_page(f"/backtests/{done.pk}/", user=user)
    # then its usage says the tokens are estimates
    expect(page.locator("#usage")).to_contain_text(
        "54 model calls, 0 answered from the cache, 150,000 tokens (estimated), 1.0 s."
    )
