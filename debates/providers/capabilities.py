"""What a model accepts and reports: the capabilities a request is built from.

The catalogue (``catalogue.toml``) gives each model its capabilities; an AI model may
override any of them (``AIModel.capabilities``), in the same form. ``parse`` reads that
form and raises ``CapabilityError`` naming the key at fault; ``Capabilities.merged``
lays an override over a base. No Django here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

TEMPERATURE_FREE = "free"
TEMPERATURE_ABSENT = "absent"
TEMPERATURE_FIXED = "fixed"

REASONING_PARAMS = (
    "reasoning_effort",
    "thinking",
    "thinking_effort",
    "enable_thinking",
    "output_config.effort",
)
OUTPUT_CAP_PARAMS = ("max_tokens", "max_completion_tokens")
BRIEF_EFFORT = "low"
"""The effort asked of votes and judges unless the AI model says otherwise."""
EFFORT_OFF = "none"


class CapabilityError(ValueError):
    """A capability entry that cannot be used; ``key`` names it (``reasoning.efforts``)."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        super().__init__(f"{key}: {message}")


@dataclass(frozen=True)
class Capabilities:
    """What one model accepts in a request and where its answer reports its usage.

    ``temperature`` is ``free`` (sent, at most ``temperature_max``), ``fixed`` (the
    model fixes it at ``fixed_temperature``: none is sent) or ``absent`` (the model
    refuses the parameter: none is sent). ``reasoning_param`` is the request field that
    sets the reasoning effort (empty: the model has no such control); ``efforts`` the
    values it takes and ``default_effort`` the provider's own. ``turn_effort`` is sent
    with debate turns (empty: nothing, the provider's default applies) and
    ``brief_effort`` with votes and judge calls. ``cached_usage`` and ``reasoning_usage``
    are dotted paths in the answer's usage object; ``reasoning_in_completion`` is False
    when the provider reports reasoning tokens apart from the completion tokens.
    ``reasoning_budget`` pairs each effort with the output tokens set aside for reasoning
    at it, for a model whose reasoning tokens count inside its output cap (empty: they do
    not, or the model does not reason); see ``output_cap``. ``schema_refuses`` names the
    JSON-schema keywords the provider refuses in a structured-output schema: a request
    leaves them out (``schema_sent``); the prompt still states the limits they set.
    """

    temperature: str = TEMPERATURE_FREE
    fixed_temperature: float | None = None
    temperature_max: float = 2.0
    reasoning_param: str = ""
    efforts: tuple[str, ...] = ()
    default_effort: str = ""
    turn_effort: str = ""
    brief_effort: str = BRIEF_EFFORT
    json_schema: bool = False
    output_cap_param: str = "max_tokens"
    max_output: int | None = None
    cached_usage: str = ""
    reasoning_usage: str = ""
    reasoning_in_completion: bool = True
    reasoning_budget: tuple[tuple[str, int], ...] = ()
    schema_refuses: tuple[str, ...] = ()

    def merged(self, override: Mapping[str, Any] | None) -> Capabilities:
        """Return these capabilities with ``override`` (the catalogue's form) laid over."""
        if not override:
            return self
        return dataclasses.replace(self, **parse(override))

    def sends_temperature(self) -> bool:
        """Say whether a request carries a temperature at all."""
        return self.temperature == TEMPERATURE_FREE

    def effort_for(self, kind: str) -> str:
        """Return the effort to ask for a call of ``kind`` ("" for none), among those the
        model takes: a turn asks ``turn_effort``; a brief call (vote, judge) asks
        ``brief_effort``, else off, else the lowest effort the model takes."""
        if not self.reasoning_param or not self.efforts:
            return ""
        if kind == "turn":
            return self.turn_effort if self.turn_effort in self.efforts else ""
        if self.brief_effort in self.efforts:
            return self.brief_effort
        return EFFORT_OFF if EFFORT_OFF in self.efforts else self.efforts[0]

    def output_cap(self, answer_cap: int, kind: str) -> int:
        """Return the output cap a call of ``kind`` sends for an answer of ``answer_cap``
        tokens: that cap plus the reasoning allowance of the effort the call reasons at
        (the one it asks, else the provider's default), at most ``max_output`` but never
        below ``answer_cap``.

        The allowance is the effort's ``reasoning_budget``, the largest budget for an
        effort the table does not name, and nothing with reasoning off or unknown, or
        for a model whose reasoning does not count inside its cap (no budget).
        """
        effort = self.effort_for(kind) or self.default_effort
        budgets = dict(self.reasoning_budget)
        allowance = 0
        if budgets and effort not in ("", EFFORT_OFF):
            allowance = budgets.get(effort, max(budgets.values()))
        if self.max_output is None:
            return answer_cap + allowance
        return max(answer_cap, min(answer_cap + allowance, self.max_output))

    def schema_sent(self, schema: Any) -> Any:
        """Return ``schema`` without the keywords the provider refuses, at every depth
        (a property named like one is kept)."""
        if not self.schema_refuses:
            return schema
        return _without(schema, frozenset(self.schema_refuses))

    def unknown_effort(self) -> str:
        """Return the name of an effort field that names an effort the model does not
        take ("" when both are fine); the default brief effort may be missing."""
        if self.turn_effort and self.turn_effort not in self.efforts:
            return "turn_effort"
        if self.brief_effort != BRIEF_EFFORT and self.brief_effort not in self.efforts:
            return "brief_effort"
        return ""


