"""One HTTP model call with a hard deadline, retries and safe logging.

Each attempt runs under ``asyncio.timeout`` set to the time left before the call's
deadline, so a server that hangs, or trickles bytes fast enough to satisfy httpx's
per-read timeout, is still cut at the deadline. httpx's own timeouts are derived from
the same remaining time as a second line of defence. Retries: 429 (honouring
``Retry-After``), 5xx and transport errors, at most ``RetryPolicy.max_attempts``
attempts with jittered exponential backoff, never waiting past the deadline. Logs
carry provider, model, status, attempt and latency; never the key, never the prompt.
Synchronous callers run their calls on one event loop per process (``run_sync``), whose
HTTP client keeps its connections alive between calls.
"""

from __future__ import annotations

import asyncio
import email.utils
import functools
import json
import logging
import os
import random
import ssl
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import httpx

from debates.providers.base import (
    DeadlineExceeded,
    ProviderError,
    RetryableProviderError,
    TerminalProviderError,
    redact,
)

logger = logging.getLogger("debates.providers")

# A chat answer is a few kB; anything past this is not an answer we can use.
MAX_BODY_BYTES = 4 * 1024 * 1024
_ERROR_EXCERPT_CHARS = 300

_STATUS_CODES = {
    400: "bad_request",
    401: "auth_failed",
    403: "forbidden",
    404: "not_found",
    413: "bad_request",
    422: "bad_request",
}


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry; the defaults are the production policy."""

    max_attempts: int = 3
    backoff_base_s: float = 0.5
    backoff_max_s: float = 8.0
    connect_timeout_s: float = 10.0

    def backoff_s(self, failed_attempt: int) -> float:
        """Return the pause after ``failed_attempt`` (1-based): exponential, jittered 50-100 %."""
        ceiling = min(self.backoff_max_s, self.backoff_base_s * 2 ** (failed_attempt - 1))
        return ceiling * random.uniform(0.5, 1.0)


DEFAULT_POLICY = RetryPolicy()


@dataclass(frozen=True)
class WireRequest:
    """The HTTP request one wire format builds for one call."""

    url: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class HttpReply:
    """A complete HTTP answer: status, headers (lower-case names) and body bytes."""

    status: int
    headers: httpx.Headers
    body: bytes


@dataclass(frozen=True)
class ParsedAnswer:
    """What a wire format extracts from a successful reply."""

    text: str
    prompt_tokens: int
    completion_tokens: int
    request_id: str
    finish_reason: str


Parser = Callable[[HttpReply], ParsedAnswer]


@dataclass(frozen=True)
class CallResult:
    """A parsed answer with the figures of the call that produced it."""

    answer: ParsedAnswer
    attempts: int
    latency_ms: int


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    # Building a context loads the CA bundle (tens of ms); every client shares one.
    return httpx.create_ssl_context()


# One HTTP client per event loop, kept for the loop's life: its connections stay open
# between calls (keep-alive), so a call pays no TCP or TLS handshake to a provider it
# called in the last few seconds.
_clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
    weakref.WeakKeyDictionary()
)


def _client() -> httpx.AsyncClient:
    """Return the HTTP client of the running event loop."""
    loop = asyncio.get_running_loop()
    client = _clients.get(loop)
    if client is None:
        client = httpx.AsyncClient(verify=_ssl_context(), follow_redirects=False)
        _clients[loop] = client
    return client


class _CallLoop:
    """The event loop on which synchronous code (a Celery task) makes its model calls.

    It runs in a daemon thread of its own, one per process (a forked child starts its
    own), so every call of the process shares one HTTP client and its open connections.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = 0
        self._loop: asyncio.AbstractEventLoop | None = None

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                self._loop = asyncio.new_event_loop()
                self._pid = os.getpid()
                threading.Thread(
                    target=self._loop.run_forever, name="model-calls", daemon=True
                ).start()
            return self._loop


_call_loop = _CallLoop()


def run_sync(coro_factory: Callable[[], Any]) -> Any:
    """Run the coroutine made by ``coro_factory`` on the process's call loop; wait for it.

    Works from any thread, one running an event loop of its own included. If the wait
    is interrupted (a Celery soft time limit), the call is cancelled before re-raising.
    """
    future = asyncio.run_coroutine_threadsafe(coro_factory(), _call_loop.get())
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


async def post_with_retries(
    *,
    provider: str,
    model: str,
    wire: WireRequest,
    parse: Parser,
    deadline: float,
    secrets: tuple[str, ...],
    policy: RetryPolicy = DEFAULT_POLICY,
) -> CallResult:
    """POST ``wire`` until it yields a parsed answer, a terminal error or the deadline.

    ``deadline`` is a ``time.monotonic()`` instant. Raise ``TerminalProviderError`` at
    once on 4xx and malformed answers, the last ``RetryableProviderError`` when attempts
    or time run out, ``DeadlineExceeded`` when the deadline cuts an attempt.
    """
    started = time.monotonic()
    attempt = 0
    client = _client()
    while True:
        attempt += 1
        attempt_started = time.monotonic()
        status: int | None = None
        retry_after: float | None = None
        try:
            reply = await _send(client, wire, deadline, policy, provider, secrets, attempt)
            status = reply.status
            retry_after = _retry_after_s(reply.headers)
            _raise_for_status(reply, provider, secrets, attempt)
            answer = _parse(parse, reply, provider, secrets, attempt)
        except ProviderError as error:
            error.attempts = attempt
            _log_attempt(provider, model, status, attempt, attempt_started, error)
            if not error.retryable or isinstance(error, DeadlineExceeded):
                raise
            if attempt >= policy.max_attempts:
                raise
            wait = retry_after if retry_after is not None else policy.backoff_s(attempt)
            if time.monotonic() + wait >= deadline:
                logger.warning(
                    "model call giving up provider=%s model=%s attempt=%d: "
                    "next try in %.2fs would pass the deadline",
                    provider,
                    model,
                    attempt,
                    wait,
                )
                raise
            await asyncio.sleep(wait)
            continue
        _log_attempt(provider, model, status, attempt, attempt_started, None)
        latency_ms = round((time.monotonic() - started) * 1000)
        return CallResult(answer=answer, attempts=attempt, latency_ms=latency_ms)


