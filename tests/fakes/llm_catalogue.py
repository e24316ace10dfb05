"""What the fake model server takes from the model catalogue: each provider's usage
fields, and, in strict mode, the refusals the real providers answer.

A request's model is looked up in ``debates/providers/catalogue.toml`` (a model name
the catalogue does not list is placed by its prefix, ``deepseek-...``, ``kimi-...``,
``grok-...``, and takes its provider's defaults). Strict mode refuses, as the providers
do: a model the catalogue does not list or lists as retired (404), a temperature the
model fixes or refuses, an effort the model does not take, and structured output under
a JSON schema from a model without it (400).
"""

from __future__ import annotations

from datetime import date
from typing import Any

from debates.providers.capabilities import Capabilities
from debates.providers.catalog import CATALOGUE, RETIRED, ModelEntry

_PREFIXES = (("deepseek", "deepseek"), ("kimi", "kimi"), ("moonshot", "kimi"), ("grok", "grok"))
_GENERIC = Capabilities(
    cached_usage="prompt_tokens_details.cached_tokens",
    reasoning_usage="completion_tokens_details.reasoning_tokens",
)


def entry_of(model: str) -> ModelEntry | None:
    """Return the catalogue entry of ``model`` under any provider, else None."""
    for (_, name), entry in CATALOGUE.models.items():
        if name == model:
            return entry
    return None


def capabilities_of(model: str) -> Capabilities:
    """Return the capabilities the fake answers ``model`` by."""
    entry = entry_of(model)
    if entry is not None:
        return entry.capabilities
    for prefix, provider in _PREFIXES:
        if model.startswith(prefix):
            return CATALOGUE.defaults[provider]
    return _GENERIC


def _put(usage: dict[str, Any], path: str, value: int) -> None:
    *parents, leaf = path.split(".")
    for part in parents:
        usage = usage.setdefault(part, {})
    usage[leaf] = value


def openai_usage(
    model: str, *, prompt: int, completion: int, cached: int, reasoning: int
) -> dict[str, Any]:
    """Return a chat-completions usage object as ``model``'s provider writes it.

    ``completion`` counts every output token, reasoning included; a provider that
    reports reasoning apart (xAI) leaves it out of ``completion_tokens``.
    """
    caps = capabilities_of(model)
    reported = completion if caps.reasoning_in_completion else completion - reasoning
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": reported,
        "total_tokens": prompt + completion,
    }
    if cached and caps.cached_usage:
        _put(usage, caps.cached_usage, cached)
        if caps.cached_usage == "prompt_cache_hit_tokens":
            usage["prompt_cache_miss_tokens"] = prompt - cached
    if reasoning and caps.reasoning_usage:
        _put(usage, caps.reasoning_usage, reasoning)
    return usage


def refusal(wire: str, body: Any, today: date | None = None) -> tuple[int, str] | None:
    """Return the status and message a real provider answers ``body`` with, or None."""
    if not isinstance(body, dict):
        return (400, "request body is not a JSON object")
    model = str(body.get("model", ""))
    entry = entry_of(model)
    if entry is None or entry.status_on(today or date.today()) == RETIRED:
        return (404, f"The model `{model}` does not exist or you do not have access to it.")
    caps = entry.capabilities
    if "temperature" in body and caps.temperature == "fixed":
        return (400, f"invalid temperature: only {caps.fixed_temperature:g} is allowed")
    if "temperature" in body and caps.temperature == "absent":
        return (400, "Unsupported value: 'temperature' does not support this value")
    effort = body.get("reasoning_effort") or (body.get("output_config") or {}).get("effort")
    if effort is not None and effort not in caps.efforts:
        return (400, f"Invalid reasoning_effort: {effort}")
    format_ = body.get("response_format")
    if isinstance(format_, dict) and format_.get("type") == "json_schema" and not caps.json_schema:
        return (400, "response_format json_schema is not supported by this model")
    return None
