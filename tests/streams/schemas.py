"""JSON schemas of the live events (SPEC 7), derived from the REST API's OpenAPI schema.

A payload that carries an object must have the shape of that object's REST
representation: its schema is the OpenAPI component of the REST serializer, made strict
(every property required, no other key allowed, ``nullable`` where the API says so).
"""

from __future__ import annotations

import functools
from typing import Any

import jsonschema

STATE_FIELDS = (
    "status",
    "phase",
    "pace",
    "current_round",
    "current_speaker",
    "level_used",
    "current_step",
    "steps",
    "user_action_required",
    "can_advance",
    "available_actions",
    "human_due_at",
)


@functools.cache
def _components() -> dict[str, Any]:
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]


def _strict(node: Any) -> Any:
    """Return an OpenAPI 3.0 schema node as a strict JSON schema."""
    if isinstance(node, list):
        return [_strict(item) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _strict(_components()[node["$ref"].rsplit("/", 1)[1]])
    out = {
        key: _strict(value)
        for key, value in node.items()
        if key not in ("nullable", "readOnly", "writeOnly", "description")
    }
    if "properties" in out:
        out["required"] = sorted(out["properties"])
        out["additionalProperties"] = False
    if node.get("nullable"):
        out = {"anyOf": [out, {"type": "null"}]}
    return out


def component(name: str) -> dict[str, Any]:
    """Return the strict JSON schema of OpenAPI component ``name`` (``Message``, ...)."""
    return _strict(_components()[name])


def _object(properties: dict[str, Any], optional: tuple[str, ...] = ()) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": properties,
        "required": sorted(set(properties) - set(optional)),
        "additionalProperties": False,
    }


def event_schema(event_type: str) -> dict[str, Any]:
    """Return the JSON schema of the data of ``event_type`` (SPEC 7)."""
    detail = component("DebateDetail")["properties"]
    round_ = _object({"round": {"type": "integer", "minimum": 1}})
    schemas = {
        "initial": component("DebateDetail"),
        "status": _object(
            {name: detail[name] for name in (*STATE_FIELDS, "error")}, optional=("error",)
        ),
        "round_start": round_,
        "round_end": round_,
        "message": component("Message"),
        "vote": component("Vote"),
        "consensus": _object(
            {"decisions": {"type": "array", "items": component("Decision"), "minItems": 1}}
        ),
        "execution": component("Execution"),
        "judge_call": _object(
            {
                "call": component("JudgeCall"),
                "summary": {"anyOf": [component("RoundSummary"), {"type": "null"}]},
            }
        ),
        "judge_scores": _object({"scores": {"type": "array", "items": component("JudgeScore")}}),
        "error": _object(
            {
                "step": {"type": "string", "minLength": 1},
                "participant": {"type": "integer"},
                "code": {"type": "string", "minLength": 1},
                "message": {"type": "string"},
            },
            optional=("participant",),
        ),
    }
    return schemas[event_type]


def validate_event(event_type: str, data: Any) -> None:
    """Raise ``jsonschema.ValidationError`` unless ``data`` fits ``event_type``."""
    jsonschema.validate(data, event_schema(event_type))
