"""The one output contract every prompt states, in the form the model's server is asked for.

A model answers with its reasoning and one decision per candidate coin, each decision
``{symbol, action, confidence, leverage, position_pct, stop_loss, take_profit,
reasoning}``. The contract has two forms with the same fields and rules, and one prompt
only ever states one of them:

- ``tagged`` (the default, for any server): a ``<reasoning>`` block, then a
  ``<decision>`` block holding a JSON array of decisions;
- ``json_schema``: one JSON object ``{"reasoning": ..., "decisions": [...]}``, for a server
  that decodes under a JSON schema (OpenAI's structured outputs, Gemini's compatible
  endpoint, llama.cpp, vLLM, Ollama): ``decision_schema`` is that schema, and the server
  cannot write anything else. Its string lengths are bounded, so a small model cannot loop
  inside its reasoning until it runs out of tokens.

``debates.engine.parsing.parse_output`` reads both forms.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from debates.engine.types import Action

TAGGED = "tagged"
JSON_SCHEMA = "json_schema"
OUTPUT_MODES = (TAGGED, JSON_SCHEMA)

REASONING_MAX_CHARS = 800
"""Longest reasoning a ``json_schema`` answer may hold."""
COIN_REASONING_MAX_CHARS = 200
"""Longest per-coin reasoning a ``json_schema`` answer may hold."""

_FIELD_RULES = (
    "- confidence: a number from 0 to 100.\n"
    "- leverage: a whole number, at least 1.\n"
    "- position_pct: the fraction of the account balance to use, from 0.1 to 1.0.\n"
    "- stop_loss, take_profit: distance from the entry price as a fraction of the "
    "price (0.03 = 3 %).\n"
    "- reasoning: one or two sentences about this coin."
)


def _example(symbol: str) -> str:
    return (
        f'{{"symbol": "{symbol}", "action": "open_long", "confidence": 70, "leverage": 5, '
        '"position_pct": 0.2, "stop_loss": 0.03, "take_profit": 0.06, '
        '"reasoning": "one or two sentences"}'
    )


def _action_rule() -> str:
    actions = ", ".join(action.value for action in Action)
    return (
        f"- action: one of {actions} (open_*: open a new position; close_*: close an "
        "existing one; hold: keep current positions unchanged; wait: stay out).\n"
    )


def check_mode(mode: str) -> None:
    """Raise ``ValueError`` unless ``mode`` is one of ``OUTPUT_MODES``."""
    if mode not in OUTPUT_MODES:
        raise ValueError(f"output mode must be one of {OUTPUT_MODES}, not {mode!r}")


def contract_text(symbol: str, hint: str, mode: str = TAGGED) -> str:
    """Return the output contract in ``mode``'s form; ``symbol`` is the example's coin and
    ``hint`` says what the reasoning holds."""
    check_mode(mode)
    what = f"{hint[0].upper()}{hint[1:]}"
    if mode == JSON_SCHEMA:
        return (
            "Answer with one JSON object and nothing else:\n"
            f'{{"reasoning": "{what}, in at most {REASONING_MAX_CHARS} characters.", '
            f'"decisions": [{_example(symbol)}]}}\n'
            '"decisions" holds one object per candidate coin:\n' + _action_rule() + _FIELD_RULES
        )
    return (
        "Answer with exactly these two blocks and nothing after them:\n"
        f"<reasoning>\n{what}.\n</reasoning>\n"
        f"<decision>\n[\n  {_example(symbol)}\n]\n</decision>\n"
        "The <decision> block holds a JSON array with one object per candidate coin:\n"
        + _action_rule()
        + _FIELD_RULES
    )


def answer_now(ask: str, mode: str = TAGGED) -> str:
    """Return the prompt's closing line, ``ask`` ("Cast your vote") now, in ``mode``'s form."""
    check_mode(mode)
    if mode == JSON_SCHEMA:
        return f"{ask} now, as the JSON object."
    return f"{ask} now, as a <reasoning> block followed by a <decision> block."


REQUIRED_DECISION_FIELDS = ("symbol", "action", "confidence")
"""What a decision must hold to count; the others fall back to the strategy's defaults."""


def decision_schema(
    symbols: Sequence[str],
    *,
    complete: bool = True,
    reasoning_max: int = REASONING_MAX_CHARS,
    reasoning_min: int = 0,
) -> dict[str, Any]:
    """Return the JSON schema of a ``json_schema`` answer about ``symbols``.

    ``complete`` (what a model's server decodes under): every field is required, one
    decision per coin, and no other field is allowed (what strict structured-output
    servers demand); the parser still checks and clamps every value. Not ``complete``
    (what a person's turn or vote is checked against): the same fields and bounds, only
    ``REQUIRED_DECISION_FIELDS`` required, and at least one decision.
    """
    properties = {
        "symbol": {"type": "string", "enum": list(symbols)},
        "action": {"type": "string", "enum": [action.value for action in Action]},
        "confidence": {"type": "integer", "minimum": 0, "maximum": 100},
        "leverage": {"type": "integer", "minimum": 1, "maximum": 20},
        "position_pct": {"type": "number", "minimum": 0.1, "maximum": 1.0},
        "stop_loss": {"type": "number", "minimum": 0, "maximum": 1},
        "take_profit": {"type": "number", "minimum": 0, "maximum": 1},
        "reasoning": {"type": "string", "maxLength": COIN_REASONING_MAX_CHARS},
    }
    decision = {
        "type": "object",
        "properties": properties,
        "required": list(properties) if complete else list(REQUIRED_DECISION_FIELDS),
        "additionalProperties": False,
    }
    reasoning: dict[str, Any] = {"type": "string", "maxLength": reasoning_max}
    if reasoning_min:
        reasoning["minLength"] = reasoning_min
    return {
        "type": "object",
        "properties": {
            "reasoning": reasoning,
            "decisions": {
                "type": "array",
                "items": decision,
                "minItems": len(symbols) if complete else 1,
                "maxItems": len(symbols),
            },
        },
        "required": ["reasoning", "decisions"],
        "additionalProperties": False,
    }
