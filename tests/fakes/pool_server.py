"""A fake coin-pool endpoint: a real HTTP server on 127.0.0.1 answering ``GET /pool``.

Set ``status``, ``body`` (any JSON value, or ``bytes`` sent as they are) and ``delay_s``
before a request; every request path is recorded in ``requests``. With ``location`` set,
``/pool`` answers ``302 Found`` to that URL (other paths answer the body).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class FakePool:
    """A coin pool that answers what the test sets; use as a context manager."""

    def __init__(self, body: Any = None, *, status: int = 200, delay_s: float = 0.0) -> None:
        self.body: Any = [] if body is None else body
        self.status = status
        self.delay_s = delay_s
        self.location: str | None = None
        self.requests: list[str] = []
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> FakePool:
        """Start serving on 127.0.0.1 and a free port, in a background thread."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_class(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and free the port."""
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FakePool:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Return the pool URL, e.g. ``http://127.0.0.1:54321/pool``."""
        if self._server is None:
            raise RuntimeError("the fake pool is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/pool"


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
