"""The arena page in headless Chromium against uvicorn, a Celery worker process and the
fake model server: what a person sees, from logging in to the execution on a paper trader."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from debates.engine.personalities import PERSONALITIES
from debates.models import Debate, JudgeScore, Message, Vote
from debates.selectors import debate_spend
from debates.services import DebateInput, debate_create
from tests.debates.conftest import wait_for
from tests.debates.factories import AIModelFactory, DebateFactory, FakeLLMModelFactory
from tests.debates.test_judge import script_judge
from tests.strategies.factories import StrategyFactory
from tests.traders.factories import TraderFactory
from tests.web.conftest import ARTIFACTS, PASSWORD
from traders.models import Execution

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SEATS = ("bull", "bear", "analyst")
COINS = ["BTCUSDT", "ETHUSDT", "SOLUSDT"]


@pytest.fixture
def arena(user, llm):
    """A strategy on the bundled dataset, three models answering from the fake model
    server (open_long on every coin by default) and a running paper trader."""
    llm.set_latency(0.3)
    strategy = StrategyFactory(owner=user, name="Majors", static_coins=COINS)
    models = [
        FakeLLMModelFactory(owner=user, llm=llm, name=f"Fake {personality}")
        for personality in SEATS
    ]
    trader = TraderFactory(owner=user, name="Paper desk", exchange="paper")
    return {"strategy": strategy, "models": models, "trader": trader}


def three_round_debate(user, arena, name: str, **fields):
    """Create a three-round BTC debate seating the arena's three models."""
    seats = [
        {"ai_model": model.pk, "personality": personality}
        for model, personality in zip(arena["models"], SEATS, strict=True)
    ]
    data = DebateInput(
        name=name,
        strategy=arena["strategy"].pk,
        symbol="BTCUSDT",
        max_rounds=3,
        participants=seats,
        **fields,
    )
    return debate_create(owner=user, data=data)


def watch(page) -> None:
    """Mark the page (a reload would drop the mark) and record, as they happen, every
    status it shows and the status shown when each message and vote first appeared."""
    page.evaluate(
        """() => {
          window.arenaMark = "not reloaded";
          window.statusesSeen = [];
          window.firstSeen = [];
          const seen = new Set();
          const badge = document.querySelector("#debate-status");
          const record = () => {
            const status = badge.textContent;
            if (status !== window.statusesSeen.at(-1)) window.statusesSeen.push(status);
            for (const el of document.querySelectorAll("[data-message-id], [data-vote-id]")) {
              const key = el.dataset.messageId ? `message ${el.dataset.messageId}`
                : `vote ${el.dataset.voteId}`;
              if (!seen.has(key)) {
                seen.add(key);
                window.firstSeen.push(`${key.split(" ")[0]} while ${status}`);
              }
            }
          };
          record();
          const changes = {childList: true, characterData: true, subtree: true};
          new MutationObserver(record).observe(document.querySelector("#debate"), changes);
        }"""
    )


def dom_ids(page, attribute: str) -> list[int]:
    """Return the values of ``attribute`` on the page's elements, in page order."""
    return [
        int(value)
        for value in page.eval_on_selector_all(
            f"[{attribute}]", f"els => els.map(el => el.getAttribute('{attribute}'))"
        )
    ]


