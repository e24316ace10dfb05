"""The pages in a real browser under their Content-Security-Policy, served by uvicorn as
the Procfile runs it: nothing refused, Swagger UI drawn offline, no ``Server`` banner."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from django.conf import settings

from debates.engine.personalities import PERSONALITIES
from tests.web.conftest import Uvicorn

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_web_commands_send_no_server_banner(server):
    # given the web command of the Procfile and of docker compose
    root = Path(settings.BASE_DIR)
    for name in ("Procfile", "docker-compose.yml"):
        command = next(
            line for line in (root / name).read_text().splitlines() if "uvicorn " in line
        )
        assert "--no-server-header" in command, name
    # when the server, run with the same flag, answers
    response = httpx.get(f"{server.url}/login/")
    # then it names no server
    assert response.status_code == 200
    assert "server" not in response.headers
    assert "content-security-policy" in response.headers


@pytest.mark.parametrize(
    ("path", "ready"),
    [
        ("/login/", "form button[type=submit]"),
        ("/", "#debate-list-empty:not([hidden])"),
        ("/admin/", "#content-main"),
        ("/admin/debates/aimodel/add/", "#aimodel_form"),
        ("/admin/debates/debate/{debate}/change/", '[data-live="connection"]:has-text("live")'),
        ("/debates/{debate}/", "#debate-participants .avatar"),
        ("/api/docs/", ".swagger-ui .info .title"),
    ],
)
def test_pages_work_under_their_policy_with_nothing_refused(
    server, open_page, staff_user, path, ready
):
    # given a browser logged in as staff, recording every policy violation (open_page
    # reports each on the console)
    refused: list[str] = []

    def watch(page) -> None:
        page.on("console", lambda message: refused.append(message.text))

    # when the page is opened (the machine has no internet: what it loads is ours)
    if "{debate}" in path:
        from tests.debates.factories import MessageFactory

        # a debate with a seat that has spoken: the arena page colours its avatar and
        # its turn with the personality's colour
        message = MessageFactory(participant__debate__owner=staff_user)
        path = path.format(debate=message.debate_id)
    page = open_page(path, user=staff_user, before=watch)
    page.wait_for_selector(ready)
    page.wait_for_load_state("networkidle")
    # then it is drawn and the policy refused nothing
    assert [text for text in refused if "Content Security Policy" in text] == []
    if path.startswith("/debates/"):
        color = page.locator(".message .avatar").evaluate(
            "el => getComputedStyle(el).getPropertyValue('--color')"
        )
        assert color.strip().lower() == PERSONALITIES["bull"].color.lower()
    if path == "/api/docs/":
        assert page.inner_text(".swagger-ui .info .title").startswith("Debate Arena API")


def test_the_access_log_carries_no_stream_token(transactional_db, tmp_path):
    # given the server writing its access log
    log = tmp_path / "uvicorn.log"
    with log.open("wb") as output:
        server = Uvicorn(log_level="info", output=output)
        server.start()
        try:
            # when a stream is asked for with a token in its query string
            response = httpx.get(f"{server.url}/api/debates/1/stream?token=s3cret-stream-token")
        finally:
            server.stop()
    # then the request is logged, its token masked
    assert response.status_code == 401
    text = log.read_text()
    assert "GET /api/debates/1/stream?token=[redacted] HTTP/1.1" in text
    assert "s3cret-stream-token" not in text


def test_swagger_ui_loads_with_the_network_cut_off(server, browser):
    # given a browser whose every request off the server is cut off (and recorded)
    context = browser.new_context()
    off_server: list[str] = []

    def cut(route) -> None:
        off_server.append(route.request.url)
        route.abort("internetdisconnected")

    context.route(lambda url: not url.startswith(server.url), cut)
    page = context.new_page()
    # when the API's docs are opened
    page.goto(server.url + "/api/docs/")
    page.wait_for_selector(".swagger-ui .opblock-tag", timeout=15_000)
    page.wait_for_load_state("networkidle")
    # then Swagger UI draws the schema's operations from the project's own static files,
    # and asked for nothing elsewhere
    assert page.inner_text(".swagger-ui .info .title").startswith("Debate Arena API")
    assert page.locator(".swagger-ui .opblock").count() > 20
    assert off_server == []
    context.close()
