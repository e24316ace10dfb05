"""Asking a participant's model: configuration, the cache, the shared call cap, the deadline."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db import close_old_connections, connection

from arena import metrics
from debates.claims import StepDeferred, StepHandedOver, claim_ttl_s
from debates.models import CacheMode
from debates.providers.base import ModelRequest, ModelResponse, ProviderConfig, ProviderError
from debates.providers.catalog import capabilities_for
from debates.providers.registry import complete
from debates.providers.slots import (
    ANONYMOUS,
    SlotUnavailable,
    TooManyWaiting,
    hold,
    model_slots,
)
from debates.services.answers import answer_cached, answer_store, call_fingerprint
from debates.services.budgets import (
    JUDGE,
    BudgetExhausted,
    CallLimits,
    CallScope,
    Reservation,
    budget_reserve,
    budget_settle,
    call_limits,
    limited_config,
    most_cost,
    most_tokens,
)
from debates.services.costs import response_cost

# The error of a call not made because its model can no longer be called.
MODEL_UNAVAILABLE = "model_unavailable"

# How long a step waits for a free model slot before handing its worker back (the task
# is retried shortly after): long enough to catch the next free slot, short enough that
# a busy worker is never parked for long. A step whose owner's calls are still (they
# hang) while as many others of its wait as it may make goes back to the queue, and comes
# again one to two times this later (at random, so that a user's many such steps do not
# all come back together).
SLOT_WAIT_S = 5.0


class NotCached(StepHandedOver):
    """The call's answer is not in the model-call cache and only the cache may answer
    (``call_model(cached_only=True)``): the step asking it has done nothing, and gives
    its claim back for the task sent for it."""


@dataclass(frozen=True)
class CallOutcome:
    """A finished model call: its response and what it cost, or the error that ended it.

    ``kept``: for an answer from the model-call cache, the tokens (prompt plus
    completion) and cost of the call it repeats."""

    response: ModelResponse | None
    error: ProviderError | None
    cost_usd: Decimal = Decimal(0)
    kept: tuple[int, Decimal] | None = None

    def usage_fields(self) -> dict[str, Any]:
        """Return the ``Usage`` columns of the stored turn, ballot or judge call."""
        response = self.response
        if response is None:
            return {"attempts": self.error.attempts if self.error else 0}
        tokens, cost = self.kept or (
            response.prompt_tokens + response.completion_tokens,
            self.cost_usd,
        )
        return {
            "prompt_tokens": response.prompt_tokens,
            "completion_tokens": response.completion_tokens,
            "reasoning_tokens": response.reasoning_tokens,
            "cached_input_tokens": response.cached_input_tokens,
            "cache_write_tokens": response.cache_write_tokens,
            "cost_usd": self.cost_usd,
            "latency_ms": response.latency_ms,
            "request_id": response.request_id[:120],
            "attempts": response.attempts,
            "cached": response.cached,
            "answer_tokens": tokens,
            "answer_cost_usd": cost,
            "tokens_estimated": response.simulated,
        }


# The columns of a stored AI model that make its provider configuration.
CONFIG_COLUMNS = (
    "provider",
    "model_name",
    "api_key",
    "base_url",
    "temperature",
    "max_tokens",
    "timeout_seconds",
    "output_mode",
    "capabilities",
)


def provider_config(columns: Mapping[str, Any]) -> ProviderConfig:
    """Return the provider configuration of a stored AI model from its ``CONFIG_COLUMNS``:
    its capabilities are the catalogue's with the model's own override laid over."""
    caps = capabilities_for(columns["provider"], columns["model_name"])
    return ProviderConfig(
        provider=columns["provider"],
        model_name=columns["model_name"],
        api_key=columns["api_key"],
        base_url=columns["base_url"],
        temperature=columns["temperature"],
        max_tokens=columns["max_tokens"],
        timeout_s=float(columns["timeout_seconds"]),
        output_mode=columns["output_mode"],
        capabilities=caps.merged(columns.get("capabilities")),
    )


@metrics.batch()  # the call's counts and its cache lookup's: one round trip
def call_model(
    config: ProviderConfig,
    request: ModelRequest,
    *,
    still_wanted: Callable[[], bool],
    owner_id: int | None = None,
    cache: str = CacheMode.OFF,
    scope: CallScope | None = None,
    limits: CallLimits | None = None,
    refusal: str | None = None,
    cached_only: bool = False,
) -> CallOutcome | None:
    """Send ``request`` to the model of ``config`` within the shared cap of calls in flight,
    as a call of user ``owner_id``, who gets a fair share of the cap while others wait
    (``slots``).

    A call of a debate's ``scope`` goes out at its seat's temperature, under its role's
    output cap, and only within the daily token caps of the debate's owner and schedule
    (``debates.services.budgets``): past one, the debate fails with ``budget_exhausted``
    and ``None`` comes back, no call made. A step that has read them with its context
    gives them as ``limits``; otherwise they are read here.

    With ``cache`` ``use``, a call made before is answered from the model-call cache
    (``debates.services.answers``) without a model call or a slot; with ``use`` or
    ``refresh``, a model's answer is kept there. With ``cached_only`` a call the cache
    does not answer raises ``NotCached`` before anything is taken or written (no slot,
    no budget): the step asking it stores nothing and can be sent to a worker as it is.

    Raise ``StepDeferred`` when no slot frees up within SLOT_WAIT_S, or sooner when the
    owner's calls are still and its waiting room full (``TooManyWaiting``). The caller
    read what it asks right before; a step that had to wait for its slot asks
    ``still_wanted()`` again before the call goes out, and False (the debate was
    cancelled meanwhile, say) abandons the call and gives ``None`` back. The slot
    outlives a worker killed during the call as long as the step's claim does
    (``claim_ttl_s()``), whatever the call's deadline.

    A call whose model can no longer be called (``refusal`` says why: ``model_refusal``,
    the model disabled or its key removed since the debate started) is not made, nor
    answered from the cache: its outcome is that error (``model_unavailable``), stored
    as any failed call's.
    """
    if refusal:
        return CallOutcome(response=None, error=ProviderError(refusal, code=MODEL_UNAVAILABLE))
    if limits is None and scope is not None:
        limits = call_limits(scope)
    if limits is not None:
        config = limited_config(config, limits)
    fingerprint = call_fingerprint(config, request) if cache != CacheMode.OFF else ""
    hit = answer_cached(fingerprint=fingerprint, config=config) if cache == CacheMode.USE else None
    if cache == CacheMode.USE:
        metrics.record(metrics.CACHE_LOOKUPS.inc(result="miss" if hit is None else "hit"))
    if hit is not None:
        return CallOutcome(response=hit.response, error=None, kept=(hit.tokens, hit.cost_usd))
    if cached_only:
        raise NotCached(request.kind)
    outcome = _in_a_slot(config, request, still_wanted, owner_id, limits, scope)
    if outcome is not None and outcome.response is not None and fingerprint:
        answer_store(
            fingerprint=fingerprint,
            response=outcome.response,
            cost_usd=outcome.cost_usd,
            replace=cache == CacheMode.REFRESH,
        )
    return outcome


def _in_a_slot(
    config: ProviderConfig,
    request: ModelRequest,
    still_wanted: Callable[[], bool],
    owner_id: int | None,
    limits: CallLimits | None,
    scope: CallScope | None,
) -> CallOutcome | None:
    """Make the call in a model slot of user ``owner_id`` within the token budgets of
    ``limits`` (see ``call_model``)."""
    owner = ANONYMOUS if owner_id is None else f"user:{owner_id}"
    try:
        _connection_given_back()
        with hold(model_slots(), SLOT_WAIT_S, lease_s=claim_ttl_s(), owner=owner) as lease:
            if lease.waited and not still_wanted():
                return None
            reservation = _reserve(limits, config, request)
            _connection_given_back()
            began = time.perf_counter()
            try:
                response = complete(config, request)
            except ProviderError as exc:
                budget_settle(reservation, 0)
                _counted(config, time.perf_counter() - began, CallOutcome(None, exc))
                return CallOutcome(response=None, error=exc)
            seconds = time.perf_counter() - began
            cost = response_cost(response)
            budget_settle(reservation, response.prompt_tokens + response.completion_tokens, cost)
    except TooManyWaiting as exc:
        raise _owner_full() from exc
    except SlotUnavailable as exc:
        raise StepDeferred("no free model slot", retry_after=0.05) from exc
    except BudgetExhausted as exc:
        if scope is not None:  # always: only a debate's call has a budget
            _fail_for_budget(scope, request, str(exc))
        return None
    outcome = CallOutcome(response=response, error=None, cost_usd=cost)
    _counted(config, seconds, outcome)
    return outcome


def _counted(config: ProviderConfig, seconds: float, outcome: CallOutcome) -> None:
    """Count a call that went out in the metrics (``arena.metrics``): its outcome, its
    time, its tokens and cost, or its error's code."""
    labels = {"provider": config.provider, "model": config.effective_model}
    response, error = outcome.response, outcome.error
    updates = [
        metrics.MODEL_CALLS.inc(**labels, outcome="error" if response is None else "ok"),
        metrics.MODEL_CALL_SECONDS.observe(seconds, **labels),
    ]
    if response is not None:
        updates += [
            metrics.MODEL_TOKENS.inc(response.prompt_tokens, **labels, kind="prompt"),
            metrics.MODEL_TOKENS.inc(response.completion_tokens, **labels, kind="completion"),
            metrics.MODEL_SPEND_USD.inc(float(outcome.cost_usd), **labels),
        ]
    elif error is not None:
        updates.append(metrics.ERRORS.inc(source="model_call", code=error.code))
    metrics.record(*updates)


