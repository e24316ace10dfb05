"""The OpenAI chat-completions wire format (DeepSeek, Qwen, OpenAI, Gemini, Grok, Kimi, ...).

``POST {base}/chat/completions`` with ``Authorization: Bearer <key>``, a system and a
user message, ``temperature`` and the output cap; the input tokens the provider's
prompt cache served are read from the answer's usage (``cached_input_tokens``). OpenAI
itself takes ``max_completion_tokens`` (``max_tokens`` is refused by its reasoning
models) and its reasoning models (o1/o3/o4, gpt-5, gpt-5-mini, gpt-5-nano, gpt-5*-pro)
accept only the default temperature, so none is sent to them; gpt-5.1 and later reason
only on request and keep ``temperature``. A model whose output mode is ``json_schema`` is
asked for structured output (``response_format``), under the contract's schema.
"""

from __future__ import annotations

import re
from typing import Any

from debates.engine.contract import JSON_SCHEMA, decision_schema
from debates.engine.judge import scores_schema, summary_schema
from debates.providers import wire
from debates.providers.base import ModelRequest, ProviderConfig, TerminalProviderError

_OPENAI_FIXED_TEMPERATURE = re.compile(
    r"^(o[134](-.*)?|gpt-5(-mini|-nano|-pro)?(-\d{4}-\d{2}-\d{2})?|gpt-5.*-pro.*)$"
)
_FINISH_REASONS = {"stop": "stop", "length": "length", "max_tokens": "length"}


def build_request(config: ProviderConfig, request: ModelRequest) -> wire.WireRequest:
    """Return the chat-completions request for ``request`` under ``config``."""
    model = config.effective_model
    body: dict[str, Any] = {
        "model": model,
        "messages": [
            {"role": "system", "content": request.system},
            {"role": "user", "content": request.user},
        ],
    }
    if config.provider == "openai":
        body["max_completion_tokens"] = config.max_tokens
        if not _OPENAI_FIXED_TEMPERATURE.match(model.lower()):
            body["temperature"] = config.temperature
    else:
        body["max_tokens"] = config.max_tokens
        body["temperature"] = config.temperature
    if config.output_mode == JSON_SCHEMA:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": f"{request.kind}_answer",
                "strict": True,
                "schema": answer_schema(request),
            },
        }
    headers = {"Accept": "application/json"}
    if config.api_key:
        headers["Authorization"] = f"Bearer {config.api_key}"
    return wire.WireRequest(
        url=f"{config.effective_base_url}/chat/completions", headers=headers, body=body
    )


def answer_schema(request: ModelRequest) -> dict[str, Any]:
    """Return the JSON schema the answer to ``request`` is decoded under."""
    if request.kind == "judge_summary":
        return summary_schema()
    if request.kind == "judge_scores":
        return scores_schema(request.labels)
    return decision_schema(request.symbols)


def parse_reply(reply: wire.HttpReply) -> wire.ParsedAnswer:
    """Return the answer text, token usage and request id of a chat-completions reply."""
    data = wire.load_json_object(reply.body)
    choice = _first_choice(data)
    finish = str(choice.get("finish_reason") or "")
    text = wire.answer_text(
        _message_text(choice.get("message")),
        f"answer has no content (finish_reason={finish or 'none'})",
    )
    usage = wire.usage_of(data)
    prompt_tokens = wire.as_count(usage.get("prompt_tokens"))
    return wire.ParsedAnswer(
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=wire.as_count(usage.get("completion_tokens")),
        request_id=wire.request_id(data, reply, "x-request-id"),
        finish_reason=_FINISH_REASONS.get(finish, finish),
        cached_input_tokens=min(prompt_tokens, cached_input_tokens(usage)),
    )


def _first_choice(data: dict[str, Any]) -> dict[str, Any]:
    """Return the reply's first choice, or raise: an answer without one has no text."""
    choices = data.get("choices")
    if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
        raise TerminalProviderError("answer has no choices", code=wire.MALFORMED)
    return choices[0]


def _message_text(message: object) -> object:
    """Return a choice's message content, its parts joined when it comes in parts."""
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    return content


def cached_input_tokens(usage: dict[str, Any]) -> int:
    """Return the input tokens a chat-completions answer says its prompt cache served.

    DeepSeek reports them as ``prompt_cache_hit_tokens``; OpenAI, and the servers that
    follow it (Qwen, Gemini, Grok, Kimi), as ``prompt_tokens_details.cached_tokens``.
    """
    details = usage.get("prompt_tokens_details")
    detailed = wire.as_count(details.get("cached_tokens")) if isinstance(details, dict) else 0
    return max(detailed, wire.as_count(usage.get("prompt_cache_hit_tokens")))
