"""Debate modes and the role-to-model map: which AI model sits in each seat.

``custom``: each seat names its own model. ``homogeneous``: one model (``mode_models``
[A], else the first seat's) in every seat. ``temperature``: that one model in every
seat, the seats at temperatures spread evenly over ``temperature_range`` (default
0.2 to 1.0) in speaking order. ``adversarial``: the bullish seats (bull, contrarian) on
model A, the bearish ones (bear, risk_manager) on model B, the judge on model C
(``mode_models`` [A, B] or [A, B, C]); the analyst, on neither side, sits on C when it is
given, else on A. A ``role_model_map`` ``{personality or "judge": ai_model}`` then puts
its model in every seat of that personality, and its ``judge`` (else the adversarial
mode's C) is the model of the debate's judge when the debate has one, whatever the mode.
Every field is checked at create and named when refused.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from debates.engine.personalities import PERSONALITIES
from debates.models import AIModel, DebateMode, SeatKind

JUDGE = "judge"
BULLISH = frozenset({"bull", "contrarian"})
BEARISH = frozenset({"bear", "risk_manager"})
DEFAULT_TEMPERATURE_RANGE = (0.2, 1.0)
MAX_OUTPUT_ROLES = ("participants", JUDGE)
MAX_OUTPUT_TOKENS = 200_000
# How many mode models each mode takes: (fewest, most).
_MODEL_COUNTS = {
    DebateMode.CUSTOM: (0, 0),
    DebateMode.HOMOGENEOUS: (0, 1),
    DebateMode.TEMPERATURE: (0, 1),
    DebateMode.ADVERSARIAL: (2, 3),
}


@dataclass(frozen=True)
class SeatPlan:
    """What the mode and the map decide: each seat's model id (None: the seat's own),
    each seat's temperature (None: its model's) and the values to store."""

    models: list[int | None]
    temperatures: list[float | None]
    stored: dict[str, Any]


def model_refusal(model: AIModel | None, given: Any) -> str | None:
    """Return why ``model`` (looked up from ``given``) cannot take a seat, or None."""
    from debates.services.lifecycle import KEYLESS_PROVIDERS

    if model is None:
        return f"No such AI model: {given!r}."
    if not model.enabled:
        return f"AI model {model.name!r} is disabled."
    if model.provider not in KEYLESS_PROVIDERS and not model.api_key:
        return f"AI model {model.name!r} has no API key."
    return None


def seat_plan(owner: Any, data: Any, refuse: Any) -> SeatPlan:
    """Check the mode fields of ``data`` (a ``DebateInput``) and plan its seats.

    ``refuse(field, message)`` records a refusal; the plan is only used when none was.
    """
    seats = data.participants if isinstance(data.participants, list) else []
    count = len(seats)
    mode = data.mode
    if mode not in DebateMode.values:
        refuse("mode", f"One of {', '.join(DebateMode.values)}.")
        mode = DebateMode.CUSTOM
    ids = _checked_ids(owner, data, mode, refuse)
    mode_models, role_map = ids["mode_models"], ids["role_model_map"]
    low, high = _temperature_range(data, mode, refuse)

    first = seats[0].get("ai_model") if seats and isinstance(seats[0], dict) else None
    models: list[int | None] = []
    for index, seat in enumerate(seats):
        if isinstance(seat, dict) and seat.get("kind") == SeatKind.HUMAN:
            models.append(None)  # the owner's seat: no model
            continue
        personality = seat.get("personality") if isinstance(seat, dict) else None
        own = seat.get("ai_model") if isinstance(seat, dict) else None
        first_seats_model = index == 0 and not mode_models and mode != DebateMode.ADVERSARIAL
        if mode != DebateMode.CUSTOM and own is not None and not first_seats_model:
            refuse(
                f"participants[{index}].ai_model",
                f"The {mode} mode seats the models: give them in mode_models or "
                "role_model_map, not per seat.",
            )
        chosen = (
            own if mode == DebateMode.CUSTOM else _mode_model(mode, mode_models, first, personality)
        )
        if isinstance(personality, str) and personality in role_map:
            chosen = role_map[personality]
        models.append(chosen)
    temperatures: list[float | None] = [None] * count
    if mode == DebateMode.TEMPERATURE and count:
        step = (high - low) / (count - 1) if count > 1 else 0.0
        temperatures = [round(low + index * step, 4) for index in range(count)]
    stored = {
        "mode": mode,
        "mode_models": mode_models,
        "temperature_range": [low, high] if mode == DebateMode.TEMPERATURE else [],
        "role_model_map": role_map,
        "max_output_tokens": _max_output_tokens(data, refuse),
    }
    return SeatPlan(models=models, temperatures=temperatures, stored=stored)


def planned_judge(stored: dict[str, Any]) -> int | None:
    """Return the id of the AI model a seat plan's stored values (``SeatPlan.stored``)
    give the judge: the map's ``judge``, else the adversarial mode's C, else None."""
    if JUDGE in stored["role_model_map"]:
        return stored["role_model_map"][JUDGE]
    if stored["mode"] == DebateMode.ADVERSARIAL and len(stored["mode_models"]) == 3:
        return stored["mode_models"][2]
    return None


def judge_model_id(debate: Any) -> int | None:
    """Return the id of the AI model the mode and the map give a debate's judge, or None."""
    return planned_judge(
        {name: getattr(debate, name) for name in ("mode", "mode_models", "role_model_map")}
    )