def test_a_debate_from_the_form_to_the_execution_updates_live(
    open_page, server, worker, user, arena
):
    from playwright.sync_api import expect

    # given the login page, reached by opening the arena
    page = open_page("/")
    expect(page).to_have_url(f"{server.url}/login/?next=/")
    # when the user logs in
    page.fill("#id_username", user.username)
    page.fill("#id_password", PASSWORD)
    page.click("button[type=submit]")
    # then the arena opens, with no debate yet
    expect(page.locator("#welcome")).to_be_visible()
    expect(page.locator("#debate-list-empty")).to_be_visible()

    # when a debate is created with the form: two rounds, three participants
    page.click("#new-debate")
    page.fill("#f-name", "Browser debate")
    expect(page.locator("#f-strategy")).to_have_value(str(arena["strategy"].pk))
    suggestions = page.eval_on_selector_all(
        "#symbol-suggestions option", "os => os.map(o => o.value)"
    )
    assert suggestions == COINS
    page.fill("#f-symbol", "BTCUSDT")
    page.fill("#f-rounds", "2")
    rows = page.locator(".participant-row")
    expect(rows).to_have_count(3)
    for index, (model, personality) in enumerate(zip(arena["models"], SEATS, strict=True)):
        rows.nth(index).locator("[data-name=ai_model]").select_option(str(model.pk))
        rows.nth(index).locator("[data-name=personality]").select_option(personality)
    page.click("#create-submit")
    # then the new debate is shown, pending, with its coins and participants, in the
    # automatic pace the form chose by default
    expect(page.locator("#debate-name")).to_have_text("Browser debate")
    debate = Debate.objects.get(name="Browser debate")
    assert debate.pace == "auto"
    expect(page).to_have_url(f"{server.url}/debates/{debate.pk}/")
    expect(page.locator("#debate-status")).to_have_text("pending")
    expect(
        page.locator(f'.debate-link[data-debate-id="{debate.pk}"] .status-pending')
    ).to_be_visible()
    expect(page.locator("#debate-participants .avatar")).to_have_text(["🐂", "🐻", "📊"])
    expect(page.locator("#stream-state")).to_have_text("● live")
    expect(page.locator("#consensus")).to_be_hidden()

    # when it is started
    watch(page)
    page.click('#debate-actions [data-action="start"]')
    # then every message, vote and the consensus arrive on the open page
    expect(page.locator("#debate-status")).to_have_text("completed", timeout=60_000)
    expect(page.locator("[data-message-id]")).to_have_count(6)
    expect(page.locator("[data-vote-id]")).to_have_count(9)
    expect(page.locator("#decisions .decision")).to_have_count(3)
    # with the coins the snapshot step chose in the header, without a reload
    expect(page.locator("#debate-coins .coin")).to_have_text(COINS)
    # and the tokens its calls spent, read again as it ended
    spent = debate_spend(debate_id=debate.pk).tokens
    assert spent > 0
    expect(page.locator("#debate-meta")).to_contain_text(f" · {spent:,} tokens · $")
    assert page.evaluate("window.arenaMark") == "not reloaded"
    assert page.evaluate("window.statusesSeen") == ["pending", "running", "voting", "completed"]
    assert page.evaluate("window.firstSeen") == [
        *["message while running"] * 6,
        *["vote while voting"] * 9,
    ]
    expect(page.locator(".round .round-title")).to_have_text(
        ["Round 1 of 2 · opening analyses", "Round 2 of 2 · rebuttals"]
    )
    expect(
        page.locator(f'.debate-link[data-debate-id="{debate.pk}"] .status-completed')
    ).to_be_visible()
    # and a message opens on its reasoning and per-coin positions
    first = page.locator("[data-message-id]").first
    first.locator("summary").click()
    expect(first.locator(".reasoning")).to_contain_text("Fake model answer for")
    expect(first.locator(".positions-table tbody tr")).to_have_count(3)
    expect(first.locator(".positions-table .badge")).to_have_text(["LONG"] * 3)
    # and the consensus is a long on every coin, the primary first
    expect(page.locator("#decisions .decision").first).to_have_attribute("data-symbol", COINS[0])
    expect(page.locator("#decisions .badge")).to_have_text(["LONG"] * 3)

    # when the primary decision is executed on the paper trader
    expect(page.locator("#execute-form")).to_be_visible()
    page.select_option("#x-trader", str(arena["trader"].pk))
    page.select_option("#x-symbol", "BTCUSDT")
    page.click("#execute-submit")
    # then the execution shows as filled, and the other coins can still be executed
    filled = page.locator('#decisions [data-symbol="BTCUSDT"] .execution-filled')
    expect(filled).to_contain_text("filled", timeout=30_000)
    expect(page.locator("#x-symbol option")).to_have_text(["ETHUSDT · LONG", "SOLUSDT · LONG"])
    expect(page.locator("#execute-form")).to_be_visible()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=ARTIFACTS / "arena-finished.png", full_page=True)

    # when the two other coins are executed too
    for symbol in ("ETHUSDT", "SOLUSDT"):
        page.select_option("#x-symbol", symbol)
        page.click("#execute-submit")
        expect(page.locator(f'#decisions [data-symbol="{symbol}"] .execution')).to_be_visible()
    # then nothing is left to execute and the execute form goes away
    expect(page.locator("#execute-form")).to_be_hidden()

    messages = dom_ids(page, "data-message-id")
    votes = dom_ids(page, "data-vote-id")
    execution = Execution.objects.get(symbol="BTCUSDT")
    # what the page showed is exactly what was stored, each once
    assert sorted(messages) == sorted(
        Message.objects.filter(debate=debate).values_list("id", flat=True)
    )
    assert sorted(votes) == sorted(Vote.objects.filter(debate=debate).values_list("id", flat=True))
    assert (execution.symbol, execution.status, execution.trader_id) == (
        "BTCUSDT",
        "filled",
        arena["trader"].pk,
    )
    assert filled.inner_text().startswith(f"Execution #{execution.pk} on Paper desk: filled")


