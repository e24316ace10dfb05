"""What the fake model server takes from the model catalogue: each provider's usage
fields, and the refusals the real providers answer.

A request's model is looked up in ``debates/providers/catalogue.toml`` (a model name
the catalogue does not list reports its usage in OpenAI's fields). The fake also serves
models of its own (``LOCAL_MODELS``), as a self-hosted OpenAI-compatible server
(llama.cpp, vLLM, Ollama) serves the models it has loaded: under the catalogue's
``openai_compatible`` defaults. ``refusal`` refuses, as the providers do: a model
neither the catalogue nor the fake serves, or one the catalogue lists as retired (404),
a temperature the model fixes or refuses, an effort the model does not take, and
structured output under a JSON schema from a model without it (400).
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import date
from typing import Any

from debates.providers.capabilities import Capabilities
from debates.providers.catalog import CATALOGUE, RETIRED, ModelEntry

LOCAL_MODELS = ("fake-model", "fake-judge")
"""The models the fake serves of its own, as a self-hosted server does: the tests' seats'
and judges' models (``tests.debates.factories.FakeLLMModelFactory``)."""
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
    return entry.capabilities if entry is not None else _GENERIC


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


def refusal(
    wire: str, body: Any, today: date | None = None, local_models: Collection[str] = LOCAL_MODELS
) -> tuple[int, str] | None:
    """Return the status and message a real provider, or a self-hosted server serving
    ``local_models``, answers ``body`` with, or None."""
    if not isinstance(body, dict):
        return (400, "request body is not a JSON object")
    model = str(body.get("model", ""))
    entry = entry_of(model)
    if wire == "openai" and model in local_models:
        caps = CATALOGUE.defaults["openai_compatible"]
    elif entry is None or entry.status_on(today or date.today()) == RETIRED:
        return (404, f"The model `{model}` does not exist or you do not have access to it.")
    else:
        caps = entry.capabilities
    if "temperature" in body and caps.temperature == "fixed":
        return (400, f"invalid temperature: only {caps.fixed_temperature:g} is allowed")
    if "temperature" in body and caps.temperature == "absent":
        return (400, "Unsupported value: 'temperature' does not support this value")
    effort = body.get("reasoning_effort") or (body.get("output_config") or {}).get("effort")
    if effort is not None and effort not in caps.efforts:
        return (400, f"Invalid reasoning_effort: {effort}")
    format_ = body.get("response_format")
    if isinstance(format_, dict) and format_.get("type") == "json_schema":
        return _schema_refusal(format_.get("json_schema") or {}, caps)
    return None


def _schema_refusal(json_schema: dict, caps: Capabilities) -> tuple[int, str] | None:
    """Return the refusal of a structured-output schema by a model without structured
    output, or holding a keyword its provider refuses (OpenAI's message), else None."""
    if not caps.json_schema:
        return (400, "response_format json_schema is not supported by this model")
    refused = set(caps.schema_refuses) & _keywords(json_schema.get("schema"))
    if refused:
        name = json_schema.get("name", "")
        return (
            400,
            f"Invalid schema for response_format '{name}': '{min(refused)}' is not permitted.",
        )
    return None


def _keywords(node: object, *, names: bool = False) -> set[str]:
    """Return the keywords used anywhere in a JSON schema (property names left out)."""
    if isinstance(node, list):
        return set().union(*(_keywords(item) for item in node))
    if not isinstance(node, dict):
        return set()
    found = set() if names else set(node)
    for key, value in node.items():
        found |= _keywords(value, names=key == "properties" and not names)
    return found