async def _send(
    client: httpx.AsyncClient,
    wire: WireRequest,
    deadline: float,
    policy: RetryPolicy,
    provider: str,
    secrets: tuple[str, ...],
    attempt: int,
) -> HttpReply:
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DeadlineExceeded(f"{provider}: no time left before the call deadline")
    timeout = httpx.Timeout(
        remaining,
        connect=min(policy.connect_timeout_s, remaining),
    )
    try:
        async with asyncio.timeout(remaining):
            async with client.stream(
                "POST", wire.url, headers=wire.headers, json=wire.body, timeout=timeout
            ) as response:
                body = bytearray()
                async for chunk in response.aiter_bytes():
                    body += chunk
                    if len(body) > MAX_BODY_BYTES:
                        raise TerminalProviderError(
                            f"{provider} sent more than {MAX_BODY_BYTES} bytes",
                            code="malformed_response",
                            status=response.status_code,
                        )
                return HttpReply(response.status_code, response.headers, bytes(body))
    except TimeoutError:
        raise DeadlineExceeded(f"{provider}: no complete answer within the call deadline") from None
    except httpx.TimeoutException as exc:
        if time.monotonic() >= deadline - 0.05:
            raise DeadlineExceeded(
                f"{provider}: no complete answer within the call deadline"
            ) from None
        raise RetryableProviderError(
            f"{provider}: {type(exc).__name__}: {exc}", code="transport_error", secrets=secrets
        ) from None
    except httpx.UnsupportedProtocol as exc:
        raise TerminalProviderError(
            f"{provider}: bad base URL: {exc}", code="config_error", secrets=secrets
        ) from None
    except httpx.DecodingError as exc:
        raise TerminalProviderError(
            f"{provider}: undecodable body: {exc}", code="malformed_response", secrets=secrets
        ) from None
    except httpx.TransportError as exc:
        raise RetryableProviderError(
            f"{provider}: {type(exc).__name__}: {str(exc) or 'connection lost'}",
            code="transport_error",
            secrets=secrets,
        ) from None
    except httpx.InvalidURL as exc:
        raise TerminalProviderError(
            f"{provider}: bad base URL: {exc}", code="config_error", secrets=secrets
        ) from None


def _raise_for_status(
    reply: HttpReply, provider: str, secrets: tuple[str, ...], attempt: int
) -> None:
    status = reply.status
    if 200 <= status < 300:
        return
    detail = _error_detail(reply.body)
    message = f"{provider} returned HTTP {status}" + (f": {detail}" if detail else "")
    if status == 429:
        raise RetryableProviderError(
            message, code="rate_limited", status=status, attempts=attempt, secrets=secrets
        )
    if status >= 500:
        raise RetryableProviderError(
            message, code="server_error", status=status, attempts=attempt, secrets=secrets
        )
    raise TerminalProviderError(
        message,
        code=_STATUS_CODES.get(status, "client_error" if status >= 400 else "unexpected_status"),
        status=status,
        attempts=attempt,
        secrets=secrets,
    )


def _parse(
    parse: Parser, reply: HttpReply, provider: str, secrets: tuple[str, ...], attempt: int
) -> ParsedAnswer:
    try:
        return parse(reply)
    except TerminalProviderError as error:
        raise TerminalProviderError(
            f"{provider}: {error.message}",
            code=error.code,
            status=reply.status,
            attempts=attempt,
            secrets=secrets,
        ) from None


def _error_detail(body: bytes) -> str:
    """Return the provider's own error message, or the start of the body, shortened."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    if isinstance(data, dict):
        error = data.get("error", data)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
        elif isinstance(error, str):
            text = error
    text = " ".join(text.split())
    if len(text) > _ERROR_EXCERPT_CHARS:
        text = text[:_ERROR_EXCERPT_CHARS] + "..."
    return text


def _retry_after_s(headers: httpx.Headers) -> float | None:
    """Return the pause a server asked for (``retry-after-ms`` or ``Retry-After``), if any."""
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - time.time())


def _log_attempt(
    provider: str,
    model: str,
    status: int | None,
    attempt: int,
    attempt_started: float,
    error: ProviderError | None,
) -> None:
    latency_ms = round((time.monotonic() - attempt_started) * 1000)
    if error is None:
        logger.info(
            "model call ok provider=%s model=%s status=%s attempt=%d latency_ms=%d",
            provider,
            model,
            status,
            attempt,
            latency_ms,
        )
        return
    logger.warning(
        "model call failed provider=%s model=%s status=%s attempt=%d latency_ms=%d "
        "code=%s retryable=%s: %s",
        provider,
        model,
        status,
        attempt,
        latency_ms,
        error.code,
        error.retryable,
        redact(error.message),
    )