def test_the_form_shows_the_api_field_errors_next_to_the_fields(open_page, user, arena):
    from playwright.sync_api import expect

    # given the create form, with a disabled model among the user's models
    disabled = AIModelFactory(owner=user, name="Retired model", enabled=False)
    page = open_page("/", user=user)
    page.click("#new-debate")
    expect(page.locator(".participant-row")).to_have_count(3)
    # when it is sent with a name too long and five rounds too many
    page.fill("#f-name", "N" * 201)
    page.fill("#f-rounds", "9")
    page.click("#create-submit")
    # then the API's messages stand next to those two fields, and nowhere else
    expect(page.locator('#create-form [data-error-for="name"]')).to_have_text(
        "Ensure this field has no more than 200 characters."
    )
    expect(page.locator('#create-form [data-error-for="max_rounds"]')).to_have_text(
        "Ensure this value is less than or equal to 5."
    )
    expect(page.locator("#f-name")).to_have_attribute("aria-invalid", "true")
    expect(page.locator("#create-errors")).to_have_text("Invalid input.")
    expect(page.locator("#create-form .field-error:not(:empty)")).to_have_count(2)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTIFACTS / "arena-form-errors.png", full_page=True)

    # when those are fixed but the second participant plays on the disabled model
    page.fill("#f-name", "Refused debate")
    page.fill("#f-rounds", "3")
    second = page.locator(".participant-row").nth(1)
    second.locator("[data-name=ai_model]").select_option(str(disabled.pk))
    page.click("#create-submit")
    # then the refusal names that participant's model, and the earlier errors are gone
    expect(second.locator('[data-error-for="participants[1].ai_model"]')).to_have_text(
        "AI model 'Retired model' is disabled."
    )
    expect(page.locator("#create-form .field-error:not(:empty)")).to_have_count(1)
    expect(page.locator("#f-name")).not_to_have_attribute("aria-invalid", "true")

    # when that participant is removed, leaving one too few after another removal
    second.locator(".remove-participant").click()
    page.locator(".participant-row").nth(1).locator(".remove-participant").click()
    page.click("#create-submit")
    # then the participants error stands under the list
    expect(page.locator('#create-form [data-error-for="participants"]')).to_have_text(
        "A debate needs 2 to 6 participants; got 1."
    )
    assert Debate.objects.count() == 0


class BadGateway(BaseHTTPRequestHandler):
    """What a proxy answers while the web process behind it is down: 502 to everything."""

    def do_GET(self) -> None:
        self.server.paths.append(self.path)
        body = b"upstream unavailable"
        self.send_response(502)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        """Keep the test output quiet."""


