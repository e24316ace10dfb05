"""The human seat on the arena page, in headless Chromium against uvicorn, a Celery
worker process and the fake model server: the person takes a seat in the form, writes
their turn (the API's field errors shown next to the fields), sees the models answer it
in round 2, writes their rebuttal and casts their vote."""

from __future__ import annotations

import pytest

from debates.models import Debate, Message
from tests.debates.conftest import wait_for
from tests.debates.factories import FakeLLMModelFactory
from tests.strategies.factories import StrategyFactory
from tests.web.conftest import ARTIFACTS

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

COINS = ["BTCUSDT", "ETHUSDT"]
OPENING = "Funding flipped negative at the 08:00 print while open interest climbed."
REBUTTAL = "The bull ignores the resistance at the weekly high."


@pytest.fixture
def models(user, llm):
    """A strategy on the bundled dataset and two models answering from the fake server."""
    llm.set_latency(0.3)
    StrategyFactory(owner=user, name="Majors", static_coins=COINS)
    return [FakeLLMModelFactory(owner=user, llm=llm, name=f"Fake {n}") for n in (1, 2)]


def _answer(page, reasoning: str, choices: list[tuple[str, str]]) -> None:
    page.fill("#h-reasoning", reasoning)
    for index, (action, confidence) in enumerate(choices):
        page.select_option(f"#h-action-{index}", action)
        page.fill(f"#h-confidence-{index}", confidence)


def test_the_person_takes_a_seat_writes_and_the_models_answer(
    open_page, server, worker, user, models, llm
):
    from playwright.sync_api import expect

    # given the arena, and a debate made with the form: a model, the person, a model
    page = open_page("/", user=user)
    page.click("#new-debate")
    page.fill("#f-name", "With me")
    page.fill("#f-rounds", "2")
    rows = page.locator(".participant-row")
    expect(rows).to_have_count(3)
    seats = [(str(models[0].pk), "bull"), ("human", "analyst"), (str(models[1].pk), "bear")]
    for index, (seat, personality) in enumerate(seats):
        rows.nth(index).locator("[data-name=ai_model]").select_option(seat)
        rows.nth(index).locator("[data-name=personality]").select_option(personality)
    page.click("#create-submit")
    expect(page.locator("#debate-status")).to_have_text("pending")
    debate = Debate.objects.get(name="With me")
    expect(page.locator("#debate-participants .participant-name")).to_contain_text(
        ["Bull · Fake 1", "Analyst · you", "Bear · Fake 2"]
    )
    expect(page.locator("#human-turn")).to_be_hidden()

    # when it starts, the person's form shows while the models write their openings
    page.click('#debate-actions [data-action="start"]')
    form = page.locator("#human-turn")
    expect(form).to_be_visible(timeout=30_000)
    expect(page.locator("#human-turn-title")).to_have_text("Your turn · round 1 of 2")
    expect(form.locator(".human-coin")).to_have_count(2)
    expect(page.locator("#rounds [data-message-id]")).to_have_count(2, timeout=30_000)

    # and a bad confidence is refused next to its field, nothing stored
    _answer(page, OPENING, [("open_short", "150"), ("wait", "40")])
    page.click("#human-turn-submit")
    error = form.locator('[data-error-for="decisions[0].confidence"]')
    expect(error).to_contain_text("less than or equal to 100")
    expect(page.locator("#h-confidence-0")).to_have_attribute("aria-invalid", "true")
    assert not Message.objects.filter(debate=debate, participant__kind="human").exists()
    # and a good answer is stored and shown as the person's
    page.fill("#h-confidence-0", "75")
    page.click("#human-turn-submit")
    mine = page.locator("#rounds .message.human")
    expect(mine).to_have_count(1)
    expect(mine.first.locator(".who strong")).to_have_text("Analyst · you")
    expect(mine.first.locator(".positions .badge")).to_have_text(["SHORT", "WAIT"])

    # then round 2 opens: the bull answers the person, then the form asks for a rebuttal
    expect(page.locator("#human-turn-title")).to_have_text(
        "Your turn · round 2 of 2", timeout=30_000
    )
    round_2 = page.locator('#rounds [data-round="2"] [data-message-id]')
    expect(round_2).to_have_count(1)
    page.evaluate("window.scrollTo(0, 0)")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=ARTIFACTS / "arena-human-turn.png", full_page=True)
    rebuttals = [r.prompt for r in llm.requests if "round 2/2" in r.prompt]
    assert len(rebuttals) == 1
    assert OPENING in rebuttals[0]

    # when the person writes their rebuttal, then votes
    _answer(page, REBUTTAL, [("open_short", "70"), ("hold", "30")])
    page.click("#human-turn-submit")
    expect(page.locator("#human-turn-title")).to_have_text("Your vote", timeout=30_000)
    expect(page.locator("#human-turn-submit")).to_have_text("Submit vote")
    _answer(page, "", [("open_short", "65"), ("wait", "50")])
    page.click("#human-turn-submit")

    # then the debate completes with the person's turns, their vote and a consensus
    expect(page.locator("#debate-status")).to_have_text("completed", timeout=60_000)
    expect(form).to_be_hidden()
    expect(page.locator("#rounds .message.human")).to_have_count(2)
    expect(page.locator("#rounds [data-message-id]")).to_have_count(6)
    expect(page.locator("[data-vote-id]")).to_have_count(6)
    expect(page.locator("#decisions .decision")).to_have_count(2)
    rebuttals = [r.prompt for r in llm.requests if "round 2/2" in r.prompt]
    assert len(rebuttals) == 2
    assert OPENING in rebuttals[1] and REBUTTAL in rebuttals[1]
    wait_for(lambda: Debate.objects.get(pk=debate.pk).human_due_at is None)
