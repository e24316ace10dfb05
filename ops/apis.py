"""``/healthz``, ``/readyz`` and ``/metrics``: plain Django views, outside the REST API.

They run no REST framework authentication (a token lookup would touch the cache or
the database), and are sync views: under ASGI each runs in a thread of its own, so the
database and Redis reads of ``/readyz`` and ``/metrics`` never block the event loop.
"""

from __future__ import annotations

import hmac

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from ops.collectors import registry
from ops.readiness import readiness


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    """Answer 200 while the process serves requests; nothing else is touched."""
    return JsonResponse({"status": "ok"})


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    """Answer 200 with every check when all pass, else 503 naming those that failed."""
    checks = readiness()
    down = [check.name for check in checks if check.ok is False]
    body = {
        "status": "not ready" if down else "ready",
        "down": down,
        "checks": {check.name: {"ok": check.ok, "detail": check.detail} for check in checks},
    }
    return JsonResponse(body, status=503 if down else 200)


def _bearer_token(request: HttpRequest) -> str:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def metrics_access(request: HttpRequest) -> int:
    """Return the HTTP status ``request`` earns at ``/metrics``: 200 when the metrics
    are public, or it carries ``METRICS_TOKEN`` or a staff user's session; 403 for
    another user's session; 401 with neither, or with a wrong token."""
    if settings.METRICS_PUBLIC:
        return 200
    token = _bearer_token(request)
    if token:
        expected = settings.METRICS_TOKEN.encode()
        return 200 if expected and hmac.compare_digest(token.encode(), expected) else 401
    if request.user.is_authenticated:
        return 200 if request.user.is_staff else 403
    return 401


_REFUSALS = {
    401: ("not_authenticated", "Log in as staff, or send the metrics token."),
    403: ("permission_denied", "The metrics are for staff."),
}


@never_cache
@require_GET
def metrics_view(request: HttpRequest) -> HttpResponse:
    """Answer the metrics in Prometheus's text format (``ops.collectors``)."""
    status = metrics_access(request)
    if status != 200:
        code, message = _REFUSALS[status]
        response = JsonResponse({"code": code, "message": message}, status=status)
        if status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="metrics"'
        return response
    return HttpResponse(generate_latest(registry()), content_type=CONTENT_TYPE_LATEST)
