"""Creating, changing and deleting schedules: debate templates fired every N minutes.

A schedule holds what each of its debates is created from, so it is checked by the
same rules as a debate (SPEC 5.1): an owned strategy, 2 to 6 participants seating the
owner's enabled models, rounds 2..5, an owned trader when it executes automatically.
Firing the schedule (Celery beat) is wired separately.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser

from arena.exceptions import NotFound, ValidationError
from debates.models import Schedule
from debates.services.lifecycle import DebateInput, input_refusal
from debates.services.lifecycle import _clean as debate_input_clean

FIELDS = (
    "name",
    "strategy",
    "symbol",
    "participants",
    "max_rounds",
    "prompt_variant",
    "auto_execute",
    "trader",
    "interval_minutes",
    "enabled",
    "replay_as_of",
)


def _clean(owner: AbstractBaseUser, values: dict[str, Any]) -> dict[str, Any]:
    """Return the columns to store, or raise ``ValidationError`` naming every bad field."""
    data = DebateInput(
        name=values["name"],
        strategy=values["strategy"],
        participants=values["participants"],
        symbol=values["symbol"],
        max_rounds=values["max_rounds"],
        interval_minutes=values["interval_minutes"],
        prompt_variant=values["prompt_variant"],
        auto_execute=values["auto_execute"],
        trader=values["trader"],
        as_of=values["replay_as_of"],
    )
    cleaned = debate_input_clean(owner, data)
    errors = dict(data.errors)
    if "as_of" in errors:
        errors["replay_as_of"] = errors.pop("as_of")
    if not isinstance(values["enabled"], bool):
        errors["enabled"] = ["Must be true or false."]
    if errors:
        # The same code as for a debate: not_enough_participants when seats are missing.
        raise type(input_refusal(data))(fields=errors)
    return {
        "name": cleaned["name"],
        "strategy": cleaned["strategy"],
        "symbol": cleaned["symbol"],
        "participants": [
            {"ai_model": model.pk, "personality": personality}
            for model, personality in cleaned["seats"]
        ],
        "max_rounds": cleaned["max_rounds"],
        "prompt_variant": cleaned["prompt_variant"],
        "auto_execute": cleaned["auto_execute"],
        "trader": cleaned["trader"],
        "interval_minutes": cleaned["interval_minutes"],
        "enabled": values["enabled"],
        "replay_as_of": cleaned["as_of"],
    }


def _unknown(data: Mapping[str, Any]) -> None:
    unknown = set(data) - set(FIELDS)
    if unknown:
        raise ValidationError(fields={name: ["Unknown field."] for name in sorted(unknown)})


def _owned(owner: AbstractBaseUser, schedule_id: int) -> Schedule:
    schedule = Schedule.objects.filter(owner=owner, pk=schedule_id).first()
    if schedule is None:
        raise NotFound("Schedule not found.")
    return schedule


def _defaults() -> dict[str, Any]:
    values = {
        name: Schedule._meta.get_field(name).get_default()
        for name in FIELDS
        if name not in ("strategy", "trader")
    }
    return {**values, "strategy": None, "trader": None}


def schedule_create(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> Schedule:
    """Create a schedule; ``strategy``, ``trader`` and seat models are given by id."""
    _unknown(data)
    values = _clean(owner, {**_defaults(), **data})
    return Schedule.objects.create(owner=owner, **values)


def schedule_update(
    *, owner: AbstractBaseUser, schedule_id: int, changes: Mapping[str, Any]
) -> Schedule:
    """Change the fields in ``changes``; the whole template is checked again."""
    _unknown(changes)
    schedule = _owned(owner, schedule_id)
    current = {
        name: getattr(schedule, name) for name in FIELDS if name not in ("strategy", "trader")
    }
    current.update(strategy=schedule.strategy_id, trader=schedule.trader_id)
    values = _clean(owner, {**current, **changes})
    for name, value in values.items():
        setattr(schedule, name, value)
    schedule.save()
    return schedule


def schedule_delete(*, owner: AbstractBaseUser, schedule_id: int) -> None:
    """Delete a schedule; the debates it created stay."""
    _owned(owner, schedule_id).delete()
