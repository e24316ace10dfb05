"""Creating, changing and deleting AI model configurations (SPEC 8).

The API key is write-only: it is stored encrypted (``arena.fields``) and no service
returns it. An ``openai_compatible`` model names its own base URL and model, since that
provider has no default for either. A base URL must obey the outbound policy
(``arena.outbound``): one that resolves to an internal address is refused, and so is
one carrying a user name or password (the key goes in ``api_key``). A model
seated in a debate cannot be deleted (the participants protect it), nor one a schedule
seats.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import date, datetime
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError

from arena.exceptions import Conflict, NotFound, ValidationError
from arena.outbound import OutboundRefused, check_no_user_info, check_url
from debates.models import AIModel, OutputMode, Schedule
from debates.providers.catalog import PROVIDERS, default_training_cutoff

FIELDS = (
    "name",
    "provider",
    "model_name",
    "base_url",
    "api_key",
    "temperature",
    "max_tokens",
    "timeout_seconds",
    "output_mode",
    "training_cutoff",
    "enabled",
)
MAX_TOKENS = 200_000
MIN_TIMEOUT_S, MAX_TIMEOUT_S = 1, 180
MAX_KEY_LENGTH = 500
# Providers that need no base URL or model of their own: the catalog has defaults.
NEEDS_OWN_ENDPOINT = frozenset({"openai_compatible"})

_http_url = URLValidator(schemes=["http", "https"])


def _number_in(
    errors: dict[str, list[str]], name: str, value: Any, low: float, high: float
) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        errors.setdefault(name, []).append("Must be a number.")
    elif not low <= value <= high:
        errors.setdefault(name, []).append(f"Must be between {low} and {high}; got {value}.")


def _clean(values: dict[str, Any]) -> dict[str, Any]:
    """Return ``values`` ready to store, or raise ``ValidationError`` naming every bad field."""
    errors: dict[str, list[str]] = {}

    def refuse(name: str, message: str) -> None:
        errors.setdefault(name, []).append(message)

    for name in ("name", "model_name", "base_url", "api_key"):
        if not isinstance(values[name], str):
            refuse(name, "Must be a string.")
        else:
            values[name] = values[name].strip()
    name = values["name"]
    if isinstance(name, str) and not name:
        refuse("name", "Required.")
    elif isinstance(name, str) and len(name) > 100:
        refuse("name", "At most 100 characters.")

    provider = values["provider"]
    if provider not in PROVIDERS:
        refuse("provider", f"Unknown provider {provider!r}; one of {', '.join(PROVIDERS)}.")
    model_name, base_url = values["model_name"], values["base_url"]
    if isinstance(model_name, str) and len(model_name) > 100:
        refuse("model_name", "At most 100 characters.")
    if isinstance(base_url, str) and base_url:
        try:
            _http_url(base_url)
        except DjangoValidationError:
            refuse("base_url", "Must be an http or https URL.")
        else:
            try:
                check_no_user_info(base_url, instead="put the key in api_key")
                check_url(base_url)
            except OutboundRefused as exc:
                refuse("base_url", str(exc))
        if len(base_url) > 200:
            refuse("base_url", "At most 200 characters.")
    if provider in NEEDS_OWN_ENDPOINT:
        if not base_url:
            refuse("base_url", f"Required for provider {provider}.")
        if not model_name:
            refuse("model_name", f"Required for provider {provider}.")
    if isinstance(values["api_key"], str) and len(values["api_key"]) > MAX_KEY_LENGTH:
        refuse("api_key", f"At most {MAX_KEY_LENGTH} characters.")

    _number_in(errors, "temperature", values["temperature"], 0, 2)
    for name, low, high in (
        ("max_tokens", 1, MAX_TOKENS),
        ("timeout_seconds", MIN_TIMEOUT_S, MAX_TIMEOUT_S),
    ):
        if isinstance(values[name], bool) or not isinstance(values[name], int):
            refuse(name, "Must be an integer.")
        else:
            _number_in(errors, name, values[name], low, high)
    if not isinstance(values["enabled"], bool):
        refuse("enabled", "Must be true or false.")
    mode = values["output_mode"]
    if mode not in OutputMode.values:
        refuse("output_mode", f"One of {', '.join(OutputMode.values)}.")
    elif (
        mode == OutputMode.JSON_SCHEMA
        and provider in PROVIDERS
        and not PROVIDERS[provider].json_schema
    ):
        refuse("output_mode", f"Provider {provider} cannot decode under a JSON schema.")

    cutoff = values["training_cutoff"]
    if cutoff is not None and (isinstance(cutoff, datetime) or not isinstance(cutoff, date)):
        refuse("training_cutoff", "Must be a date or null.")

    if errors:
        raise ValidationError(fields=errors)
    return values


def _unknown(data: Mapping[str, Any]) -> None:
    unknown = set(data) - set(FIELDS)
    if unknown:
        raise ValidationError(fields={name: ["Unknown field."] for name in sorted(unknown)})


def _owned(owner: AbstractBaseUser, ai_model_id: int) -> AIModel:
    model = AIModel.objects.filter(owner=owner, pk=ai_model_id).first()
    if model is None:
        raise NotFound("AI model not found.")
    return model


def ai_model_create(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> AIModel:
    """Create an AI model from ``data`` (unset fields take the model defaults)."""
    _unknown(data)
    defaults = {name: AIModel._meta.get_field(name).get_default() for name in FIELDS}
    if "training_cutoff" not in data:
        defaults["training_cutoff"] = default_training_cutoff(
            str(data.get("provider", "")), str(data.get("model_name") or "")
        )
    values = _clean({**defaults, **data})
    return AIModel.objects.create(owner=owner, **values)


def ai_model_update(
    *, owner: AbstractBaseUser, ai_model_id: int, changes: Mapping[str, Any]
) -> AIModel:
    """Change the fields in ``changes``; an ``api_key`` of ``""`` removes the key."""
    _unknown(changes)
    model = _owned(owner, ai_model_id)
    values = _clean({**{name: getattr(model, name) for name in FIELDS}, **changes})
    for name, value in values.items():
        setattr(model, name, value)
    model.save()
    return model


def _seated_by(schedule: Schedule) -> set[int]:
    """Return the ids of the AI models a schedule seats: its seats' own, its mode's and
    its role-to-model map's."""
    own = {seat.get("ai_model") for seat in schedule.participants if isinstance(seat, dict)}
    return {*own, *schedule.mode_models, *schedule.role_model_map.values()} - {None}


def ai_model_delete(*, owner: AbstractBaseUser, ai_model_id: int) -> None:
    """Delete an AI model unless a debate or a schedule seats it (409 ``conflict``)."""
    model = _owned(owner, ai_model_id)
    scheduled = [
        schedule.name
        for schedule in Schedule.objects.filter(owner=owner).only(
            "name", "participants", "mode_models", "role_model_map"
        )
        if model.pk in _seated_by(schedule)
    ]
    if scheduled:
        raise Conflict(
            f"AI model {model.name!r} is seated by schedule(s) {', '.join(scheduled)}; "
            "change or delete them first."
        )
    try:
        with transaction.atomic():
            model.delete()
    except (ProtectedError, IntegrityError) as exc:
        raise Conflict(
            f"AI model {model.name!r} is seated in debates; delete those debates first."
        ) from exc
