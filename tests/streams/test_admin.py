"""The admin's debate page shows the debate's live stream."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connections, transaction
from django.test import Client

from debates import events
from debates.models import Debate
from tests.debates.factories import DebateFactory

pytestmark = pytest.mark.django_db


def test_the_debate_change_page_opens_the_debate_stream(staff_user, user):
    # given a debate and a staff member in the admin
    debate = DebateFactory(owner=user)
    client = Client()
    client.force_login(staff_user)
    # when the debate's page is opened
    response = client.get(f"/admin/debates/debate/{debate.pk}/change/")
    # then it holds the live panel and its script (a static file), which reads the
    # stream with the session cookie
    assert response.status_code == 200
    page = response.content.decode()
    assert f'data-stream-url="/api/debates/{debate.pk}/stream"' in page
    assert '<script src="/static/debates/admin_live.js" defer></script>' in page
    script = client.get("/static/debates/admin_live.js").content.decode()
    assert "new EventSource(panel.dataset.streamUrl)" in script
    for event_type in ("initial", "status", "round_start", "message", "vote", "consensus"):
        assert f'on("{event_type}"' in script


def test_the_add_page_has_no_live_panel(staff_user):
    client = Client()
    client.force_login(staff_user)
    response = client.get("/admin/debates/debate/add/")
    assert response.status_code == 200
    assert "data-stream-url" not in response.content.decode()


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_browser_on_the_debate_page_shows_the_debate_live(web, staff_user, user, monkeypatch):
    # (Playwright's sync API runs an event loop in this thread; the ORM calls are still sync)
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    # given a debate with two participants, served by uvicorn, and a staff member's browser
    from tests.debates.factories import MessageFactory, ParticipantFactory, VoteFactory

    debate = DebateFactory(owner=user)
    bull = ParticipantFactory(debate=debate, personality="bull", speak_order=0)
    bear = ParticipantFactory(debate=debate, personality="bear", speak_order=1)
    server = web()
    client = Client()
    client.force_login(staff_user)
    with browser_page(server.url, client.cookies["sessionid"].value) as page:
        page.goto(f"{server.url}/admin/debates/debate/{debate.pk}/change/")
        page.wait_for_selector('[data-live="connection"]:has-text("live")', timeout=10_000)
        # when the debate starts, a turn and a vote are stored (each announced on commit)
        with transaction.atomic():
            Debate.objects.filter(pk=debate.pk).update(
                status="running", phase="opening", current_round=1, current_speaker=bear
            )
            events.status_changed(Debate.objects.get(pk=debate.pk))
            events.round_started(debate.pk, 1)
        with transaction.atomic():
            events.message_stored(
                MessageFactory(participant=bull, reasoning="Funding is cooling, trend up.")
            )
        with transaction.atomic():
            events.vote_stored(VoteFactory(ballot__participant=bear, ballot__debate=debate))
        with transaction.atomic():
            events.step_failed(
                debate.pk, step="vote", participant=bull.pk, code="timeout", message="No answer."
            )
        # then the page shows each as it arrives
        log = page.locator('[data-live="log"]')
        log.locator("li", has_text="error in vote").wait_for(timeout=10_000)
        lines = log.locator("li").all_inner_texts()
        state = page.locator(".live-state").inner_text()
        connections.close_all()  # the ones this block used (its context is Playwright's)
    assert lines[0] == "status running (opening)"
    assert lines[1] == "Round 1"
    assert lines[2].startswith("R1 ") and lines[2].endswith("(bull): Funding is cooling, trend up.")
    assert lines[3].startswith("vote ") and "(bear) BTCUSDT: open_long 70% x5" in lines[3]
    assert lines[4].startswith("error in vote ") and lines[4].endswith("(bull): timeout No answer.")
    assert "status running" in state and "round 1" in state and "(bear)" in state


@contextlib.contextmanager
def browser_page(base_url: str, session_id: str) -> Iterator[Any]:
    """Open a headless Chromium page carrying the given admin session cookie."""
    from playwright.sync_api import Error, sync_playwright

    with sync_playwright() as playwright:
        try:
            browser = playwright.chromium.launch()
        except Error:
            system = shutil.which("chromium") or shutil.which("chromium-browser")
            if system is None:
                pytest.fail("a browser is needed: `playwright install chromium` or apt chromium")
            browser = playwright.chromium.launch(executable_path=system)
        try:
            context = browser.new_context()
            context.add_cookies([{"name": "sessionid", "value": session_id, "url": base_url}])
            yield context.new_page()
        finally:
            browser.close()
