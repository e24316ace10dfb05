"""Project-wide middleware: every error under ``/api/`` answers in the one JSON shape.

DRF renders the errors of its own views. What reaches a client from elsewhere (a URL
that matches no route, a method a plain view does not have, a CSRF refusal, Django's
debug pages, an unhandled error) is an HTML page or an empty body: this middleware
turns each into ``{"code", "message", "fields"}`` with the same status and headers.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from http import HTTPStatus

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase

API_PREFIX = "/api/"
JSON = "application/json"

_CODES = {
    400: ("bad_request", "The request could not be read."),
    401: ("not_authenticated", "Authentication credentials were not provided."),
    403: ("permission_denied", "You do not have permission to perform this action."),
    404: ("not_found", "Not found."),
    405: ("method_not_allowed", "This method is not allowed here."),
    413: ("body_too_large", "The request body is too large."),
    429: ("throttled", "Too many requests; try again later."),
    500: ("server_error", "The server failed; the error was logged."),
}


def error_body(status: int) -> bytes:
    """Return the JSON error body this middleware answers for ``status``."""
    code, message = _CODES.get(status, ("error", HTTPStatus(status).phrase + "."))
    return json.dumps({"code": code, "message": message, "fields": {}}).encode()


def _as_json(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    if (
        response.status_code < 400
        or not request.path.startswith(API_PREFIX)
        or response.streaming
        or response.get("Content-Type", "").startswith(JSON)
    ):
        return response
    response.content = error_body(response.status_code)
    response["Content-Type"] = JSON
    # CommonMiddleware, further in, set the length of the body replaced here; a server
    # sends the header as it is and refuses, or cuts, a body of another length.
    response["Content-Length"] = str(len(response.content))
    return response


class ApiErrorsAsJson:
    """Answer every error under ``/api/`` as ``{"code", "message", "fields"}``."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable) -> None:
        self.get_response = get_response
        if iscoroutinefunction(get_response):
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> HttpResponseBase | Awaitable[HttpResponseBase]:
        if iscoroutinefunction(self):
            return self._acall(request)
        return _as_json(request, self.get_response(request))

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        return _as_json(request, await self.get_response(request))
