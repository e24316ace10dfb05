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
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError
from drf_spectacular.utils import extend_schema_field, extend_schema_serializer
from rest_framework import serializers

from arena.exceptions import Conflict
from arena.inputs import (
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictFloatField,
    StrictIntegerField,
    StrictSerializer,
    UrlField,
    holds_nul,
    refuse,
    requires_when,
    validate,
)
from arena.queries import owned_or_404
from debates.models import AIModel, OutputMode, Schedule
from debates.providers.capabilities import SCHEMA as CAPABILITIES
from debates.providers.capabilities import CapabilityError, parse
from debates.providers.catalog import PROVIDERS, capabilities_for, default_training_cutoff

# Providers that need no base URL or model of their own: the catalog has defaults.
NEEDS_OWN_ENDPOINT = frozenset({"openai_compatible"})


@extend_schema_field(CAPABILITIES)
class CapabilitiesField(serializers.JSONField):
    """Overrides of a model's capabilities, in the catalogue's form."""


@extend_schema_serializer(component_name="AIModelInput")
class AIModelInputSerializer(StrictSerializer):
    model = AIModel
    schema_rules = (requires_when("provider", ["openai_compatible"], "base_url", "model_name"),)

    name = StrictCharField(max_length=100)
    provider = StrictChoiceField(choices=list(PROVIDERS))
    model_name = StrictCharField(
        required=False, allow_blank=True, max_length=100, help_text="Empty: the provider default."
    )
    base_url = UrlField(
        required=False,
        allow_blank=True,
        max_length=200,
        instead="put the key in api_key",
        help_text="http(s) URL; required for openai_compatible, else the provider default.",
    )
    api_key = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=500,
        write_only=True,
        help_text="Stored encrypted, never returned; on update an empty string removes it.",
    )
    temperature = StrictFloatField(required=False, min_value=0, max_value=2)
    max_tokens = StrictIntegerField(required=False, min_value=1, max_value=200_000)
    timeout_seconds = StrictIntegerField(required=False, min_value=1, max_value=180)
    output_mode = StrictChoiceField(
        choices=OutputMode.choices,
        required=False,
        help_text="json_schema: the server decodes the answer under the output contract's "
        "JSON schema (openai, gemini, grok, openai_compatible servers such as llama.cpp, "
        "vLLM and Ollama).",
    )
    training_cutoff = serializers.DateField(
        required=False,
        allow_null=True,
        help_text="The last day of the model's training data; default: the catalogue's, "
        "for the models it knows.",
    )
    capabilities = CapabilitiesField(
        required=False,
        help_text="Overrides of the catalogue's capabilities of the model, in the catalogue's "
        'form: {"temperature": "free" | "absent" | 1.0, "reasoning": {"param", "efforts", '
        '"default"}, "turn_effort", "brief_effort", "json_schema", "output_cap_param", '
        '"max_output", "reasoning_budget": {effort: tokens}, "usage": {"cached", "reasoning", '
        '"reasoning_in_completion"}}.',
    )
    enabled = StrictBooleanField(required=False)

    def validate_capabilities(self, value: object) -> dict[str, Any]:
        """Refuse an override the catalogue's rules refuse, naming the key at fault."""
        if not isinstance(value, dict):
            raise serializers.ValidationError("Must be an object.")
        if holds_nul(value):
            raise serializers.ValidationError("Null characters are not allowed.")
        try:
            parse(value)
        except CapabilityError as error:
            raise serializers.ValidationError(str(error)) from None
        return value

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Refuse a provider without the endpoint or the output mode it needs."""
        model = self.state(attrs)
        provider, errors = model["provider"], {}
        if provider in NEEDS_OWN_ENDPOINT:
            for name in ("base_url", "model_name"):
                if not model[name]:
                    refuse(errors, name, f"Required for provider {provider}.")
        caps = capabilities_for(provider, model["model_name"]).merged(model["capabilities"])
        if model["output_mode"] == OutputMode.JSON_SCHEMA and not caps.json_schema:
            refuse(errors, "output_mode", f"Provider {provider} cannot decode under a JSON schema.")
        if caps.unknown_effort():
            refuse(
                errors,
                "capabilities",
                f"{caps.unknown_effort()}: must be one of the model's efforts "
                f"({', '.join(caps.efforts) or 'none'}).",
            )
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


def ai_model_create(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> AIModel:
    """Create an AI model from ``data`` (unset fields take the model defaults)."""
    values = validate(AIModelInputSerializer, data)
    if "training_cutoff" not in values:
        values["training_cutoff"] = default_training_cutoff(
            values["provider"], values.get("model_name", "")
        )
    return AIModel.objects.create(owner=owner, **values)


def ai_model_update(
    *, owner: AbstractBaseUser, ai_model_id: int, changes: Mapping[str, Any]
) -> AIModel:
    """Change the fields in ``changes``; an ``api_key`` of ``""`` removes the key."""
    model = owned_or_404(AIModel.objects.filter(owner=owner), ai_model_id, "AI model")
    values = validate(AIModelInputSerializer, changes, instance=model, partial=True)
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
    model = owned_or_404(AIModel.objects.filter(owner=owner), ai_model_id, "AI model")
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
