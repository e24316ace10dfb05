"""URL configuration: the admin, the REST API under ``/api/``, the operators' health
and metrics endpoints, and the arena page."""

from csp.constants import UNSAFE_INLINE
from csp.decorators import csp_update
from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerSplitView

from arena.apis import TokenObtainApi, TokenRevokeApi

api_patterns = [
    path("auth/token", TokenObtainApi.as_view(), name="auth-token"),
    path("auth/token/revoke", TokenRevokeApi.as_view(), name="auth-token-revoke"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    # Swagger UI's page and its start-up script are two requests, so the page runs no
    # inline script; its template keeps an inline style block.
    path(
        "docs/",
        csp_update({"style-src": [UNSAFE_INLINE]})(
            SpectacularSwaggerSplitView.as_view(url_name="schema")
        ),
        name="docs",
    ),
    path("", include("debates.urls")),
    path("", include("strategies.urls")),
    path("", include("traders.urls")),
    path("", include("evaluations.urls")),
    path("", include("backtests.urls")),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include(api_patterns)),
    path("", include("ops.urls")),
    path("", include("web.urls")),
]
