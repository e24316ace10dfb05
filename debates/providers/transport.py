"""One HTTP model call with a hard deadline, retries and safe logging.

A call has one deadline. Every socket operation of an attempt (connect, TLS handshake,
each write, each read) waits at most until that deadline (``_DeadlineBackend``), so a
server that hangs, or trickles bytes fast enough to satisfy a per-read timeout, is still
cut at the deadline. httpx's own timeouts are derived from the same remaining time as a
second line of defence. Retries: 429 (honouring ``Retry-After``), 5xx and transport
errors, at most ``RetryPolicy.max_attempts`` attempts with jittered exponential backoff,
never waiting past the deadline. Logs carry provider, model, status, attempt and
latency; never the key, never the prompt. Calls run in the caller's thread on one HTTP
client per process, which keeps its connections alive between calls. Providers are
reached directly: proxy settings in the environment are not used.

Every connection obeys the outbound URL policy (``arena.outbound``): a base URL that
resolves to an internal address, at save or at the call, is refused (``address_refused``,
not retried), and redirects are not followed. What a provider answered with an error
status never reaches a user: the error says the status and a short reason in our own
words, and the provider's own message goes to the log, secrets redacted.
"""

from __future__ import annotations

import contextlib
import email.utils
import json
import logging
import os
import random
import ssl
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

import httpcore
import httpx

from arena.outbound import OutboundRefused, guarded_transport
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
# What an error status means, in our words: a provider's own message is logged only.
_STATUS_REASONS = {
    400: "refused the request",
    401: "refused the API key",
    403: "refused access to the model",
    404: "does not know this model or URL",
    413: "refused the request as too large",
    422: "refused the request",
    429: "is rate limiting the calls",
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
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0


Parser = Callable[[HttpReply], ParsedAnswer]


@dataclass(frozen=True)
class CallResult:
    """A parsed answer with the figures of the call that produced it."""

    answer: ParsedAnswer
    attempts: int
    latency_ms: int


# The deadline of the call this thread is making, as a ``time.monotonic()`` instant.
_call_deadline: ContextVar[float | None] = ContextVar("model_call_deadline", default=None)


@contextlib.contextmanager
def _deadline(deadline: float) -> Iterator[None]:
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


def post_with_retries(
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
    client = _process_client.get()
    while True:
        attempt += 1
        attempt_started = time.monotonic()
        status: int | None = None
        retry_after: float | None = None
        try:
            reply = _send(client, wire, deadline, policy, provider, secrets, attempt)
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
            time.sleep(wait)
            continue
        _log_attempt(provider, model, status, attempt, attempt_started, None)
        latency_ms = round((time.monotonic() - started) * 1000)
        return CallResult(answer=answer, attempts=attempt, latency_ms=latency_ms)


def _send(
    client: httpx.Client,
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
        with (
            _deadline(deadline),
            client.stream(
                "POST", wire.url, headers=wire.headers, json=wire.body, timeout=timeout
            ) as response,
        ):
            body = bytearray()
            for chunk in response.iter_bytes():
                body += chunk
                if len(body) > MAX_BODY_BYTES:
                    raise TerminalProviderError(
                        f"{provider} sent more than {MAX_BODY_BYTES} bytes",
                        code="malformed_response",
                        status=response.status_code,
                    )
            return HttpReply(response.status_code, response.headers, bytes(body))
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
    except OutboundRefused as exc:
        raise TerminalProviderError(
            f"{provider}: base URL refused: {exc}", code="address_refused", secrets=secrets
        ) from None


def _raise_for_status(
    reply: HttpReply, provider: str, secrets: tuple[str, ...], attempt: int
) -> None:
    status = reply.status
    if 200 <= status < 300:
        return
    reason = _STATUS_REASONS.get(status) or (
        "failed on its side" if status >= 500 else "answered with an unexpected status"
    )
    message = f"{provider} returned HTTP {status}: the provider {reason}"
    if status == 429:
        error: ProviderError = RetryableProviderError(
            message, code="rate_limited", status=status, attempts=attempt, secrets=secrets
        )
    elif status >= 500:
        error = RetryableProviderError(
            message, code="server_error", status=status, attempts=attempt, secrets=secrets
        )
    else:
        code = _STATUS_CODES.get(status, "client_error" if status >= 400 else "unexpected_status")
        error = TerminalProviderError(
            message, code=code, status=status, attempts=attempt, secrets=secrets
        )
    # For the log only: what the provider said (the key and key-shaped text redacted).
    error.upstream = redact(_error_detail(reply.body), secrets)
    raise error


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
        "code=%s retryable=%s: %s%s",
        provider,
        model,
        status,
        attempt,
        latency_ms,
        error.code,
        error.retryable,
        redact(error.message),
        f" (the provider said: {error.upstream})" if error.upstream else "",
    )
