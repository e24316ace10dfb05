"""What every API shares: JSON views, owned objects, pagination, error schemas.

Also the token endpoints. Errors that no DRF view renders (unknown URLs, unhandled
errors) are answered in the same shape by ``arena.middleware``; inputs are checked by
the serializers of ``arena.inputs``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib.auth import authenticate
from django.db.models import QuerySet
from drf_spectacular.utils import (
    OpenApiExample,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from arena.auth import token_expires_at, token_issue, token_revoke
from arena.exceptions import ApplicationError
from arena.inputs import StrictCharField, StrictSerializer, validate
from arena.parsers import JsonBodyParser

# --- Views --------------------------------------------------------------------------------


class JsonApi(APIView):
    """An API operation that reads JSON bodies only (no forms, no multipart), bounded in
    size and depth (``arena.parsers``)."""

    parser_classes = [JsonBodyParser]


View = TypeVar("View", bound=Callable[..., Any])


def documented_by(api: type[APIView]) -> Callable[[View], View]:
    """Return a decorator having the OpenAPI schema describe a plain Django view (one
    served outside DRF: a live stream) as the methods of ``api`` document it.

    drf-spectacular lists the routes whose view names its APIView class as ``cls``;
    ``api`` is that class for the schema alone, and never serves a request.
    """

    def mark(view: View) -> View:
        view.cls = api  # type: ignore[attr-defined]
        view.initkwargs = {}  # type: ignore[attr-defined]
        return view

    return mark


def paginated_response(
    *,
    request: Request,
    view: APIView,
    queryset: QuerySet,
    serializer_class: type[serializers.BaseSerializer],
) -> Response:
    """Return one page of ``queryset`` as ``{count, next, previous, results}``."""
    paginator = view.pagination_class()
    page = paginator.paginate_queryset(queryset, request, view=view)
    return paginator.get_paginated_response(serializer_class(page, many=True).data)


# --- Error bodies in the schema -----------------------------------------------------------


class ErrorSerializer(serializers.Serializer):
    """The body of every error answer."""

    code = serializers.CharField(help_text="A stable code, e.g. validation_error, not_found.")
    message = serializers.CharField(help_text="A sentence for people.")
    fields = serializers.DictField(
        child=serializers.ListField(child=serializers.CharField()),
        help_text="Each bad field (dotted, indexed: participants[0].ai_model) and its messages.",
    )


_ERROR_DESCRIPTIONS = {
    400: "Bad input: validation_error (fields name each bad field), parse_error, ...",
    401: "not_authenticated or authentication_failed (an unknown or expired token).",
    403: "permission_denied: the operation is staff's.",
    404: "not_found: no such object, or it belongs to another user.",
    409: "The state or stored data forbids it: invalid_state, conflict, ...",
    429: "A limit was reached: quota_exceeded (fields name the limit), too_many_attempts.",
    502: "exchange_error: the exchange could not be read, or refused; the message says why.",
}


def error_responses(*codes: int) -> dict[int, OpenApiResponse]:
    """Return the schema of the error answers ``codes`` (401 is always included)."""
    return {
        code: OpenApiResponse(ErrorSerializer, description=_ERROR_DESCRIPTIONS[code])
        for code in sorted({401, *codes})
    }


# --- Token --------------------------------------------------------------------------------


# The user of the documentation's sessions (docs/api.md).
TOKEN_EXAMPLE = {"username": "alice", "password": "s3cret-demo-pw"}


class InvalidCredentials(ApplicationError):
    """Credentials that do not log in: a 401 challenging for the API's token scheme,
    which a right pair obtains here."""

    code = "invalid_credentials"
    status_code = status.HTTP_401_UNAUTHORIZED
    default_message = "Unable to log in with the given username and password."
    headers = {"WWW-Authenticate": "Token"}


class TokenObtainApi(JsonApi):
    """Exchange a username and password for the user's API token and its expiry.

    A user name and password that do not log in (a wrong password, an unknown or an
    inactive user) are a 401 ``invalid_credentials``. Failed tries are counted per user
    name and address (``arena.auth``): past the limit, every try is a 429 with
    ``Retry-After`` until the cool-off has passed.
    """

    authentication_classes: list[type] = []
    permission_classes = [AllowAny]

    @extend_schema_serializer(component_name="TokenInput")
    class InputSerializer(StrictSerializer):
        username = StrictCharField(max_length=150)
        password = StrictCharField(max_length=128, trim_whitespace=False)

    @extend_schema_serializer(component_name="Token")
    class OutputSerializer(serializers.Serializer):
        token = serializers.CharField()
        expires_at = serializers.DateTimeField()

    @extend_schema(
        operation_id="auth_token_create",
        request=InputSerializer,
        examples=[OpenApiExample("Alice", value=TOKEN_EXAMPLE, request_only=True)],
        responses={
            200: OutputSerializer,
            400: OpenApiResponse(ErrorSerializer, description=_ERROR_DESCRIPTIONS[400]),
            401: OpenApiResponse(
                ErrorSerializer,
                description="invalid_credentials: the user name and password do not log in.",
            ),
            429: OpenApiResponse(ErrorSerializer, description=_ERROR_DESCRIPTIONS[429]),
        },
        auth=[],
    )
    def post(self, request: Request) -> Response:
        data = validate(self.InputSerializer, request.data)
        # Django's own request: django-axes marks it when the pair is locked out.
        user = authenticate(request._request, username=data["username"], password=data["password"])
        if user is None or not user.is_active:
            raise InvalidCredentials()
        token = token_issue(user=user)
        body = {"token": token.key, "expires_at": token_expires_at(token)}
        return Response(self.OutputSerializer(body).data)


class TokenRevokeApi(JsonApi):
    """Delete the user's API token: it opens nothing from now on."""

    @extend_schema(
        operation_id="auth_token_revoke", request=None, responses={204: None, **error_responses()}
    )
    def post(self, request: Request) -> Response:
        token_revoke(user=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


def combine(*apis: type[APIView]) -> Any:
    """Return one view serving the methods of several single-operation APIs on one URL.

    Each API class stays one operation (``DebateListApi`` for GET, ``DebateCreateApi``
    for POST); the URL ``/api/debates`` needs both.
    """
    name = "".join(api.__name__.removesuffix("Api") for api in apis) + "Api"
    return type(name, apis, {"__module__": apis[0].__module__}).as_view()
