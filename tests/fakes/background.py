"""The base of the fakes that are real HTTP servers on 127.0.0.1, served from a thread."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Self


class BackgroundServer:
    """An HTTP server on 127.0.0.1 and a free port, served by a background thread; start
    and stop it, or use it as a context manager.

    A subclass answers the requests (``handler_class``) and names itself in the error of
    a server not started (``label``).
    """

    label = "server"

    def __init__(self) -> None:
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    def handler_class(self) -> type[BaseHTTPRequestHandler]:
        """Return the request handler bound to this fake."""
        raise NotImplementedError

    def start(self) -> Self:
        """Start serving on 127.0.0.1 and a free port, in a background thread."""
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self.handler_class())
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

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    @property
    def url(self) -> str:
        """Return the base URL, e.g. ``http://127.0.0.1:54321``."""
        if self._server is None:
            raise RuntimeError(f"the fake {self.label} is not started")
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"
