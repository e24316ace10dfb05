"""A user's own objects over the API: list, create, read, change and delete them.

AI models, strategies, traders and schedules have the same five operations; each
declares once what they need, as a ``Resource``: its model, names, serializers and
services. ``Resource.urls`` gives its two routes, each operation its own API class
(``AIModelListApi``, ``AIModelCreateApi``, ...) with its own operation id in the
OpenAPI schema. Every operation is scoped to the requesting user (another user's
object is a 404); the services validate what they are given, so a handler passes the
body on and serialises the result. A resource's other operations (a schedule's pause,
a trader's positions) are API classes of their own module.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from django.db.models import Model, QuerySet
from django.urls import URLPattern, path
from django.utils.text import capfirst
from drf_spectacular.utils import OpenApiExample, extend_schema, extend_schema_view
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.settings import api_settings

from arena.apis import JsonApi, combine, error_responses, paginated_response
from arena.inputs import validate
from arena.queries import owned_or_404


@dataclass(frozen=True)
class Resource:
    """What the five operations on one kind of a user's objects need.

    ``route``: the collection's path and URL name, the operations' tag and, with ``-``
    as ``_``, their operation ids' prefix (``ai-models``: ``ai_models_list``, ...);
    ``name``: the URL name of one object, whose id is the path parameter ``lookup``
    (``ai-model``: ``ai_model_id``).
    The services are called ``create(owner=, data=)``, ``update(owner=, <lookup>=,
    changes=)`` and ``delete(owner=, <lookup>=)``; ``docs`` describes each of the three;
    ``example`` is a create's body, shown in the schema. ``owned`` returns a user's
    objects (default: those the user owns); ``filters``, the list's query parameters.
    """

    model: type[Model]
    route: str
    name: str
    input: type[serializers.Serializer]
    output: type[serializers.Serializer]
    create: Callable[..., Model]
    update: Callable[..., Model]
    delete: Callable[..., None]
    docs: Mapping[str, str]
    example: Mapping[str, Any]
    owned: Callable[[Any], QuerySet] | None = None
    filters: type[serializers.Serializer] | None = None
    create_errors: tuple[int, ...] = (400,)
    delete_errors: tuple[int, ...] = (404, 409)

    @property
    def lookup(self) -> str:
        """Return the path parameter naming one object."""
        return f"{self.name.replace('-', '_')}_id"

    def objects(self, user: Any) -> QuerySet:
        """Return the objects of ``user``."""
        if self.owned is not None:
            return self.owned(user)
        return self.model.objects.filter(owner=user)

    def urls(self) -> list[URLPattern]:
        """Return the routes of the collection and of one object."""
        listed, created, shown, changed, deleted = (
            self._api(base) for base in (ListApi, CreateApi, DetailApi, UpdateApi, DeleteApi)
        )
        return [
            path(self.route, combine(listed, created), name=self.route),
            path(
                f"{self.route}/<int:{self.lookup}>",
                combine(shown, changed, deleted),
                name=self.name,
            ),
        ]

    def _api(self, base: type[OwnedApi]) -> type[OwnedApi]:
        """Return the API class of the operation ``base`` serves, documented."""
        name = f"{self.model.__name__}{base.__name__}"
        api = type(name, (base,), {"resource": self, "__module__": self.output.__module__})
        schema = extend_schema(
            operation_id=f"{self.route.replace('-', '_')}_{base.operation}",
            tags=[self.route],
            **base.schema_of(self),
        )
        return extend_schema_view(**{base.method: schema})(api)


class OwnedApi(JsonApi):
    """One operation on a resource, ``operation`` in its operation id: ``method`` serves
    it; ``schema_of`` documents it."""

    resource: ClassVar[Resource]
    method: ClassVar[str]
    operation: ClassVar[str]

    @staticmethod
    def schema_of(resource: Resource) -> dict[str, Any]:
        """Return the description, request, parameters and responses of the operation."""
        raise NotImplementedError


class ListApi(OwnedApi):
    """List the user's objects, newest first (a page of them)."""

    method, operation = "get", "list"
    pagination_class = api_settings.DEFAULT_PAGINATION_CLASS

    @staticmethod
    def schema_of(resource: Resource) -> dict[str, Any]:
        filtered = resource.filters is not None
        return {
            "description": f"List the user's {resource.model._meta.verbose_name_plural}, "
            "newest first.",
            "parameters": [resource.filters] if filtered else None,
            "responses": {
                200: resource.output(many=True),
                **error_responses(*((400, 404) if filtered else (404,))),
            },
        }

    def get(self, request: Request) -> Response:
        filters = self.resource.filters
        given = validate(filters, request.query_params) if filters is not None else {}
        objects = self.resource.objects(request.user).filter(**given)
        return paginated_response(
            request=request,
            view=self,
            queryset=objects.order_by("-created_at", "-id"),
            serializer_class=self.resource.output,
        )


class CreateApi(OwnedApi):
    """Create an object: 201 with it."""

    method, operation = "post", "create"

    @staticmethod
    def schema_of(resource: Resource) -> dict[str, Any]:
        return {
            "description": resource.docs["create"],
            "request": resource.input,
            "examples": [
                OpenApiExample(
                    capfirst(resource.model._meta.verbose_name),
                    value=dict(resource.example),
                    request_only=True,
                )
            ],
            "responses": {201: resource.output, **error_responses(*resource.create_errors)},
        }

    def post(self, request: Request) -> Response:
        obj = self.resource.create(owner=request.user, data=request.data)
        return Response(self.resource.output(obj).data, status=status.HTTP_201_CREATED)


class DetailApi(OwnedApi):
    """Return one of the user's objects."""

    method, operation = "get", "retrieve"

    @staticmethod
    def schema_of(resource: Resource) -> dict[str, Any]:
        return {
            "description": f"Return one {resource.model._meta.verbose_name}.",
            "responses": {200: resource.output, **error_responses(404)},
        }

    def get(self, request: Request, **lookup: int) -> Response:
        resource = self.resource
        label = capfirst(resource.model._meta.verbose_name)
        obj = owned_or_404(resource.objects(request.user), lookup[resource.lookup], label)
        return Response(resource.output(obj).data)


class UpdateApi(OwnedApi):
    """Change some fields of one of the user's objects."""

    method, operation = "patch", "partial_update"

    @staticmethod
    def schema_of(resource: Resource) -> dict[str, Any]:
        return {
            "description": resource.docs["partial_update"],
            "request": resource.input,
            "responses": {200: resource.output, **error_responses(400, 404)},
        }

    def patch(self, request: Request, **lookup: int) -> Response:
        obj = self.resource.update(owner=request.user, changes=request.data, **lookup)
        return Response(self.resource.output(obj).data)


class DeleteApi(OwnedApi):
    """Delete one of the user's objects: 204."""

    method, operation = "delete", "destroy"

    @staticmethod
    def schema_of(resource: Resource) -> dict[str, Any]:
        return {
            "description": resource.docs["destroy"],
            "responses": {204: None, **error_responses(*resource.delete_errors)},
        }

    def delete(self, request: Request, **lookup: int) -> Response:
        self.resource.delete(owner=request.user, **lookup)
        return Response(status=status.HTTP_204_NO_CONTENT)
