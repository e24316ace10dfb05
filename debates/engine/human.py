"""A person's turn or vote, checked by the contract a model's answer follows.

A person in a human seat answers with the contract's JSON form, ``{"reasoning": ...,
"decisions": [...]}`` (``debates.engine.contract``), as a model's server that decodes
under a JSON schema does. Where a model's answer is read leniently (an unknown action is
dropped, a confidence of 150 clamped), a person's is refused whole, naming each bad field
(``decisions[1].action``), so that they can correct it: nothing of a refused answer is
kept. An accepted answer is then read by the same parser as a model's
(``debates.engine.parsing``), so it is stored in the very shape of a model's turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema import ValidationError as SchemaError

from debates.engine.contract import decision_schema
from debates.engine.parsing import parse_output
from debates.engine.types import Action, ParseResult, ParseStatus

HUMAN_REASONING_MAX_CHARS = 4000
"""Longest reasoning a person's turn or vote may hold."""


class HumanAnswerInvalid(ValueError):
    """A person's answer breaks the contract; ``fields`` maps each bad field to messages."""

    def __init__(self, fields: dict[str, list[str]]) -> None:
        self.fields = fields
        super().__init__("; ".join(f"{name}: {' '.join(m)}" for name, m in fields.items()))


def read_human_answer(value: Any, symbols: Sequence[str], *, turn: bool) -> ParseResult:
    """Return a person's ``{reasoning, decisions}`` as a parse result, or raise
    ``HumanAnswerInvalid`` naming every bad field.

    ``turn``: a debate turn, whose reasoning the others answer, so it may not be empty;
    a vote's reasoning may be. Each decision names a candidate coin once, one of the
    contract's actions, and a whole-number confidence from 0 to 100; leverage,
    position size, stop and take-profit are optional, within the contract's bounds.
    """
    schema = decision_schema(
        symbols,
        complete=False,
        reasoning_max=HUMAN_REASONING_MAX_CHARS,
        reasoning_min=1 if turn else 0,
    )
    fields: dict[str, list[str]] = {}
    for error in Draft202012Validator(schema).iter_errors(value):
        for name, message in _explain(error, symbols):
            fields.setdefault(name, []).append(message)
    if not fields:
        _refuse_repeats(value["decisions"], fields)
    if fields:
        raise HumanAnswerInvalid(dict(sorted(fields.items())))
    parsed = parse_output(json.dumps(value, ensure_ascii=False), symbols)
    if parsed.status != ParseStatus.OK:  # a value the schema allows but the parser does not
        raise HumanAnswerInvalid({"decisions": [item.reason for item in parsed.dropped]})
    return parsed


def _refuse_repeats(decisions: list[dict[str, Any]], fields: dict[str, list[str]]) -> None:
    seen: set[str] = set()
    for index, decision in enumerate(decisions):
        if decision["symbol"] in seen:
            fields[f"decisions[{index}].symbol"] = [f"{decision['symbol']} is decided twice."]
        seen.add(decision["symbol"])


def _path(parts: Iterable[Any]) -> str:
    name = ""
    for part in parts:
        name += f"[{part}]" if isinstance(part, int) else f".{part}" if name else str(part)
    return name


def _explain(error: SchemaError, symbols: Sequence[str]) -> list[tuple[str, str]]:
    """Return ``(field, message)`` for one schema error, in the API's words."""
    where = list(error.absolute_path)
    if error.validator == "required":
        present = error.instance if isinstance(error.instance, dict) else {}
        return [
            (_path([*where, key]), "Required.")
            for key in error.validator_value
            if key not in present
        ]
    if error.validator == "additionalProperties":
        allowed = error.schema.get("properties", {})
        return [
            (_path([*where, key]), "Unknown field.") for key in error.instance if key not in allowed
        ]
    name = _path(where) or "non_field_errors"
    return [(name, _message(error, where[-1] if where else None, symbols))]


def _message(error: SchemaError, field: Any, symbols: Sequence[str]) -> str:
    """Return the API's words for a schema error on ``field`` (the last part of its path)."""
    if error.validator == "enum" and field == "symbol":
        return f"Not a candidate coin: {error.instance!r}; one of {', '.join(symbols)}."
    if error.validator == "enum" and field == "action":
        actions = ", ".join(action.value for action in Action)
        return f"Unknown action {error.instance!r}; one of {actions}."
    if field == "confidence":
        return f"Must be a whole number from 0 to 100; got {error.instance!r}."
    if error.validator == "minItems":
        return "Give at least one decision."
    if error.validator == "maxItems":
        return f"At most one decision per candidate coin ({len(symbols)})."
    if error.validator == "minLength":
        return "Required."
    return error.message
