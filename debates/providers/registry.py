"""The one entry point for model calls: ``complete(config, request, deadline=...)``.

It checks the configuration, picks the wire format from ``PROVIDERS``, and runs the
call under one overall deadline: ``config.timeout_s`` from now, or the caller's
``deadline`` (a ``time.monotonic()`` instant) when that comes first. Retries happen
inside that deadline (see ``transport``). The concurrency cap is the caller's business
(``slots.model_slots()``): take a slot, then call ``complete``.
"""

from __future__ import annotations

import dataclasses
import time

from debates.providers import anthropic, openai_compat, wire
from debates.providers.base import (
    DeadlineExceeded,
    ModelRequest,
    ModelResponse,
    ProviderConfig,
    TerminalProviderError,
)
from debates.providers.catalog import (
    PROVIDERS,
    WIRE_ANTHROPIC,
    WIRE_OPENAI,
    WIRE_SIMULATED,
    ProviderInfo,
)
from debates.providers.simulated import complete_simulated
from debates.providers.transport import DEFAULT_POLICY, RetryPolicy, post_with_retries
from debates.providers.wire import OutputCapExhausted

__all__ = ["PROVIDERS", "ProviderInfo", "call_deadline", "complete"]

# Keyless servers are normal behind openai_compatible (a local Ollama or vLLM).
_KEY_OPTIONAL = frozenset({"openai_compatible", "simulated"})

RETRY_CAP_FACTOR = 4
"""How much larger the output cap of the retry of an answer the cap cut empty is."""

_WIRES = {
    WIRE_OPENAI: (openai_compat.build_request, openai_compat.parse_reply),
    WIRE_ANTHROPIC: (anthropic.build_request, anthropic.parse_reply),
}


def reads_snapshot(provider: str) -> bool:
    """Say whether a model of ``provider`` reads a call's structured market snapshot
    (``ModelRequest.snapshot``); the others read the prompt's text alone."""
    info = PROVIDERS.get(provider)
    return info is not None and info.wire == WIRE_SIMULATED


def call_deadline(config: ProviderConfig, deadline: float | None = None) -> float:
    """Return the monotonic instant a call under ``config`` must end by."""
    own = time.monotonic() + config.timeout_s
    return own if deadline is None else min(own, deadline)


def complete(
    config: ProviderConfig,
    request: ModelRequest,
    *,
    deadline: float | None = None,
    policy: RetryPolicy = DEFAULT_POLICY,
) -> ModelResponse:
    """Call the model of ``config`` with ``request`` and return its answer.

    Raise ``TerminalProviderError`` for bad configuration, 4xx answers and malformed
    output, ``RetryableProviderError`` when 429/5xx/transport errors outlast the
    attempts or the time, ``DeadlineExceeded`` when the deadline cuts the call.
    """
    end = call_deadline(config, deadline)
    info = _check(config)
    if info.wire == WIRE_SIMULATED:
        return complete_simulated(config, request, deadline=end)
    return _complete_http(config, request, info, end, policy)


def _complete_http(
    config: ProviderConfig,
    request: ModelRequest,
    info: ProviderInfo,
    deadline: float,
    policy: RetryPolicy,
) -> ModelResponse:
    """Make the call under the output cap its capabilities give it (room for the
    reasoning where it counts inside the cap); an empty answer cut at that cap (the model
    reasoned it all away) is asked once more under a larger cap, then fails naming both
    figures."""
    caps = config.effective_capabilities
    cap = caps.output_cap(config.max_tokens, request.kind)
    try:
        return _post(config, request, info, deadline, policy, cap)
    except OutputCapExhausted as first:
        larger = retry_cap(cap, caps.max_output)
        if larger is None:
            raise _exhausted(config, first, cap) from None
        try:
            response = _post(config, request, info, deadline, policy, larger)
        except OutputCapExhausted as second:
            second.attempts += first.attempts
            raise _exhausted(config, second, larger) from None
        return dataclasses.replace(response, attempts=response.attempts + first.attempts)


def retry_cap(cap: int, max_output: int | None) -> int | None:
    """Return the output cap of the one retry of an answer the cap cut empty:
    ``RETRY_CAP_FACTOR`` times larger, within the model's own maximum; None when the
    cap is already at that maximum."""
    larger = cap * RETRY_CAP_FACTOR
    if max_output is not None:
        larger = min(larger, max_output)
    return larger if larger > cap else None


def _exhausted(
    config: ProviderConfig, error: OutputCapExhausted, cap: int
) -> TerminalProviderError:
    return TerminalProviderError(
        f"{config.provider}: the answer is empty: {config.effective_model} spent the "
        f"{cap}-token output cap on reasoning ({error.reasoning_tokens} reasoning tokens)",
        code=wire.OUTPUT_CAP_EXHAUSTED,
        status=error.status,
        attempts=error.attempts,
    )


def _post(
    config: ProviderConfig,
    request: ModelRequest,
    info: ProviderInfo,
    deadline: float,
    policy: RetryPolicy,
    cap: int,
) -> ModelResponse:
    if deadline <= time.monotonic():
        raise DeadlineExceeded(f"{config.provider}: the call deadline has already passed")
    build, parse = _WIRES[info.wire]
    model = config.effective_model
    caps = config.effective_capabilities
    result = post_with_retries(
        provider=config.provider,
        model=model,
        wire=build(config, request, cap),
        parse=lambda reply: parse(reply, caps),
        deadline=deadline,
        secrets=(config.api_key,),
        policy=policy,
    )
    # Every field of the parsed answer is a field of the response, under the same name.
    return ModelResponse(
        **dataclasses.asdict(result.answer),
        latency_ms=result.latency_ms,
        provider=config.provider,
        model=model,
        attempts=result.attempts,
    )


def _check(config: ProviderConfig) -> ProviderInfo:
    info = PROVIDERS.get(config.provider)
    if info is None:
        raise TerminalProviderError(f"unknown provider {config.provider!r}", code="config_error")
    if info.wire == WIRE_SIMULATED:
        return info
    if not config.effective_base_url:
        raise TerminalProviderError(
            f"{config.provider}: a base URL is required", code="config_error"
        )
    if not config.effective_model:
        raise TerminalProviderError(
            f"{config.provider}: a model name is required", code="config_error"
        )
    if not config.api_key and config.provider not in _KEY_OPTIONAL:
        raise TerminalProviderError(
            f"{config.provider}: no API key configured", code="config_error"
        )
    if config.timeout_s <= 0:
        raise TerminalProviderError(
            f"{config.provider}: timeout_s must be positive", code="config_error"
        )
    return info
