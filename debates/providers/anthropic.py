"""The Anthropic messages wire format (provider ``claude``).

``POST {base}/messages`` with ``x-api-key`` and ``anthropic-version: 2023-06-01``; the
system prompt is a top-level field and ``max_tokens`` is required. Anthropic accepts a
temperature from 0 to 1, so a configured value above 1 is sent as 1. The system
prompt, which holds what every turn of a debate shares (``debates.engine.prompts``), is
marked for Anthropic's prompt cache; the answer's usage says how many input tokens were
read from the cache and how many written to it.
"""

from __future__ import annotations

from typing import Any

from debates.providers.base import ModelRequest, ProviderConfig, TerminalProviderError
from debates.providers.openai_compat import as_count, load_json_object
from debates.providers.transport import HttpReply, ParsedAnswer, WireRequest

ANTHROPIC_VERSION = "2023-06-01"
_STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}


def build_request(config: ProviderConfig, request: ModelRequest) -> WireRequest:
    """Return the messages-API request for ``request`` under ``config``."""
    body: dict[str, Any] = {
        "model": config.effective_model,
        "system": [
            {"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [{"role": "user", "content": request.user}],
        "max_tokens": config.max_tokens,
        "temperature": min(1.0, max(0.0, config.temperature)),
    }
    headers = {
        "Accept": "application/json",
        "x-api-key": config.api_key,
        "anthropic-version": ANTHROPIC_VERSION,
    }
    return WireRequest(url=f"{config.effective_base_url}/messages", headers=headers, body=body)


def parse_reply(reply: HttpReply) -> ParsedAnswer:
    """Return the joined text blocks, token usage and request id of a messages reply."""
    data = load_json_object(reply.body)
    if data.get("type") == "error":
        raise TerminalProviderError("answer is an error object", code="malformed_response")
    blocks = data.get("content")
    if not isinstance(blocks, list):
        raise TerminalProviderError("answer has no content blocks", code="malformed_response")
    text = "".join(
        block["text"]
        for block in blocks
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )
    stop = str(data.get("stop_reason") or "")
    if not text.strip():
        raise TerminalProviderError(
            f"answer has no text (stop_reason={stop or 'none'})", code="malformed_response"
        )
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    prompt_tokens = sum(
        as_count(usage.get(name))
        for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    return ParsedAnswer(
        text=text,
        prompt_tokens=prompt_tokens,
        completion_tokens=as_count(usage.get("output_tokens")),
        request_id=str(data.get("id") or reply.headers.get("request-id") or ""),
        finish_reason=_STOP_REASONS.get(stop, stop),
        cached_input_tokens=as_count(usage.get("cache_read_input_tokens")),
        cache_write_tokens=as_count(usage.get("cache_creation_input_tokens")),
    )