def _reserve(
    limits: CallLimits | None, config: ProviderConfig, request: ModelRequest
) -> Reservation | None:
    """Reserve the most the call can use and cost under the daily caps of ``limits``."""
    if limits is None or not limits.caps:
        return None
    return budget_reserve(limits, most_tokens(config, request), most_cost(config, request))


def _owner_full() -> StepDeferred:
    """Return the deferral of a step whose owner's calls are still and fill its slots and
    its waiting room: back to the queue for SLOT_WAIT_S to twice that."""
    again_s = SLOT_WAIT_S * (1 + random.random())
    return StepDeferred("the owner's calls fill its model slots", retry_after=again_s)


def _connection_given_back() -> None:
    """Let the thread's database connection go before a wait that may last minutes (a
    slot, the model), as Django does between two requests: back to the pool, or closed,
    unless connections are kept (``CONN_MAX_AGE``). So a call worker's threads hold
    connections only while they read or write. Inside a transaction nothing is done.
    """
    if not connection.in_atomic_block:
        close_old_connections()


def _fail_for_budget(scope: CallScope, request: ModelRequest, message: str) -> None:
    from debates.services.lifecycle import debate_fail

    step = "vote" if request.kind == "vote" else f"round {request.round} turn"
    if scope.role == JUDGE:
        step = "judge"
    debate_fail(debate_id=scope.debate_id, step=step, code="budget_exhausted", message=message)
