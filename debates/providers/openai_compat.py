"""The OpenAI chat-completions wire format (DeepSeek, Qwen, OpenAI, Gemini, Grok, Kimi, ...).

``POST {base}/chat/completions`` with ``Authorization: Bearer <key>``, a system and a
user message and the output cap (``Capabilities.output_cap``: room for the answer and,
where reasoning counts inside it, for the reasoning). What else a request carries comes
from the model's capabilities (``capabilities.Capabilities``, from the catalogue or the
AI model's override), never from its name: a temperature only where the model takes one,
the output cap under the parameter it takes (OpenAI: ``max_completion_tokens``), the
reasoning effort of the call's kind through the model's own control, and structured
output (``response_format``) under the contract's schema for a model whose output mode
is ``json_schema``. The usage fields that carry cached and reasoning tokens differ by
provider and are read where the capabilities say.
"""

from __future__ import annotations

from typing import Any

from debates.engine.contract import JSON_SCHEMA, decision_schema
from debates.engine.judge import scores_schema, summary_schema
from debates.providers import wire
from debates.providers.base import ModelRequest, ProviderConfig, TerminalProviderError
from debates.providers.capabilities import Capabilities, reasoning_fields, usage_count

_FINISH_REASONS = {"stop": "stop", "length": "length", "max_tokens": "length"}


def build_request(config: ProviderConfig, request: ModelRequest, cap: int) -> wire.WireRequest:
    """Return the chat-completions request for ``request`` under ``config`` and output
    cap ``cap``."""
    caps = config.effective_capabilities
    body: dict[str, Any] = {
        "model": config.effective_model,
        "messages": [
            {"role": "system", "content": request.system},
            {"role": "user", "content": request.user},
        ],
        caps.output_cap_param: cap,
    }
    if caps.sends_temperature():
        body["temperature"] = min(config.temperature, caps.temperature_max)
    body.update(reasoning_fields(caps.reasoning_param, caps.effort_for(request.kind)))
    if config.output_mode == JSON_SCHEMA:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": f"{request.kind}_answer",
                "strict": True,
                "schema": caps.schema_sent(answer_schema(request)),
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


def parse_reply(reply: wire.HttpReply, caps: Capabilities | None = None) -> wire.ParsedAnswer:
    """Return the answer text, token usage and request id of a chat-completions reply,
    the usage read where ``caps`` say (the generic OpenAI fields without them).

    ``completion_tokens`` counts every output token billed, reasoning included: where
    the provider reports reasoning apart (xAI), the two are added.
    """
    caps = caps or Capabilities(
        cached_usage="prompt_tokens_details.cached_tokens",
        reasoning_usage="completion_tokens_details.reasoning_tokens",
    )
    data = wire.load_json_object(reply.body)
    choice = _first_choice(data)
    finish = _FINISH_REASONS.get(str(choice.get("finish_reason") or ""), "")
    finish = finish or str(choice.get("finish_reason") or "")
    usage = wire.usage_of(data)
    reasoning = usage_count(usage, caps.reasoning_usage)
    completion = wire.as_count(usage.get("completion_tokens"))
    if not caps.reasoning_in_completion:
        completion += reasoning
    text = _message_text(choice.get("message"))
    if finish == "length" and not (isinstance(text, str) and text.strip()):
        raise wire.OutputCapExhausted(reasoning_tokens=reasoning)
    text = wire.answer_text(text, f"answer has no content (finish_reason={finish or 'none'})")
    prompt_tokens = wire.as_count(usage.get("prompt_tokens"))
    return wire.ParsedAnswer(
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=completion,
        request_id=wire.request_id(data, reply, "x-request-id"),
        finish_reason=finish,
        cached_input_tokens=min(prompt_tokens, usage_count(usage, caps.cached_usage)),
        reasoning_tokens=reasoning,
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
