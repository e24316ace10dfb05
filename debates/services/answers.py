"""The durable model-call cache: answers kept in PostgreSQL under a fingerprint of the call.

A model's answer is decided by its provider, base URL, model name, the temperature it is
sent (none where its capabilities say the model fixes or refuses one), the reasoning
effort it is asked for (its capabilities' control, for the call's kind), the output cap
it is sent (its maximum output tokens plus, where its reasoning counts inside the cap,
the reasoning allowance of that effort), output mode (whether the server decodes under
the contract's schema), and the system and user text it is sent; the fingerprint is the
SHA-256 of exactly these (``call_fingerprint``), so an AI model whose capabilities
change is not answered by what it was sent before. One prompt asked for several
independent answers (a backtest's budget-matched baseline) has the answer's number in its
fingerprint too, so each answer is kept apart and none is a debate turn's. A debate's
``cache`` mode says what its calls do with it (``debates.models.CacheMode``): ``use``
answers a call made before from the cache, with no model call, no slot of the cap, zero
latency and zero tokens billed; ``refresh`` always calls and keeps the new answer;
``off`` neither reads nor writes. Only answers are kept: a failed call is never cached.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from decimal import Decimal

from django.db import IntegrityError, transaction
from django.utils import timezone

from arena.queries import one_or_none
from debates.models import ModelAnswer
from debates.providers.base import ModelRequest, ModelResponse, ProviderConfig
from debates.providers.capabilities import reasoning_fields


def call_fingerprint(config: ProviderConfig, request: ModelRequest) -> str:
    """Return the hex SHA-256 of everything that decides a call's answer."""
    caps = config.effective_capabilities
    decisive = {
        "provider": config.provider,
        "base_url": config.effective_base_url,
        "model": config.effective_model,
        "temperature": config.temperature if caps.sends_temperature() else None,
        "reasoning": reasoning_fields(caps.reasoning_param, caps.effort_for(request.kind)),
        "max_tokens": caps.output_cap(config.max_tokens, request.kind),
        "output_mode": config.output_mode,
        "system": request.system,
        "user": request.user,
        # only an independent answer of a baseline is numbered; other calls keep theirs
        **({"sample": request.sample} if request.sample else {}),
    }
    encoded = json.dumps(decisive, sort_keys=True, ensure_ascii=False).encode()
    return hashlib.sha256(encoded).hexdigest()


@dataclass(frozen=True)
class KeptAnswer:
    """An answer from the cache: the response, and what the call it repeats took."""

    response: ModelResponse
    tokens: int
    cost_usd: Decimal


def answer_cached(*, fingerprint: str, config: ProviderConfig) -> KeptAnswer | None:
    """Return the stored answer to the call ``fingerprint``, or None.

    Its response is marked ``cached``: no latency, no tokens, no attempt; the tokens
    (prompt plus completion) and cost the original call billed come beside it.
    """
    stored = one_or_none(
        ModelAnswer.objects.values_list(
            "text", "request_id", "finish_reason", "prompt_tokens", "completion_tokens", "cost_usd"
        ),
        fingerprint=fingerprint,
    )
    if stored is None:
        return None
    text, request_id, finish_reason, prompt_tokens, completion_tokens, cost_usd = stored
    response = ModelResponse(
        text=text,
        prompt_tokens=0,
        completion_tokens=0,
        latency_ms=0,
        request_id=request_id,
        provider=config.provider,
        model=config.effective_model,
        attempts=0,
        simulated=config.provider == "simulated",
        finish_reason=finish_reason,
        cached=True,
    )
    return KeptAnswer(response, prompt_tokens + completion_tokens, cost_usd)


def answer_store(
    *, fingerprint: str, response: ModelResponse, cost_usd: Decimal, replace: bool
) -> None:
    """Keep ``response``, which cost ``cost_usd``, as the answer to the call ``fingerprint``.

    ``replace`` (the ``refresh`` mode) overwrites a stored answer; otherwise the first
    answer stored stays (two copies of one call racing store one of them).
    """
    values = {
        "provider": response.provider,
        "model_name": response.model[:100],
        "text": response.text,
        "request_id": response.request_id[:120],
        "finish_reason": response.finish_reason[:40],
        "prompt_tokens": response.prompt_tokens,
        "completion_tokens": response.completion_tokens,
        "cost_usd": cost_usd,
    }
    stored = ModelAnswer.objects.filter(fingerprint=fingerprint)
    if replace and stored.update(**values, updated_at=timezone.now()):
        return
    try:
        with transaction.atomic():
            ModelAnswer.objects.create(fingerprint=fingerprint, **values)
    except IntegrityError:
        # A concurrent copy of the same call stored its answer first.
        if replace:
            stored.update(**values, updated_at=timezone.now())
