"""Application errors and the one DRF exception handler that renders them.

Every error a client sees has the shape ``{"code", "message", "fields"}``. Services
raise ``ApplicationError`` subclasses; DRF's own exceptions are translated; anything
else stays a 500 and is logged by Django.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.http import Http404
from rest_framework import exceptions as drf_exceptions
from rest_framework import status
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


class ApplicationError(Exception):
    """A refusal with a stable ``code`` and an HTTP status, raised by services."""

    code = "error"
    status_code = status.HTTP_400_BAD_REQUEST
    default_message = "The request could not be completed."
    # Headers the answer carries (a 401's ``WWW-Authenticate``).
    headers: dict[str, str] = {}

    def __init__(self, message: str | None = None, *, fields: dict[str, Any] | None = None):
        self.message = message or self.default_message
        self.fields = fields or {}
        super().__init__(self.message)

    def as_dict(self) -> dict[str, Any]:
        """Return the error body."""
        return {"code": self.code, "message": self.message, "fields": self.fields}


class ValidationError(ApplicationError):
    """Bad input: ``fields`` maps each bad field to a list of messages."""

    code = "validation_error"
    default_message = "Invalid input."


class NotFound(ApplicationError):
    """The object does not exist or belongs to another user."""

    code = "not_found"
    status_code = status.HTTP_404_NOT_FOUND
    default_message = "Not found."


class InvalidState(ApplicationError):
    """The action is not allowed in the object's current state."""

    code = "invalid_state"
    status_code = status.HTTP_409_CONFLICT
    default_message = "This action is not allowed in the current state."


class Conflict(ApplicationError):
    """The request conflicts with stored data (an object in use, a duplicate)."""

    code = "conflict"
    status_code = status.HTTP_409_CONFLICT


_DRF_CODES = {
    drf_exceptions.NotAuthenticated: "not_authenticated",
    drf_exceptions.AuthenticationFailed: "authentication_failed",
    drf_exceptions.PermissionDenied: "permission_denied",
    drf_exceptions.NotFound: "not_found",
    drf_exceptions.MethodNotAllowed: "method_not_allowed",
    drf_exceptions.NotAcceptable: "not_acceptable",
    drf_exceptions.UnsupportedMediaType: "unsupported_media_type",
    drf_exceptions.Throttled: "throttled",
    drf_exceptions.ParseError: "parse_error",
    drf_exceptions.ValidationError: "validation_error",
}


def _flatten_detail(detail: Any) -> Any:
    """Turn DRF ``ErrorDetail`` trees into plain strings, lists and dicts."""
    if isinstance(detail, dict):
        return {str(key): _flatten_detail(value) for key, value in detail.items()}
    if isinstance(detail, list):
        return [_flatten_detail(item) for item in detail]
    return str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    """Render every handled error as ``{"code", "message", "fields"}``."""
    if isinstance(exc, ApplicationError):
        return Response(exc.as_dict(), status=exc.status_code, headers=exc.headers)
    if isinstance(exc, Http404):
        exc = drf_exceptions.NotFound()
    elif isinstance(exc, PermissionDenied):
        exc = drf_exceptions.PermissionDenied()

    response = drf_exception_handler(exc, context)
    if response is None or not isinstance(exc, drf_exceptions.APIException):
        return response

    code = next((c for cls, c in _DRF_CODES.items() if isinstance(exc, cls)), "error")
    if isinstance(exc, drf_exceptions.ValidationError):
        detail = _flatten_detail(exc.detail)
        fields = detail if isinstance(detail, dict) else {"non_field_errors": detail}
        body = {"code": code, "message": "Invalid input.", "fields": fields}
    else:
        body = {"code": code, "message": str(exc.detail), "fields": {}}
    response.data = body
    return response
