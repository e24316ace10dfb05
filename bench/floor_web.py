"""The floor of ``bench.api``: the project's URLs plus one plain Django view that returns
stored bytes, served by the same uvicorn and middleware as the API.

``bench.api`` stores the debate detail's rendering under a cache key; the floor answers
``GET /bench/floor/<key>`` with those bytes and nothing else (no authentication, no
query, no serialiser): what serving the detail cannot go below on this machine.
"""

from __future__ import annotations

from django.core.cache import cache
from django.http import HttpResponse, HttpResponseNotFound
from django.urls import include, path


def floor(request, key: str) -> HttpResponse:
    body = cache.get(f"bench-floor:{key}")
    if body is None:
        return HttpResponseNotFound()
    return HttpResponse(body, content_type="application/json")


urlpatterns = [
    path("bench/floor/<str:key>", floor),
    path("", include("arena.urls")),
]
