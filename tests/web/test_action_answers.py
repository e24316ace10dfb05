"""An action's answer on the arena page against the debate's live stream: the answer to a
button is read when the action is taken, and the stream may have moved the debate on by
the time it arrives."""

from __future__ import annotations

import pytest

from arena.celery import app
from debates.selectors import debate_state
from debates.services import DebateInput, debate_advance, debate_create, debate_start
from debates.state import debate_plan
from tests.debates.conftest import kill_process_group, start_worker_process, wait_for
from tests.web.test_browser import SEATS, arena, spin  # noqa: F401 (arena: a fixture)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def held_before_last_step(debate_id: int) -> bool:
    """Say whether a manual debate is held with only its last step (the consensus) left."""
    state = debate_state(debate_id=debate_id)
    plan = debate_plan(state)
    return plan.can_advance and state.steps_released == len(plan.steps) - 1


def test_the_answer_to_the_last_continue_does_not_undo_what_the_stream_showed(
    open_page,
    server,
    worker,
    user,
    arena,  # noqa: F811 (the fixture imported above)
    llm,
):
    from playwright.sync_api import expect

    # given a manual two-seat, two-round debate advanced up to its consensus
    llm.set_latency(0)
    seats = [
        {"ai_model": model.pk, "personality": personality}
        for model, personality in zip(arena["models"][:2], SEATS[:2], strict=True)
    ]
    data = DebateInput(
        name="Step by step",
        strategy=arena["strategy"].pk,
        symbol="BTCUSDT",
        max_rounds=2,
        pace="manual",
        participants=seats,
    )
    debate = debate_create(owner=user, data=data)
    debate_start(debate_id=debate.pk)
    while True:
        wait_for(lambda: debate_plan(debate_state(debate_id=debate.pk)).can_advance, timeout=30)
        if held_before_last_step(debate.pk):
            break
        debate_advance(debate_id=debate.pk)
    page = open_page(f"/debates/{debate.pk}/", user=user)
    expect(page.locator("#stream-state")).to_have_text("● live")
    expect(page.locator("#debate-status")).to_have_text("voting")
    # (no worker until the answer to Continue is read: it is read while the debate votes)
    kill_process_group(worker)
    answers = []
    page.route("**/advance", lambda route: answers.append((route, route.fetch())))
    second = None
    try:
        # when Continue is pressed, and its answer reaches the page only after the stream
        # brought the consensus and the completion
        page.click('#debate-actions [data-action="advance"]')
        assert spin(page, lambda: answers, seconds=10), "Continue sent nothing"
        route, answer = answers[0]
        assert answer.json()["status"] == "voting"
        second = start_worker_process("web-second")
        expect(page.locator("#debate-status")).to_have_text("completed", timeout=60_000)
        expect(page.locator("#decisions .decision")).to_have_count(3)
        page.evaluate(
            """() => {
              window.statusesSeen = [];
              const badge = document.querySelector("#debate-status");
              new MutationObserver(() => window.statusesSeen.push(badge.textContent))
                .observe(badge, {childList: true, characterData: true, subtree: true});
            }"""
        )
        with page.expect_response("**/advance") as arrived:
            route.fulfill(response=answer)
        arrived.value.finished()
        spin(page, lambda: page.evaluate("window.statusesSeen.length"), seconds=1)
        # then the page still shows the debate completed, executable, with no Cancel
        assert page.evaluate("window.statusesSeen").count("voting") == 0
        expect(page.locator("#debate-status")).to_have_text("completed")
        link = page.locator(f'.debate-link[data-debate-id="{debate.pk}"] .debate-link-meta')
        expect(link).to_have_text("BTCUSDT · completed")
        expect(page.locator('#debate-actions [data-action="cancel"]')).to_have_count(0)
        expect(page.locator("#execute-form")).to_be_visible()
    finally:
        if second is not None:
            kill_process_group(second)
        app.control.purge()
