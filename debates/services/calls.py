"""Asking a participant's model: configuration, the shared call cap, and the deadline."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from debates.models import AIModel
from debates.providers.base import ModelRequest, ModelResponse, ProviderConfig, ProviderError
from debates.providers.registry import complete
from debates.providers.slots import lease_for, model_slots

# How long a step waits for a free model slot before handing its worker back (the task
# is retried shortly after): long enough to catch the next free slot, short enough that
# a busy worker is never parked for long.
SLOT_WAIT_S = 5.0


class StepDeferred(Exception):
    """The step cannot run now (no free model slot, or another copy holds it)."""

    def __init__(self, reason: str, retry_after: float) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


@dataclass(frozen=True)
class CallOutcome:
    """A finished model call: its response, or the error that ended it."""

    response: ModelResponse | None
    error: ProviderError | None


# The columns of a stored AI model that ``provider_config`` reads.
CONFIG_COLUMNS = (
    "provider",
    "model_name",
    "api_key",
    "base_url",
    "temperature",
    "max_tokens",
    "timeout_seconds",
)


def provider_config(model: AIModel) -> ProviderConfig:
    """Return the provider configuration of a stored AI model (``CONFIG_COLUMNS``)."""
    return ProviderConfig(
        provider=model.provider,
        model_name=model.model_name,
        api_key=model.api_key,
        base_url=model.base_url,
        temperature=model.temperature,
        max_tokens=model.max_tokens,
        timeout_s=float(model.timeout_seconds),
    )


def call_model(model: AIModel, request: Callable[[], ModelRequest | None]) -> CallOutcome | None:
    """Call ``model`` within the shared cap of model calls in flight.

    Raise ``StepDeferred`` when no slot frees up within SLOT_WAIT_S. ``request`` runs
    once the slot is held, right before the call goes out, and makes what to send from
    what it reads then; returning None abandons the call (the debate was cancelled
    meanwhile, say) and gives ``None`` back.
    """
    config = provider_config(model)
    slots = model_slots()
    lease = slots.acquire(SLOT_WAIT_S, lease_s=lease_for(config.timeout_s))
    if lease is None:
        raise StepDeferred("no free model slot", retry_after=0.05)
    try:
        made = request()
        if made is None:
            return None
        try:
            return CallOutcome(response=complete(config, made), error=None)
        except ProviderError as exc:
            return CallOutcome(response=None, error=exc)
    finally:
        slots.release(lease)