@contextlib.contextmanager
def bad_gateway(port: int) -> Iterator[ThreadingHTTPServer]:
    """Answer 502 on ``port`` until the block ends; ``.paths`` lists what was asked."""
    proxy = ThreadingHTTPServer(("127.0.0.1", port), BadGateway)
    proxy.paths = []
    thread = threading.Thread(target=proxy.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield proxy
    finally:
        proxy.shutdown()
        proxy.server_close()
        thread.join(5)


def spin(page, until, *, seconds: float) -> object:
    """Let the page and Playwright's route handlers run (they run only while Playwright
    waits) until ``until()`` is true or ``seconds`` have passed; return its last value."""
    for _ in range(int(seconds * 50)):
        if done := until():
            return done
        page.wait_for_timeout(20)
    return until()


def test_typing_in_the_form_while_its_lists_load_stays_in_the_field_typed_in(
    open_page, user, arena
):
    from playwright.sync_api import expect

    # given the create form opened while the list of models is still on its way
    page = open_page("/", user=user)
    held = []
    page.route("**/api/ai-models*", lambda route: held.append(route))
    page.click("#new-debate")
    assert spin(page, lambda: held, seconds=5), "the form asked for no list of models"
    # when a person types the first letters of a coin before the list arrives, the rest
    # after it
    page.click("#f-symbol")
    page.keyboard.type("ETH")
    for route in held:
        route.continue_()
    expect(page.locator(".participant-row")).to_have_count(3)
    page.keyboard.type("USDT")
    # then every letter is in the field they typed it in; the name is left empty
    expect(page.locator("#f-symbol")).to_have_value("ETHUSDT")
    expect(page.locator("#f-name")).to_have_value("")


def test_the_form_opened_before_the_personalities_arrive_offers_them_in_every_seat(
    open_page, user, arena
):
    from playwright.sync_api import expect

    # given the arena page whose list of personalities is still on its way
    held = []
    page = open_page(
        "/",
        user=user,
        before=lambda page: page.route(
            "**/api/debates/personalities*", lambda route: held.append(route)
        ),
    )
    assert spin(page, lambda: held, seconds=5), "the page asked for no list of personalities"
    # when the person opens the create form before it arrives, and it arrives after the
    # form's own lists (a form that does not wait for it has drawn its seats by then)
    page.click("#new-debate")
    rows = page.locator(".participant-row")
    spin(page, rows.count, seconds=2)
    for route in held:
        route.continue_()
    # then every seat offers the personalities, the default ones chosen
    expect(rows).to_have_count(3)
    for index, personality in enumerate(SEATS):
        select = rows.nth(index).locator("[data-name=personality]")
        expect(select.locator("option")).to_have_count(len(PERSONALITIES))
        expect(select).to_have_value(personality)


@pytest.mark.parametrize("outage", ["connection refused", "502 from a proxy"])
def test_the_page_recovers_from_a_dropped_stream_without_duplicates(
    open_page, server, worker, user, arena, llm, outage
):
    from playwright.sync_api import expect

    # given a three-round debate on an open page, its models answering slowly
    llm.set_latency(0.8)
    debate = three_round_debate(user, arena, "Long debate")
    page = open_page(f"/debates/{debate.pk}/", user=user)
    expect(page.locator("#stream-state")).to_have_text("● live")
    watch(page)
    # when it is started and the web server goes away after the first message
    page.click('#debate-actions [data-action="start"]')
    expect(page.locator("[data-message-id]").first).to_be_visible(timeout=30_000)
    server.stop()
    if outage == "connection refused":
        expect(page.locator("#stream-state")).to_have_text("reconnecting…")
        wait_for(lambda: Message.objects.filter(debate=debate).count() >= 5, timeout=60)
    else:
        with bad_gateway(server.port) as proxy:
            # (the browser gives up on an error answer; the page asks again, after the
            # last event it applied)
            wait_for(lambda: any("lastEventId=" in path for path in proxy.paths), timeout=30)
            expect(page.locator("#stream-state")).to_have_text("reconnecting…")
            wait_for(lambda: Message.objects.filter(debate=debate).count() >= 5, timeout=60)
    # and comes back on the same address while the debate goes on
    server.start()
    # then the page catches up and follows the debate to its end, each item once
    expect(page.locator("#debate-status")).to_have_text("completed", timeout=90_000)
    expect(page.locator("#stream-state")).to_have_text("● live")
    expect(page.locator("[data-message-id]")).to_have_count(9)
    expect(page.locator("[data-vote-id]")).to_have_count(9)
    expect(page.locator("#decisions .decision")).to_have_count(3)
    # with the coins the snapshot step chose in the header, without a reload
    expect(page.locator("#debate-coins .coin")).to_have_text(COINS)
    assert page.evaluate("window.arenaMark") == "not reloaded"
    messages = dom_ids(page, "data-message-id")
    votes = dom_ids(page, "data-vote-id")
    stored = Message.objects.filter(debate=debate).values_list("id", flat=True)
    assert sorted(messages) == sorted(stored)
    assert sorted(votes) == sorted(Vote.objects.filter(debate=debate).values_list("id", flat=True))


def page_width(page) -> int:
    """Return the width of the page's content: above the viewport's, it scrolls sideways."""
    return page.evaluate("document.documentElement.scrollWidth")


def test_on_a_phone_the_sidebar_folds_away(open_page, user, arena):
    from playwright.sync_api import expect

    # given a phone-sized page with one debate
    debate = DebateFactory(owner=user, name="Pocket debate", strategy=arena["strategy"])
    page = open_page("/", user=user, viewport=(390, 844))
    sidebar = page.locator("#sidebar")
    # then the sidebar is folded away, the menu button shows it
    expect(sidebar).not_to_be_in_viewport()
    page.click("#menu-toggle")
    expect(sidebar).to_be_in_viewport(ratio=1)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTIFACTS / "arena-phone-sidebar.png")
    # when a debate is picked, the sidebar folds away again and the debate fills the screen
    page.click(f'.debate-link[data-debate-id="{debate.pk}"]')
    expect(page.locator("#debate-name")).to_have_text("Pocket debate")
    expect(sidebar).not_to_be_in_viewport()
    assert page_width(page) <= 390
    page.screenshot(path=ARTIFACTS / "arena-phone-debate.png")
    # and logging out leads to the login page
    page.click(".logout button")
    expect(page.locator("#id_username")).to_be_visible()


