"""AI model configurations: create, list, read, change, delete (SPEC 8).

The API key is write-only: a response shows only ``api_key_masked`` (``sk-...abcd``,
never more than a quarter of the key; see ``arena.fields.mask_secret``) and ``has_api_key``.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from arena.apis import JsonApi, error_responses, owned_or_404, paginated_response
from arena.fields import mask_secret
from arena.inputs import shown_fields
from debates.models import AIModel
from debates.providers.catalog import PROVIDERS
from debates.services.ai_models import (
    AIModelInputSerializer,
    ai_model_create,
    ai_model_delete,
    ai_model_update,
)

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
            *shown_fields(AIModelInputSerializer),
            "provider_name",
            "simulated",
            "api_key_masked",
            "has_api_key",
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

    @extend_schema(
        operation_id="ai_models_create",
        tags=TAGS,
        request=AIModelInputSerializer,
        responses={201: AIModelSerializer, **error_responses(400)},
    )
    def post(self, request: Request) -> Response:
        model = ai_model_create(owner=request.user, data=request.data)
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

    @extend_schema(
        operation_id="ai_models_partial_update",
        tags=TAGS,
        request=AIModelInputSerializer,
        responses={200: AIModelSerializer, **error_responses(400, 404)},
    )
    def patch(self, request: Request, ai_model_id: int) -> Response:
        model = ai_model_update(owner=request.user, ai_model_id=ai_model_id, changes=request.data)
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
