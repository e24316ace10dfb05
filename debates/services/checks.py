"""Connection checks: a few cheap real calls that say, in one line, what is wrong with
an AI model or a trader's account, or that it works.

An AI model's check sends one vote-shaped request of a few tokens with exactly the
parameters a debate would send it (its catalogue capabilities with its own override:
temperature, reasoning effort, output cap parameter, structured output): a wrong key,
an unknown or retired model, or a parameter the model refuses is named by the provider's
answer. The answer may be cut at the small cap, or spent on reasoning: the model took
the request, which is what is checked. The call takes no slot of the cap and is not
billed to a debate.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from arena.queries import owned_by, owned_or_404
from debates.models import AIModel
from debates.providers.base import ModelRequest, ProviderError, RetryableProviderError
from debates.providers.registry import complete
from debates.providers.wire import OUTPUT_CAP_EXHAUSTED
from debates.services.calls import CONFIG_COLUMNS, provider_config
from debates.services.modes import model_refusal

CHECK_OUTPUT_TOKENS = 16
CHECK_TIMEOUT_S = 30.0


@dataclass(frozen=True)
class VenueCheck:
    """The outcome of a connection check: whether it passed, and one line saying why."""

    ok: bool
    message: str


def ai_model_check(*, ai_model_id: int, owner: Any | None = None) -> VenueCheck:
    """Check that AI model ``ai_model_id`` answers a vote-shaped request of a few
    tokens with the parameters a debate sends it."""
    model = owned_or_404(owned_by(AIModel.objects.all(), owner), ai_model_id, "AI model")
    refusal = model_refusal(model, ai_model_id)
    if refusal is not None:
        return VenueCheck(False, refusal)
    config = provider_config({column: getattr(model, column) for column in CONFIG_COLUMNS})
    config = dataclasses.replace(
        config,
        max_tokens=CHECK_OUTPUT_TOKENS,
        timeout_s=min(config.timeout_s, CHECK_TIMEOUT_S),
    )
    request = ModelRequest(
        system="You are checked for a connection.", user="Answer with the word OK.", kind="vote"
    )
    name = f"{model.name} ({config.provider} {config.effective_model})"
    try:
        response = complete(config, request)
    except RetryableProviderError as exc:
        return VenueCheck(False, f"{name} could not be reached: {exc.message}")
    except ProviderError as exc:
        if exc.code == OUTPUT_CAP_EXHAUSTED:
            return VenueCheck(True, f"{name} takes the request (it reasoned past the small cap).")
        return VenueCheck(False, f"{name} refused the request: {exc.message}")
    return VenueCheck(True, f"{name} answers ({response.latency_ms} ms).")