def test_an_event_that_arrives_while_a_button_is_pressed_does_not_swallow_the_click(
    open_page, user, arena
):
    from django.db import transaction
    from playwright.sync_api import expect

    from debates import events

    # given an open debate whose live stream is connected
    debate = three_round_debate(user, arena, "Pressed")
    page = open_page(f"/debates/{debate.pk}/", user=user)
    expect(page.locator("#stream-state")).to_have_text("● live")
    # (every status event redraws the participants in the header: counted, to know when
    # the event below has been applied)
    page.evaluate(
        """() => {
          window.headerDrawn = 0;
          new MutationObserver(() => window.headerDrawn++)
            .observe(document.getElementById("debate-participants"), {childList: true});
        }"""
    )
    # when the person presses Cancel, and an event redraws the header before they let go
    cancel = page.locator('#debate-actions [data-action="cancel"]')
    box = cancel.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.down()
    with transaction.atomic():
        events.status_changed(debate)  # the same state, announced again
    assert spin(page, lambda: page.evaluate("window.headerDrawn"), seconds=10), "no event came"
    page.mouse.up()
    # then the click still cancels the debate
    expect(page.locator("#debate-status")).to_have_text("cancelled")


def test_on_a_phone_the_top_bar_fits_while_the_stream_connects_and_reconnects(
    open_page, user, arena
):
    from playwright.sync_api import expect

    # given a debate opened on a phone-sized page whose live stream does not answer yet
    debate = DebateFactory(owner=user, name="Pocket debate", strategy=arena["strategy"])
    held = []
    page = open_page(
        f"/debates/{debate.pk}/",
        user=user,
        viewport=(390, 844),
        before=lambda page: page.route("**/stream*", lambda route: held.append(route)),
    )
    state = page.locator("#stream-state")
    # then while it connects the page does not scroll sideways
    expect(state).to_have_text("connecting…")
    assert page_width(page) <= 390
    # nor once the connection failed and the browser tries again
    assert spin(page, lambda: held, seconds=5), "the page opened no stream"
    held.pop().abort()
    expect(state).to_have_text("reconnecting…")
    assert page_width(page) <= 390


