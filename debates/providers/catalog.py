"""The provider table: id -> display name, default base URL, default model, wire format.

Default models were chosen in 2026 as each provider's current general-purpose model
and are only defaults: every AI model configuration can name its own model and base
URL. DeepSeek retired ``deepseek-chat`` / ``deepseek-reasoner`` in favour of
``deepseek-v4-flash`` / ``deepseek-v4-pro``; ``qwen-plus`` is Alibaba's rolling alias;
OpenAI's ``gpt-5-mini`` is a reasoning model (see ``openai_compat`` for what that
changes in the request). ``openai_compatible`` has no default base URL or model: the
configuration must give both (vLLM, Ollama, LM Studio, ...).

Structured output under a JSON schema (the contract's ``json_schema`` mode) is offered
by OpenAI, Gemini's compatible endpoint and xAI, and by the servers behind
``openai_compatible`` that take ``response_format`` (llama.cpp, vLLM, Ollama, LM Studio);
DeepSeek and Kimi have only a JSON mode without a schema, Anthropic none of this form.
"""

from __future__ import annotations

from datetime import date
from typing import NamedTuple

WIRE_OPENAI = "openai"
WIRE_ANTHROPIC = "anthropic"
WIRE_SIMULATED = "simulated"


# The last day of training data of the models whose makers publish it (the month they
# name, taken to its last day), as stated when this table was written; a model of no
# entry starts with no cutoff, which its owner can set. Simulated models have none.
TRAINING_CUTOFFS: dict[str, date] = {
    "gpt-5-mini": date(2024, 5, 31),
    "gemini-2.5-flash": date(2025, 1, 31),
}


def default_training_cutoff(provider: str, model_name: str) -> date | None:
    """Return the catalogue's training cutoff of a model (its provider's default model
    when ``model_name`` is empty), None when unknown or simulated."""
    if provider == "simulated" or provider not in PROVIDERS:
        return None
    return TRAINING_CUTOFFS.get(model_name or PROVIDERS[provider].default_model)


class ProviderInfo(NamedTuple):
    """One row of the provider table.

    ``json_schema``: the provider can decode an answer under a JSON schema (structured
    outputs), so a model of it may use the contract's ``json_schema`` output mode.
    """

    display_name: str
    default_base_url: str
    default_model: str
    wire: str
    json_schema: bool = False


PROVIDERS: dict[str, ProviderInfo] = {
    "deepseek": ProviderInfo(
        "DeepSeek", "https://api.deepseek.com", "deepseek-v4-flash", WIRE_OPENAI
    ),
    "qwen": ProviderInfo(
        "Qwen (Alibaba Cloud)",
        "https://dashscope.aliyuncs.com/compatible-mode/v1",
        "qwen-plus",
        WIRE_OPENAI,
    ),
    "openai": ProviderInfo(
        "OpenAI", "https://api.openai.com/v1", "gpt-5-mini", WIRE_OPENAI, json_schema=True
    ),
    "claude": ProviderInfo(
        "Claude (Anthropic)", "https://api.anthropic.com/v1", "claude-sonnet-4-6", WIRE_ANTHROPIC
    ),
    "gemini": ProviderInfo(
        "Gemini (Google)",
        "https://generativelanguage.googleapis.com/v1beta/openai",
        "gemini-2.5-flash",
        WIRE_OPENAI,
        json_schema=True,
    ),
    "grok": ProviderInfo(
        "Grok (xAI)", "https://api.x.ai/v1", "grok-4", WIRE_OPENAI, json_schema=True
    ),
    "kimi": ProviderInfo(
        "Kimi (Moonshot AI)", "https://api.moonshot.ai/v1", "kimi-k2-0905-preview", WIRE_OPENAI
    ),
    "openai_compatible": ProviderInfo("OpenAI-compatible", "", "", WIRE_OPENAI, json_schema=True),
    "simulated": ProviderInfo(
        "Simulated (built in)", "", "simulated-v1", WIRE_SIMULATED, json_schema=True
    ),
}
