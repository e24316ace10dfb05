"""AI model configurations: create, list, read, change, delete (SPEC 8).

The API key is write-only: a response shows only ``api_key_masked`` (``sk-...abcd``,
never more than a quarter of the key; see ``arena.fields.mask_secret``) and ``has_api_key``.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from django.utils import timezone
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from arena.apis import JsonApi, error_responses
from arena.crud import Resource
from arena.fields import mask_secret
from arena.inputs import CHANGE_RULES, shown_fields
from debates.models import AIModel
from debates.providers.catalog import PROVIDERS, lifecycle
from debates.services.ai_models import (
    AIModelInputSerializer,
    ai_model_create,
    ai_model_delete,
    ai_model_update,
)
from debates.services.checks import ai_model_check


class AIModelSerializer(serializers.ModelSerializer):
    # A plain string: empty means the provider's default, which is no URI.
    base_url = serializers.CharField(read_only=True)
    provider_name = serializers.SerializerMethodField()
    simulated = serializers.SerializerMethodField()
    api_key_masked = serializers.SerializerMethodField()
    has_api_key = serializers.SerializerMethodField()
    catalogue = serializers.SerializerMethodField(
        help_text="The model's standing in the catalogue today: status (active, deprecated, "
        "retired), shutdown date, replacement, and the warning to show."
    )

    class Meta:
        model = AIModel
        fields = [
            "id",
            *shown_fields(AIModelInputSerializer),
            "provider_name",
            "simulated",
            "api_key_masked",
            "has_api_key",
            "catalogue",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields

    def get_provider_name(self, obj: AIModel) -> str:
        return PROVIDERS[obj.provider].display_name if obj.provider in PROVIDERS else ""

    def get_simulated(self, obj: AIModel) -> bool:
        return obj.provider == "simulated"

    def get_api_key_masked(self, obj: AIModel) -> str:
        return mask_secret(obj.api_key)

    def get_has_api_key(self, obj: AIModel) -> bool:
        return bool(obj.api_key)

    def get_catalogue(self, obj: AIModel) -> dict[str, Any]:
        stands = lifecycle(obj.provider, obj.model_name, timezone.localdate())
        return {**dataclasses.asdict(stands), "shutdown": stands.shutdown}


AI_MODELS = Resource(
    model=AIModel,
    route="ai-models",
    name="ai-model",
    input=AIModelInputSerializer,
    output=AIModelSerializer,
    create=ai_model_create,
    update=ai_model_update,
    delete=ai_model_delete,
    example={"name": "Simulated", "provider": "simulated"},
    docs={
        "create": "Create an AI model configuration.\n\nRules the schema cannot state "
        "(400 naming the field): capabilities name efforts the model takes (a turn or "
        "brief effort among the efforts, as the catalogue and the override give them; a "
        "reasoning default among its efforts); a json_schema output mode is one the "
        "provider's model can decode under; a base URL's host is one the outbound policy "
        "lets the service call (no internal address unless an operator allows it).",
        "partial_update": "Change some fields of an AI model; the others keep their values."
        f"\n\n{CHANGE_RULES} The create's rules the schema cannot state apply too.",
        "destroy": "Delete an AI model no debate or schedule seats (409 ``conflict`` otherwise).",
    },
)


class VenueCheckSerializer(serializers.Serializer):
    """A connection check's outcome (an AI model's or a trader's): whether it passed,
    and one line saying why."""

    ok = serializers.BooleanField()
    message = serializers.CharField()


class AIModelCheckApi(JsonApi):
    """Check one of your AI models with one real call of a few tokens, sent with the
    parameters a debate's vote sends it: the answer says in one line whether it answers,
    or what the provider refused (the key, the model, a parameter)."""

    @extend_schema(
        operation_id="ai_models_check",
        tags=["ai-models"],
        request=None,
        responses={200: VenueCheckSerializer, **error_responses(404)},
    )
    def post(self, request: Request, ai_model_id: int) -> Response:
        outcome = ai_model_check(ai_model_id=ai_model_id, owner=request.user)
        return Response(VenueCheckSerializer(outcome).data)