def parse(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Return the ``Capabilities`` fields that ``data`` (the catalogue's form) sets.

    Raise ``CapabilityError`` naming the first key that is unknown or malformed.
    """
    if not isinstance(data, Mapping):
        raise CapabilityError(prefix or "capabilities", "must be an object")
    fields: dict[str, Any] = {}
    for key, value in data.items():
        reader = _READERS.get(key)
        if reader is None:
            raise CapabilityError(f"{prefix}{key}", "unknown capability")
        fields.update(reader(value, f"{prefix}{key}"))
    return fields


def _temperature(value: object, key: str) -> dict[str, Any]:
    if value in (TEMPERATURE_FREE, TEMPERATURE_ABSENT):
        return {"temperature": value, "fixed_temperature": None}
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 <= value <= 2:
        return {"temperature": TEMPERATURE_FIXED, "fixed_temperature": float(value)}
    raise CapabilityError(key, 'must be "free", "absent" or a number from 0 to 2 (fixed)')


def _temperature_max(value: object, key: str) -> dict[str, Any]:
    if isinstance(value, int | float) and not isinstance(value, bool) and 0 < value <= 2:
        return {"temperature_max": float(value)}
    raise CapabilityError(key, "must be a number above 0 and at most 2")


def _reasoning(value: object, key: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise CapabilityError(key, "must be an object {param, efforts, default}")
    if not value:
        return {"reasoning_param": "", "efforts": (), "default_effort": ""}
    unknown = set(value) - {"param", "efforts", "default"}
    if unknown:
        raise CapabilityError(f"{key}.{sorted(unknown)[0]}", "unknown key")
    param = value.get("param")
    if param not in REASONING_PARAMS:
        raise CapabilityError(f"{key}.param", f"must be one of {', '.join(REASONING_PARAMS)}")
    efforts = value.get("efforts")
    if (
        not isinstance(efforts, list)
        or not efforts
        or not all(isinstance(e, str) and e for e in efforts)
    ):
        raise CapabilityError(f"{key}.efforts", "must be a list of effort names")
    default = value.get("default", "")
    if not isinstance(default, str) or (default and default not in efforts):
        raise CapabilityError(f"{key}.default", "must be one of the efforts")
    return {"reasoning_param": param, "efforts": tuple(efforts), "default_effort": default}


def _effort(name: str) -> Any:
    def read(value: object, key: str) -> dict[str, Any]:
        if not isinstance(value, str):
            raise CapabilityError(key, "must be an effort name")
        return {name: value}

    return read


def _flag(name: str) -> Any:
    def read(value: object, key: str) -> dict[str, Any]:
        if not isinstance(value, bool):
            raise CapabilityError(key, "must be true or false")
        return {name: value}

    return read


def _output_cap_param(value: object, key: str) -> dict[str, Any]:
    if value not in OUTPUT_CAP_PARAMS:
        raise CapabilityError(key, f"must be one of {', '.join(OUTPUT_CAP_PARAMS)}")
    return {"output_cap_param": value}


def _max_output(value: object, key: str) -> dict[str, Any]:
    if isinstance(value, int) and not isinstance(value, bool) and value > 0:
        return {"max_output": value}
    raise CapabilityError(key, "must be a positive whole number of tokens")


def _reasoning_budget(value: object, key: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise CapabilityError(key, "must be an object {effort: tokens}")
    for effort, tokens in value.items():
        if isinstance(tokens, bool) or not isinstance(tokens, int) or tokens < 0:
            raise CapabilityError(f"{key}.{effort}", "must be a whole number of tokens")
    return {"reasoning_budget": tuple(value.items())}


def _schema_refuses(value: object, key: str) -> dict[str, Any]:
    if not isinstance(value, list) or not all(isinstance(k, str) and k for k in value):
        raise CapabilityError(key, "must be a list of JSON-schema keywords")
    return {"schema_refuses": tuple(value)}


def _without(node: Any, refused: frozenset[str], *, names: bool = False) -> Any:
    """Return ``node`` with the keywords in ``refused`` dropped from every schema in it;
    ``names``: ``node`` maps property names to schemas (no name is a keyword)."""
    if isinstance(node, list):
        return [_without(item, refused) for item in node]
    if not isinstance(node, Mapping):
        return node
    return {
        key: _without(value, refused, names=key == "properties" and not names)
        for key, value in node.items()
        if names or key not in refused
    }


def _usage(value: object, key: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise CapabilityError(key, "must be an object {cached, reasoning}")
    names = {"cached": "cached_usage", "reasoning": "reasoning_usage"}
    fields: dict[str, Any] = {}
    for name, field_value in value.items():
        if name == "reasoning_in_completion":
            fields.update(_flag("reasoning_in_completion")(field_value, f"{key}.{name}"))
        elif name in names and isinstance(field_value, str):
            fields[names[name]] = field_value
        else:
            raise CapabilityError(f"{key}.{name}", "unknown key or not a dotted path")
    return fields


# Text in the catalogue's form: anything without a NUL character.
_TEXT = {"type": "string", "pattern": r"^[^\u0000]*$"}

# The catalogue's form as JSON Schema: what ``parse`` reads, but the rules between values
# (a default among the efforts, a turn or brief effort among the model's).
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "temperature": {
            "oneOf": [
                {"type": "string", "enum": [TEMPERATURE_FREE, TEMPERATURE_ABSENT]},
                {"type": "number", "minimum": 0, "maximum": 2},
            ]
        },
        "temperature_max": {"type": "number", "minimum": 0, "exclusiveMinimum": True, "maximum": 2},
        "reasoning": {
            "type": "object",
            "properties": {
                "param": {"type": "string", "enum": list(REASONING_PARAMS)},
                "efforts": {"type": "array", "minItems": 1, "items": {**_TEXT, "minLength": 1}},
                "default": _TEXT,
            },
            "additionalProperties": False,
            "anyOf": [{"maxProperties": 0}, {"required": ["param", "efforts"]}],
        },
        "turn_effort": _TEXT,
        "brief_effort": _TEXT,
        "json_schema": {"type": "boolean"},
        "output_cap_param": {"type": "string", "enum": list(OUTPUT_CAP_PARAMS)},
        "max_output": {"type": "integer", "minimum": 1},
        "usage": {
            "type": "object",
            "properties": {
                "cached": _TEXT,
                "reasoning": _TEXT,
                "reasoning_in_completion": {"type": "boolean"},
            },
            "additionalProperties": False,
        },
    },
    "additionalProperties": False,
}

_READERS = {
    "temperature": _temperature,
    "temperature_max": _temperature_max,
    "reasoning": _reasoning,
    "turn_effort": _effort("turn_effort"),
    "brief_effort": _effort("brief_effort"),
    "json_schema": _flag("json_schema"),
    "output_cap_param": _output_cap_param,
    "max_output": _max_output,
    "reasoning_budget": _reasoning_budget,
    "schema_refuses": _schema_refuses,
    "usage": _usage,
}


def usage_count(usage: Mapping[str, Any], path: str) -> int:
    """Return the count at dotted ``path`` in a usage object, 0 when absent or not a count."""
    value: object = usage
    for part in path.split(".") if path else ():
        value = value.get(part) if isinstance(value, Mapping) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(0, int(value))


def reasoning_fields(param: str, effort: str) -> dict[str, Any]:
    """Return the request fields that ask ``effort`` through ``param`` (none for "")."""
    if not param or not effort:
        return {}
    on = effort != EFFORT_OFF
    if param == "reasoning_effort":
        return {"reasoning_effort": effort}
    if param == "thinking":
        return {"thinking": {"type": "enabled" if on else "disabled"}}
    if param == "thinking_effort":
        fields: dict[str, Any] = {"thinking": {"type": "enabled" if on else "disabled"}}
        return {**fields, "reasoning_effort": effort} if on else fields
    if param == "enable_thinking":
        return {"enable_thinking": on}
    return {"output_config": {"effort": effort}}
