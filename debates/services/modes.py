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

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from debates.engine.personalities import PERSONALITIES
from debates.models import AIModel, DebateMode, SeatKind
from debates.providers.catalog import RETIRED, lifecycle

JUDGE = "judge"
BULLISH = frozenset({"bull", "contrarian"})
BEARISH = frozenset({"bear", "risk_manager"})
DEFAULT_TEMPERATURE_RANGE = (0.2, 1.0)
MAX_OUTPUT_TOKENS = 200_000
# Records a refusal: refuse(field, message).
Refuse = Callable[[str, str], None]
# How many mode models each mode takes: (fewest, most).
MODEL_COUNTS = {
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
    """Return why ``model`` (looked up from ``given``) cannot take a seat, or None: it
    does not exist, is disabled, lacks its key, or its provider has retired it."""
    from debates.services.lifecycle import KEYLESS_PROVIDERS

    if model is None:
        return f"No such AI model: {given!r}."
    if not model.enabled:
        return f"AI model {model.name!r} is disabled."
    if model.provider not in KEYLESS_PROVIDERS and not model.api_key:
        return f"AI model {model.name!r} has no API key."
    stands = lifecycle(model.provider, model.model_name, timezone.localdate())
    if stands.status == RETIRED:
        return f"AI model {model.name!r}: {stands.warning}"
    return None


def seat_plan(
    owner: Any, participants: list[dict[str, Any]], seating: dict[str, Any], refuse: Refuse
) -> SeatPlan:
    """Plan the seats ``participants`` as the mode and the map of ``seating`` say (both
    as ``debates.services.inputs`` checked them), refusing with ``refuse(field,
    message)`` what they cannot seat; the plan is only used when nothing was refused."""
    mode = seating.get("mode") or DebateMode.CUSTOM
    mode_models, role_map = _checked_ids(owner, seating, mode, refuse)
    low, high = _temperature_range(seating, mode, refuse)
    count = len(participants)
    temperatures: list[float | None] = [None] * count
    if mode == DebateMode.TEMPERATURE and count:
        step = (high - low) / (count - 1) if count > 1 else 0.0
        temperatures = [round(low + index * step, 4) for index in range(count)]
    stored = {
        "mode": mode,
        "mode_models": mode_models,
        "temperature_range": [low, high] if mode == DebateMode.TEMPERATURE else [],
        "role_model_map": role_map,
        "max_output_tokens": dict(seating.get("max_output_tokens") or {}),
    }
    models = _seat_models(participants, stored, refuse)
    return SeatPlan(models=models, temperatures=temperatures, stored=stored)


def _seat_models(
    participants: list[dict[str, Any]], stored: dict[str, Any], refuse: Refuse
) -> list[int | None]:
    """Return each seat's model id as the mode and the map of ``stored`` give it (None
    for the owner's seat), refusing a seat's own model where the mode seats them."""
    mode, mode_models = stored["mode"], stored["mode_models"]
    first = participants[0].get("ai_model") if participants else None
    models: list[int | None] = []
    for index, seat in enumerate(participants):
        if seat.get("kind") == SeatKind.HUMAN:
            models.append(None)
            continue
        own, personality = seat.get("ai_model"), seat["personality"]
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
        models.append(stored["role_model_map"].get(personality, chosen))
    return models


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


def _checked_ids(
    owner: Any, seating: dict[str, Any], mode: str, refuse: Refuse
) -> tuple[list[int], dict[str, int]]:
    """Return the ``mode_models`` and the ``role_model_map`` that can seat, refusing the
    others: a number of models the mode does not take, an unknown role, a model not the
    owner's or that may not be called now."""
    given_models = seating.get("mode_models") or []
    given_map = seating.get("role_model_map") or {}
    fewest, most = MODEL_COUNTS[mode]
    if not fewest <= len(given_models) <= most:
        refuse("mode_models", _count_refusal(mode, len(given_models)))
    owned = AIModel.objects.filter(owner=owner, pk__in=[*given_models, *given_map.values()])
    callable_now = _callable_now({m.pk: m for m in owned}, refuse)
    mode_models = [m for i, m in enumerate(given_models) if callable_now(f"mode_models[{i}]", m)]
    return mode_models, _role_map(given_map, callable_now, refuse)


def _role_map(
    given: dict[str, int], callable_now: Callable[[str, int], bool], refuse: Refuse
) -> dict[str, int]:
    """Return the roles of ``given`` that are roles, each to a model that can seat."""
    role_map = {}
    for key, model_id in given.items():
        if key != JUDGE and key not in PERSONALITIES:
            refuse(
                f"role_model_map.{key}",
                f'Not a role: one of {", ".join(PERSONALITIES)} or "judge".',
            )
        elif callable_now(f"role_model_map.{key}", model_id):
            role_map[key] = model_id
    return role_map


def _count_refusal(mode: str, count: int) -> str:
    """Return why ``count`` models are not what ``mode`` takes."""
    fewest, most = MODEL_COUNTS[mode]
    wanted = "none" if most == 0 else f"{fewest} to {most}" if fewest != most else str(most)
    return f"The {mode} mode takes {wanted} AI model(s); got {count}."


def _callable_now(owned: dict[int, AIModel], refuse: Refuse) -> Callable[[str, int], bool]:
    """Return a check that the model a field names is among ``owned`` and may be called
    now, refusing the field when not."""

    def check(name: str, given: int) -> bool:
        why = model_refusal(owned.get(given), given)
        if why:
            refuse(name, why)
        return why is None

    return check


def _temperature_range(seating: dict[str, Any], mode: str, refuse: Refuse) -> tuple[float, float]:
    given = seating.get("temperature_range")
    if given is None:
        return DEFAULT_TEMPERATURE_RANGE
    if mode != DebateMode.TEMPERATURE:
        refuse("temperature_range", "Only the temperature mode takes a temperature range.")
        return DEFAULT_TEMPERATURE_RANGE
    if given[0] > given[1]:
        refuse("temperature_range", "Must be [lowest, highest] with 0 <= lowest <= highest <= 2.")
        return DEFAULT_TEMPERATURE_RANGE
    return float(given[0]), float(given[1])
