"""A fake coin-pool endpoint: a real HTTP server on 127.0.0.1 answering ``GET /pool``.

Set ``status``, ``body`` (any JSON value, or ``bytes`` sent as they are) and ``delay_s``
before a request; every request path is recorded in ``requests``. With ``location`` set,
``/pool`` answers ``302 Found`` to that URL (other paths answer the body).
"""

from __future__ import annotations

import json
import time
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.fakes.background import BackgroundServer


class FakePool(BackgroundServer):
    """A coin pool that answers what the test sets; use as a context manager."""

    label = "pool"

    def __init__(self, body: Any = None, *, status: int = 200, delay_s: float = 0.0) -> None:
        super().__init__()
        self.body: Any = [] if body is None else body
        self.status = status
        self.delay_s = delay_s
        self.location: str | None = None
        self.requests: list[str] = []

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        """Return the request handler bound to this pool."""
        return _handler_class(self)

    @property
    def url(self) -> str:
        """Return the pool URL, e.g. ``http://127.0.0.1:54321/pool``."""
        return f"{super().url}/pool"


def _handler_class(pool: FakePool) -> type[BaseHTTPRequestHandler]:
    class _Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            pool.requests.append(self.path)
            if pool.delay_s:
                time.sleep(pool.delay_s)
            data = pool.body if isinstance(pool.body, bytes) else json.dumps(pool.body).encode()
            redirect = pool.location is not None and self.path == "/pool"
            try:
                self.send_response(302 if redirect else pool.status)
                if redirect:
                    self.send_header("Location", pool.location)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

        def log_message(self, format: str, *args: Any) -> None:
            return

    return _Handler
