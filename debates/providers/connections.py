"""The HTTP client of model calls: one per process, every socket operation bounded by the
deadline of the call using it.

``transport`` runs each attempt of a call inside ``deadline_scope(deadline)``; a connect,
TLS handshake, write or read then waits at most until that deadline, so a server that
hangs, or trickles bytes fast enough to satisfy a per-read timeout, is still cut at it.
Each connection is first checked by the outbound URL policy (``arena.outbound``).
"""

from __future__ import annotations

import contextlib
import os
import ssl
import threading
import time
from collections.abc import Iterable, Iterator
from contextvars import ContextVar
from typing import Any

import httpcore
import httpx

from arena.outbound import guarded_transport

# The deadline of the call this thread is making, as a ``time.monotonic()`` instant.
_call_deadline: ContextVar[float | None] = ContextVar("model_call_deadline", default=None)


@contextlib.contextmanager
def deadline_scope(deadline: float) -> Iterator[None]:
    """Bound every socket operation in the ``with`` block by ``deadline``, a
    ``time.monotonic()`` instant."""
    token = _call_deadline.set(deadline)
    try:
        yield
    finally:
        _call_deadline.reset(token)


def _until_deadline(timeout: float | None, expired: type[Exception]) -> float | None:
    """Return ``timeout`` cut to the time left before the current call's deadline."""
    deadline = _call_deadline.get()
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the call deadline has passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    """A connection whose every operation ends by the deadline of the call using it."""

    def __init__(self, stream: httpcore.NetworkStream) -> None:
        self._stream = stream

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _until_deadline(timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _until_deadline(timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.NetworkStream:
        timeout = _until_deadline(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's socket backend, with every connection bounded by the call's deadline."""

    def __init__(self, backend: httpcore.NetworkBackend) -> None:
        self._backend = backend

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        timeout = _until_deadline(timeout, httpcore.ConnectTimeout)
        stream = self._backend.connect_tcp(host, port, timeout, local_address, socket_options)
        return _DeadlineStream(stream)

    def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.NetworkStream:
        timeout = _until_deadline(timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._backend.connect_unix_socket(path, timeout, socket_options))

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def _new_client() -> httpx.Client:
    # Each connection is checked by the outbound policy, then each of its operations
    # bounded by the deadline of the call using it.
    transport = guarded_transport(wrap=_DeadlineBackend)
    return httpx.Client(transport=transport, follow_redirects=False)


class _ProcessClient:
    """The HTTP client of this process, shared by its threads and kept for its life.

    Its connections stay open between calls (keep-alive), so a call pays no TCP or TLS
    handshake to a provider called in the last few seconds. A forked child makes its
    own: connections are never shared across processes.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = 0
        self._client: httpx.Client | None = None

    def get(self) -> httpx.Client:
        with self._lock:
            if self._client is None or self._pid != os.getpid():
                self._client = _new_client()
                self._pid = os.getpid()
            return self._client


_process_client = _ProcessClient()


def process_client() -> httpx.Client:
    """Return this process's HTTP client, made on first use."""
    return _process_client.get()