def test_the_page_shows_the_judges_summaries_and_scores_live(
    open_page, server, worker, user, arena, llm
):
    """The judge's summaries show under their rounds as they are written, and its scores
    after the votes."""
    from playwright.sync_api import expect

    # given a three-round debate with a judge, on an open page
    script_judge(llm, {"P1": (8, 7, 9), "P2": (5, 6, 4), "P3": (3, 2, 4)})
    judge = FakeLLMModelFactory(owner=user, llm=llm, name="Fake judge", model_name="fake-judge")
    debate = three_round_debate(user, arena, "Judged debate", judge={"ai_model": judge.pk})
    page = open_page(f"/debates/{debate.pk}/", user=user)
    expect(page.locator("#stream-state")).to_have_text("● live")
    expect(page.locator("#judge")).to_be_visible()
    expect(page.locator("#judge-meta")).to_have_text("Fake judge · one scoring call · never votes")
    # when it is started
    page.click('#debate-actions [data-action="start"]')
    # then the summary of round 1 shows under round 1 while the debate goes on
    summary = page.locator('[data-round="1"] [data-summary-round="1"]')
    expect(summary).to_contain_text("SUMMARY-MARKER-1: P1 is long", timeout=60_000)
    expect(summary).to_contain_text("Tally of the round: BTCUSDT open_long 3")
    # and once the debate is over, both summaries and every score are on the page
    expect(page.locator("#debate-status")).to_have_text("completed", timeout=90_000)
    expect(page.locator("[data-summary-round]")).to_have_count(2)
    cards = page.locator("#judge-scores .judge-score")
    expect(cards).to_have_count(3)
    expect(page.locator("#judge-scores .judge-total")).to_have_text(["8.0/10", "5.0/10", "3.0/10"])
    expect(cards.first).to_contain_text("P1 cites figures.")
    stored = JudgeScore.objects.filter(debate=debate).order_by("participant__speak_order")
    assert [str(score.participant_id) for score in stored] == page.eval_on_selector_all(
        "[data-score-participant]", "els => els.map(el => el.dataset.scoreParticipant)"
    )
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.evaluate("window.scrollTo(0, 0)")
    page.screenshot(path=ARTIFACTS / "arena-judge.png", full_page=True)


def test_a_manual_debate_waits_on_the_page_for_continue(open_page, server, worker, user, arena):
    from playwright.sync_api import expect

    # given the form, whose pace is automatic unless chosen
    page = open_page("/", user=user)
    page.click("#new-debate")
    expect(page.locator("#f-pace")).to_have_value("auto")
    assert page.eval_on_selector_all("#f-pace option", "os => os.map(o => o.value)") == [
        "auto",
        "manual",
    ]
    # when a two-seat, two-round debate is created with it in the manual pace
    page.fill("#f-name", "Step by step")
    page.fill("#f-symbol", "BTCUSDT")
    page.fill("#f-rounds", "2")
    rows = page.locator(".participant-row")
    expect(rows).to_have_count(3)
    rows.nth(2).locator(".remove-participant").click()
    for index, (model, personality) in enumerate(zip(arena["models"][:2], SEATS[:2], strict=True)):
        rows.nth(index).locator("[data-name=ai_model]").select_option(str(model.pk))
        rows.nth(index).locator("[data-name=personality]").select_option(personality)
    page.select_option("#f-pace", "manual")
    page.click("#create-submit")
    # then the debate is stored in the manual pace and shown, open on its live stream
    expect(page.locator("#debate-name")).to_have_text("Step by step")
    debate = Debate.objects.get(name="Step by step")
    assert (debate.pace, debate.max_rounds, debate.participants.count()) == ("manual", 2, 2)
    expect(page.locator("#stream-state")).to_have_text("● live")
    # when it is started, then it stops after its prepare step with a Continue button
    page.click('#debate-actions [data-action="start"]')
    proceed = page.locator('#debate-actions [data-action="advance"]')
    expect(proceed).to_have_text("Continue", timeout=30_000)
    assert not Message.objects.filter(debate=debate).exists()
    # and each click runs one more step: the first opening, then the second
    for expected in (1, 2):
        proceed.click()
        expect(page.locator("[data-message-id]")).to_have_count(expected, timeout=30_000)
        expect(proceed).to_be_visible(timeout=30_000)
        assert Message.objects.filter(debate=debate).count() == expected