def _mode_model(mode: str, mode_models: list[int], first: Any, personality: Any) -> Any:
    if mode in (DebateMode.HOMOGENEOUS, DebateMode.TEMPERATURE):
        return mode_models[0] if mode_models else first
    if len(mode_models) < 2:
        return None  # refused already
    if personality in BULLISH:
        return mode_models[0]
    if personality in BEARISH:
        return mode_models[1]
    return mode_models[2] if len(mode_models) == 3 else mode_models[0]


def _checked_ids(owner: Any, data: Any, mode: str, refuse: Any) -> dict[str, Any]:
    """Return the valid ``mode_models`` and ``role_model_map``, refusing the bad ones."""
    given_models = data.mode_models if data.mode_models is not None else []
    given_map = data.role_model_map if data.role_model_map is not None else {}
    if not isinstance(given_models, list):
        refuse("mode_models", "Must be a list of AI model ids.")
        given_models = []
    if not isinstance(given_map, dict):
        refuse("role_model_map", 'Must map a personality or "judge" to an AI model id.')
        given_map = {}
    fewest, most = _MODEL_COUNTS[mode]
    if not fewest <= len(given_models) <= most:
        wanted = "none" if most == 0 else f"{fewest} to {most}" if fewest != most else str(most)
        refuse(
            "mode_models", f"The {mode} mode takes {wanted} AI model(s); got {len(given_models)}."
        )
    wanted_ids = [i for i in [*given_models, *given_map.values()] if _is_id(i)]
    owned = {m.pk: m for m in AIModel.objects.filter(owner=owner, pk__in=wanted_ids)}

    def check(name: str, given: Any) -> bool:
        why = "Must be the id of one of your AI models." if not _is_id(given) else None
        why = why or model_refusal(owned.get(given), given)
        if why:
            refuse(name, why)
        return why is None

    mode_models = [m for i, m in enumerate(given_models) if check(f"mode_models[{i}]", m)]
    role_map = {}
    for key, model_id in given_map.items():
        if key != JUDGE and key not in PERSONALITIES:
            refuse(
                f"role_model_map.{key}",
                f'Not a role: one of {", ".join(PERSONALITIES)} or "judge".',
            )
        elif check(f"role_model_map.{key}", model_id):
            role_map[key] = model_id
    return {"mode_models": mode_models, "role_model_map": role_map}


def _temperature_range(data: Any, mode: str, refuse: Any) -> tuple[float, float]:
    given = data.temperature_range
    if given is None:
        return DEFAULT_TEMPERATURE_RANGE
    if mode != DebateMode.TEMPERATURE:
        refuse("temperature_range", "Only the temperature mode takes a temperature range.")
        return DEFAULT_TEMPERATURE_RANGE
    numbers = (
        isinstance(given, list)
        and len(given) == 2
        and all(isinstance(t, int | float) and not isinstance(t, bool) for t in given)
    )
    if not numbers or not 0 <= given[0] <= given[1] <= 2:
        refuse("temperature_range", "Must be [lowest, highest] with 0 <= lowest <= highest <= 2.")
        return DEFAULT_TEMPERATURE_RANGE
    return float(given[0]), float(given[1])


def _max_output_tokens(data: Any, refuse: Any) -> dict[str, int]:
    given = data.max_output_tokens if data.max_output_tokens is not None else {}
    if not isinstance(given, dict):
        refuse("max_output_tokens", 'Must be {"participants": n, "judge": n}.')
        return {}
    caps = {}
    for role, cap in given.items():
        name = f"max_output_tokens.{role}"
        if role not in MAX_OUTPUT_ROLES:
            refuse(name, f"Not a role: one of {', '.join(MAX_OUTPUT_ROLES)}.")
        elif not _is_id(cap) or cap > MAX_OUTPUT_TOKENS:
            refuse(name, f"Must be an integer from 1 to {MAX_OUTPUT_TOKENS}.")
        else:
            caps[role] = cap
    return caps


def _is_id(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
