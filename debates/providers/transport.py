"""One HTTP model call with a hard deadline, retries and safe logging.

A call has one deadline. Every socket operation of an attempt (connect, TLS handshake,
each write, each read) waits at most until that deadline (``connections``), so a
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

import email.utils
import json
import logging
import random
import time
from dataclasses import dataclass

import httpx

from arena.outbound import OutboundRefused
from debates.providers.base import (
    DeadlineExceeded,
    ProviderError,
    RetryableProviderError,
    TerminalProviderError,
    redact,
)
from debates.providers.connections import deadline_scope, process_client
from debates.providers.wire import (
    HttpReply,
    OutputCapExhausted,
    ParsedAnswer,
    Parser,
    WireRequest,
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
class CallResult:
    """A parsed answer with the figures of the call that produced it."""

    answer: ParsedAnswer
    attempts: int
    latency_ms: int


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
    client = process_client()
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
            wait = _retry_wait(error, retry_after, policy, deadline, provider, model)
            if wait is None:
                raise
            time.sleep(wait)
            continue
        _log_attempt(provider, model, status, attempt, attempt_started, None)
        latency_ms = round((time.monotonic() - started) * 1000)
        return CallResult(answer=answer, attempts=attempt, latency_ms=latency_ms)


def _retry_wait(
    error: ProviderError,
    retry_after: float | None,
    policy: RetryPolicy,
    deadline: float,
    provider: str,
    model: str,
) -> float | None:
    """Return the pause before another attempt, after ``error`` ended attempt number
    ``error.attempts``; None when there is to be none: the error is terminal or the
    deadline's, the attempts are used up, or the pause (the server's ``Retry-After``,
    else the backoff) would pass the deadline."""
    attempt = error.attempts
    if not error.retryable or isinstance(error, DeadlineExceeded):
        return None
    if attempt >= policy.max_attempts:
        return None
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
        return None
    return wait


def _send(
    client: httpx.Client,
    wire: WireRequest,
    deadline: float,
    policy: RetryPolicy,
    provider: str,
    secrets: tuple[str, ...],
    attempt: int,
) -> HttpReply:
    """POST ``wire`` once and return the whole reply, whatever its status; raise a
    ``ProviderError`` when no reply came."""
    remaining = deadline - time.monotonic()
    if remaining <= 0:
        raise DeadlineExceeded(f"{provider}: no time left before the call deadline")
    timeout = httpx.Timeout(
        remaining,
        connect=min(policy.connect_timeout_s, remaining),
    )
    try:
        with (
            deadline_scope(deadline),
            client.stream(
                "POST", wire.url, headers=wire.headers, json=wire.body, timeout=timeout
            ) as response,
        ):
            return HttpReply(response.status_code, response.headers, _read_body(response, provider))
    except httpx.TimeoutException as exc:
        if time.monotonic() >= deadline - 0.05:
            raise DeadlineExceeded(
                f"{provider}: no complete answer within the call deadline"
            ) from None
        raise RetryableProviderError(
            f"{provider}: {type(exc).__name__}: {exc}", code="transport_error", secrets=secrets
        ) from None
    except _SEND_FAILURES as exc:
        raise _send_failure(exc, provider, secrets) from None


def _read_body(response: httpx.Response, provider: str) -> bytes:
    """Return the reply's body, refusing one too large to be an answer."""
    body = bytearray()
    for chunk in response.iter_bytes():
        body += chunk
        if len(body) > MAX_BODY_BYTES:
            raise TerminalProviderError(
                f"{provider} sent more than {MAX_BODY_BYTES} bytes",
                code="malformed_response",
                status=response.status_code,
            )
    return bytes(body)


# What a send that got no reply means, first match first: the error class, its code, and
# what the message says after the provider's name. ``UnsupportedProtocol`` is a
# ``TransportError``, so it comes before it.
_SEND_FAILURE_RULES: tuple[tuple[type[Exception], type[ProviderError], str, str], ...] = (
    (httpx.UnsupportedProtocol, TerminalProviderError, "config_error", "bad base URL"),
    (httpx.InvalidURL, TerminalProviderError, "config_error", "bad base URL"),
    (httpx.DecodingError, TerminalProviderError, "malformed_response", "undecodable body"),
    (OutboundRefused, TerminalProviderError, "address_refused", "base URL refused"),
    (httpx.TransportError, RetryableProviderError, "transport_error", ""),
)
_SEND_FAILURES = tuple(rule[0] for rule in _SEND_FAILURE_RULES)


def _send_failure(exc: Exception, provider: str, secrets: tuple[str, ...]) -> ProviderError:
    """Return the provider error for ``exc``, one of ``_SEND_FAILURES``."""
    _, error, code, what = next(rule for rule in _SEND_FAILURE_RULES if isinstance(exc, rule[0]))
    # A transport error says which one it was; a lost connection may carry no message.
    detail = f"{what}: {exc}" if what else f"{type(exc).__name__}: {str(exc) or 'connection lost'}"
    return error(f"{provider}: {detail}", code=code, secrets=secrets)


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
    except OutputCapExhausted as error:
        # Kept whole: the caller may retry it under a larger cap.
        error.message = f"{provider}: {error.message}"
        error.args = (error.message,)
        error.status, error.attempts = reply.status, attempt
        raise
    except TerminalProviderError as error:
        raise TerminalProviderError(
            f"{provider}: {error.message}",
            code=error.code,
            status=reply.status,
            attempts=attempt,
            secrets=secrets,
        ) from None


def _error_detail(body: bytes) -> str:
    """Return the provider's own error message (also from Gemini's list-wrapped error
    body), or the start of the body, shortened."""
    text = body.decode("utf-8", errors="replace").strip()
    try:
        data = json.loads(text)
    except ValueError:
        data = None
    # Gemini's endpoints wrap the error object in a list: [{"error": {...}}].
    if isinstance(data, list) and data and isinstance(data[0], dict):
        data = data[0]
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
