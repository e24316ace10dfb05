"""AI model configurations: create, list, read, change, delete (SPEC 8).

The API key is write-only: a response shows only ``api_key_masked`` (``sk-...abcd``,
never more than a quarter of the key; see ``arena.fields.mask_secret``) and ``has_api_key``.
"""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from arena.apis import JsonApi, error_responses, owned_or_404, paginated_response
from arena.fields import mask_secret
from arena.inputs import (
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictFloatField,
    StrictIntegerField,
    StrictSerializer,
    requires_when,
    validate,
)
from debates.models import AIModel, OutputMode
from debates.providers.catalog import PROVIDERS
from debates.services.ai_models import ai_model_create, ai_model_delete, ai_model_update

TAGS = ["ai-models"]


class AIModelSerializer(serializers.ModelSerializer):
    # A plain string: empty means the provider's default, which is no URI.
    base_url = serializers.CharField(read_only=True)
    provider_name = serializers.SerializerMethodField()
    simulated = serializers.SerializerMethodField()
    api_key_masked = serializers.SerializerMethodField()
    has_api_key = serializers.SerializerMethodField()

    class Meta:
        model = AIModel
        fields = [
            "id",
            "name",
            "provider",
            "provider_name",
            "simulated",
            "model_name",
            "base_url",
            "api_key_masked",
            "has_api_key",
            "temperature",
            "max_tokens",
            "timeout_seconds",
            "output_mode",
            "training_cutoff",
            "enabled",
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


@extend_schema_serializer(component_name="AIModelInput")
class AIModelInputSerializer(StrictSerializer):
    schema_rules = (requires_when("provider", ["openai_compatible"], "base_url", "model_name"),)

    name = StrictCharField(max_length=100)
    provider = StrictChoiceField(choices=list(PROVIDERS))
    model_name = StrictCharField(
        required=False, allow_blank=True, max_length=100, help_text="Empty: the provider default."
    )
    base_url = StrictCharField(
        required=False,
        allow_blank=True,
        max_length=200,
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
    enabled = StrictBooleanField(required=False)


class AIModelListApi(JsonApi):
    """List the user's AI models, newest first."""

    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @extend_schema(
        operation_id="ai_models_list",
        tags=TAGS,
        responses={200: AIModelSerializer(many=True), **error_responses(404)},
    )
    def get(self, request: Request) -> Response:
        models = AIModel.objects.filter(owner=request.user).order_by("-created_at", "-id")
        return paginated_response(
            request=request, view=self, queryset=models, serializer_class=AIModelSerializer
        )


class AIModelCreateApi(JsonApi):
    """Create an AI model configuration."""

    InputSerializer = AIModelInputSerializer

    @extend_schema(
        operation_id="ai_models_create",
        tags=TAGS,
        request=AIModelInputSerializer,
        responses={201: AIModelSerializer, **error_responses(400)},
    )
    def post(self, request: Request) -> Response:
        data = validate(self.InputSerializer, request.data)
        model = ai_model_create(owner=request.user, data=data)
        return Response(AIModelSerializer(model).data, status=status.HTTP_201_CREATED)


class AIModelDetailApi(JsonApi):
    """Return one AI model."""

    @extend_schema(
        operation_id="ai_models_retrieve",
        tags=TAGS,
        responses={200: AIModelSerializer, **error_responses(404)},
    )
    def get(self, request: Request, ai_model_id: int) -> Response:
        model = owned_or_404(AIModel.objects.filter(owner=request.user), ai_model_id, "AI model")
        return Response(AIModelSerializer(model).data)


class AIModelUpdateApi(JsonApi):
    """Change some fields of an AI model; the others keep their values."""

    InputSerializer = AIModelInputSerializer

    @extend_schema(
        operation_id="ai_models_partial_update",
        tags=TAGS,
        request=AIModelInputSerializer,
        responses={200: AIModelSerializer, **error_responses(400, 404)},
    )
    def patch(self, request: Request, ai_model_id: int) -> Response:
        changes: dict[str, Any] = validate(self.InputSerializer, request.data, partial=True)
        model = ai_model_update(owner=request.user, ai_model_id=ai_model_id, changes=changes)
        return Response(AIModelSerializer(model).data)


class AIModelDeleteApi(JsonApi):
    """Delete an AI model no debate or schedule seats (409 ``conflict`` otherwise)."""

    @extend_schema(
        operation_id="ai_models_destroy",
        tags=TAGS,
        responses={204: None, **error_responses(404, 409)},
    )
    def delete(self, request: Request, ai_model_id: int) -> Response:
        ai_model_delete(owner=request.user, ai_model_id=ai_model_id)
        return Response(status=status.HTTP_204_NO_CONTENT)
