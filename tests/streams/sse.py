"""A Server-Sent-Events client for tests: real HTTP (httpx), events parsed as they arrive.

Every client runs on one background event loop, so a test can hold dozens of streams
open while its own thread checks the database. A test waits on a client with
``wait(predicate)``, which fails after a timeout instead of hanging.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

_loop: asyncio.AbstractEventLoop | None = None
_loop_lock = threading.Lock()


def _background_loop() -> asyncio.AbstractEventLoop:
    global _loop
    with _loop_lock:
        if _loop is None:
            _loop = asyncio.new_event_loop()
            threading.Thread(target=_loop.run_forever, name="sse-clients", daemon=True).start()
        return _loop


@dataclass(frozen=True)
class SSEEvent:
    """One event as a browser's EventSource sees it."""

    type: str
    id: str | None
    data: str

    @property
    def json(self) -> Any:
        """Return the data, decoded from JSON."""
        return json.loads(self.data)

    @property
    def number(self) -> int:
        """Return the event number of the id (``debate-7:12`` -> 12)."""
        assert self.id is not None, f"{self.type} event without an id"
        return int(self.id.rsplit(":", 1)[1])


class SSEClient:
    """An open ``GET`` of an event stream, read in the background until ``close()``; the
    connection must be made within ``connect_timeout`` seconds."""

    def __init__(
        self,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        params: dict[str, str] | None = None,
        connect_timeout: float = 10.0,
    ) -> None:
        self.url = url
        self.connect_timeout = connect_timeout
        self.status_code: int | None = None
        self.headers: httpx.Headers = httpx.Headers()
        self.body = b""
        self.events: list[SSEEvent] = []
        self.finished = False
        self.error: BaseException | None = None
        self._condition = threading.Condition()
        self._future = asyncio.run_coroutine_threadsafe(
            self._read(url, headers or {}, params or {}), _background_loop()
        )

    async def _read(self, url: str, headers: dict[str, str], params: dict[str, str]) -> None:
        try:
            timeout = httpx.Timeout(self.connect_timeout, read=None)
            async with (
                httpx.AsyncClient(timeout=timeout) as client,
                client.stream("GET", url, headers=headers, params=params) as response,
            ):
                with self._condition:
                    self.status_code = response.status_code
                    self.headers = response.headers
                    self._condition.notify_all()
                if response.status_code != 200:
                    body = await response.aread()
                    with self._condition:
                        self.body = body
                    return
                await self._parse(response)
        except asyncio.CancelledError:
            pass
        except Exception as exc:  # recorded for the test to see, not raised in the loop
            self.error = exc
        finally:
            with self._condition:
                self.finished = True
                self._condition.notify_all()

    async def _parse(self, response: httpx.Response) -> None:
        event_type, event_id, data = "message", None, []
        async for line in response.aiter_lines():
            if line == "":
                if data or event_type != "message":
                    event = SSEEvent(event_type, event_id, "\n".join(data))
                    with self._condition:
                        self.events.append(event)
                        self._condition.notify_all()
                event_type, event_id, data = "message", None, []
                continue
            if line.startswith(":"):
                continue
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "event":
                event_type = value
            elif name == "id":
                event_id = value
            elif name == "data":
                data.append(value)

    def wait(
        self, predicate: Callable[[SSEClient], bool], timeout: float = 20.0, what: str = ""
    ) -> None:
        """Wait until ``predicate(self)`` holds; fail the test after ``timeout`` seconds."""
        with self._condition:
            if not self._condition.wait_for(lambda: predicate(self) or self.finished, timeout):
                raise AssertionError(f"{what or 'condition'} not met within {timeout}s: {self}")
            if not predicate(self):
                raise AssertionError(f"stream ended before {what or 'condition'}: {self}")

    def wait_status(self, timeout: float = 20.0) -> int:
        """Wait for the response status and return it."""
        self.wait(lambda c: c.status_code is not None, timeout, "a response")
        assert self.status_code is not None
        return self.status_code

    def wait_for_type(self, event_type: str, count: int = 1, timeout: float = 20.0) -> None:
        """Wait until ``count`` events of ``event_type`` arrived."""
        self.wait(
            lambda c: sum(e.type == event_type for e in c.received()) >= count,
            timeout,
            f"{count} {event_type} event(s)",
        )

    def received(self) -> list[SSEEvent]:
        """Return the events received so far, keep-alives left out."""
        with self._condition:
            return [event for event in self.events if event.type != "keep-alive"]

    def close(self) -> None:
        """Disconnect, and wait until the reader stopped."""
        self._future.cancel()
        with self._condition:
            self._condition.wait_for(lambda: self.finished, 10.0)

    def __enter__(self) -> SSEClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        kinds = [event.type for event in self.events[-12:]]
        return f"<SSEClient {self.url} status={self.status_code} last={kinds} error={self.error!r}>"
