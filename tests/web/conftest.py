"""Fixtures for the arena page in a real browser: uvicorn, a worker process, Chromium.

The browser is Debian's Chromium (/usr/bin/chromium), driven by Playwright's sync API;
a test tool's own browser download does not work on these machines, and CI installs the
Debian package (.ci/run).
"""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from django.db import connections
from django.test import Client

from tests.debates.conftest import llm, worker_env, worker_processes  # noqa: F401
from tests.ports import free_port
from tests.processes import start_uvicorn, stop_process

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ARTIFACTS = Path(settings.BASE_DIR) / "tests" / "artifacts"
PASSWORD = "correct horse battery staple"  # the one tests.factories.UserFactory sets


@dataclass
class Uvicorn:
    """A uvicorn process serving the whole app on this test run's database and Redis."""

    port: int = field(default_factory=free_port)
    process: subprocess.Popen | None = None
    log_level: str = "warning"
    output: Any = None  # a file for the server's output (its access log at "info")

    @property
    def url(self) -> str:
        """Return the server's root URL."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        """Start serving on ``port`` and return once the server answers."""
        self.process = start_uvicorn(
            self.port,
            {**worker_env(), "LOG_LEVEL": "WARNING"},
            *("--log-level", self.log_level),
            "--no-server-header",  # as the Procfile runs it
            ready_path="/login/",
            output=self.output,
        )

    def stop(self) -> None:
        """Stop the server (SIGTERM, open streams closed after 1 s)."""
        if self.process is not None and self.process.poll() is None:
            stop_process(self.process)


@pytest.fixture
def server(transactional_db) -> Iterator[Uvicorn]:
    """The app under uvicorn, as ``make serve`` runs it, on this test run's database."""
    uvicorn = Uvicorn()
    uvicorn.start()
    yield uvicorn
    uvicorn.stop()


@pytest.fixture
def worker(transactional_db) -> Iterator[subprocess.Popen]:
    """A Celery worker process (prefork) on this test run's database and Redis."""
    with worker_processes() as workers:
        yield workers.start("web")


@pytest.fixture
def browser(monkeypatch) -> Iterator[Any]:
    """Headless Debian Chromium under Playwright; the test fails if it is not installed."""
    if not CHROMIUM.exists():
        pytest.fail(
            f"{CHROMIUM} is missing: install Debian's chromium "
            "(apt-get update -qq && apt-get install -y -qq chromium); .ci/run does it in CI"
        )
    # Playwright's sync API runs an event loop in this thread; the ORM calls stay sync.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()
            # The connections the test body opened while Playwright's loop ran.
            connections.close_all()


# Reports each refusal of the Content-Security-Policy on the console, where the fixture
# below sees it.
REPORT_REFUSALS = (
    "document.addEventListener('securitypolicyviolation', e => console.error("
    "'Content Security Policy refused ' + e.violatedDirective + ' ' + e.blockedURI))"
)


@pytest.fixture
def open_page(server, browser) -> Iterator[Callable[..., Any]]:
    """Open a page of ``server`` in a fresh browser context, logged in as ``user`` if given;
    ``before`` is called with the page before it loads (to listen to its console, say).

    A test whose pages threw an error they did not catch, or had something refused by
    their Content-Security-Policy, errors at teardown naming it.
    """
    failures: list[str] = []

    def open_(
        path: str = "/",
        *,
        user: Any = None,
        viewport: tuple[int, int] = (1360, 900),
        before: Callable[[Any], None] | None = None,
    ):
        context = browser.new_context(viewport={"width": viewport[0], "height": viewport[1]})
        context.set_default_timeout(15_000)
        if user is not None:
            client = Client()
            client.force_login(user)
            cookie = client.cookies[settings.SESSION_COOKIE_NAME].value
            context.add_cookies(
                [{"name": settings.SESSION_COOKIE_NAME, "value": cookie, "url": server.url}]
            )
        page = context.new_page()

        def refused(message: Any) -> None:
            if message.text.startswith("Content Security Policy refused"):
                failures.append(f"{path}: {message.text}")

        page.on("pageerror", lambda error: failures.append(f"{path}: {error}"))
        page.on("console", refused)
        page.add_init_script(REPORT_REFUSALS)
        if before is not None:
            before(page)
        page.goto(server.url + path)
        return page

    yield open_
    assert failures == [], "the pages raised errors or broke their policy"


def drawn_width(image: Any) -> int:
    """Wait for the ``<img>`` behind the locator ``image`` to load and return its natural
    width (0 if it failed to load). The wait runs as a function in the page: the pages'
    Content-Security-Policy refuses ``eval``, which ``page.wait_for_function`` with a
    string would use while it polls."""
    return image.evaluate(
        """img => img.complete ? img.naturalWidth : new Promise(resolve => {
          img.addEventListener("load", () => resolve(img.naturalWidth), {once: true});
          img.addEventListener("error", () => resolve(0), {once: true});
        })"""
    )
