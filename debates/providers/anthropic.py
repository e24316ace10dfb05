"""The Anthropic messages wire format (provider ``claude``).

``POST {base}/messages`` with ``x-api-key`` and ``anthropic-version: 2023-06-01``; the
system prompt is a top-level field and ``max_tokens`` is required (the output cap,
thinking included: ``Capabilities.output_cap``). A temperature is sent only to a model
that takes one, cut to its maximum (1 for Claude), and the reasoning effort of the
call's kind through ``output_config.effort`` where the model has that control
(``capabilities``). The system prompt, which holds what every turn of a debate shares
(``debates.engine.prompts``), is marked for Anthropic's prompt cache; the answer's usage
says how many input tokens were read from the cache and how many written to it.
"""

from __future__ import annotations

from typing import Any

from debates.providers import wire
from debates.providers.base import ModelRequest, ProviderConfig, TerminalProviderError
from debates.providers.capabilities import Capabilities, reasoning_fields

ANTHROPIC_VERSION = "2023-06-01"
_STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length"}
# ``input_tokens`` leaves out what was read from or written to the prompt cache; a call's
# prompt tokens count every input token.
_INPUT_TOKENS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")


def build_request(config: ProviderConfig, request: ModelRequest, cap: int) -> wire.WireRequest:
    """Return the messages-API request for ``request`` under ``config`` and output cap
    ``cap``."""
    caps = config.effective_capabilities
    body: dict[str, Any] = {
        "model": config.effective_model,
        "system": [
            {"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [{"role": "user", "content": request.user}],
        "max_tokens": cap,
    }
    if caps.sends_temperature():
        body["temperature"] = min(caps.temperature_max, max(0.0, config.temperature))
    body.update(reasoning_fields(caps.reasoning_param, caps.effort_for(request.kind)))
    headers = {
        "Accept": "application/json",
        "x-api-key": config.api_key,
        "anthropic-version": ANTHROPIC_VERSION,
    }
    return wire.WireRequest(url=f"{config.effective_base_url}/messages", headers=headers, body=body)


def parse_reply(reply: wire.HttpReply, caps: Capabilities | None = None) -> wire.ParsedAnswer:
    """Return the joined text blocks, token usage and request id of a messages reply.

    Anthropic counts thinking in ``output_tokens`` and reports no figure of its own for
    it, so an empty answer cut at the cap reports 0 reasoning tokens.
    """
    data = wire.load_json_object(reply.body)
    if data.get("type") == "error":
        raise TerminalProviderError("answer is an error object", code=wire.MALFORMED)
    stop = str(data.get("stop_reason") or "")
    blocks = _text_blocks(data.get("content"))
    if _STOP_REASONS.get(stop) == "length" and not blocks.strip():
        raise wire.OutputCapExhausted(reasoning_tokens=0)
    text = wire.answer_text(blocks, f"answer has no text (stop_reason={stop or 'none'})")
    usage = wire.usage_of(data)
    return wire.ParsedAnswer(
        text=text,
        prompt_tokens=sum(wire.as_count(usage.get(name)) for name in _INPUT_TOKENS),
        completion_tokens=wire.as_count(usage.get("output_tokens")),
        request_id=wire.request_id(data, reply, "request-id"),
        finish_reason=_STOP_REASONS.get(stop, stop),
        cached_input_tokens=wire.as_count(usage.get("cache_read_input_tokens")),
        cache_write_tokens=wire.as_count(usage.get("cache_creation_input_tokens")),
    )


def _text_blocks(blocks: object) -> str:
    """Return the text of a reply's text blocks, joined (other blocks are tool calls and
    the like); raise when the reply has no list of blocks."""
    if not isinstance(blocks, list):
        raise TerminalProviderError("answer has no content blocks", code=wire.MALFORMED)
    return "".join(
        block["text"]
        for block in blocks
        if isinstance(block, dict)
        and block.get("type") == "text"
        and isinstance(block.get("text"), str)
    )
