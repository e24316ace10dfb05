"""URL configuration: the admin, the REST API under ``/api/``, and the arena page."""

from django.contrib import admin
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from arena.apis import TokenObtainApi

api_patterns = [
    path("auth/token", TokenObtainApi.as_view(), name="auth-token"),
    path("schema/", SpectacularAPIView.as_view(), name="schema"),
    path("docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    path("", include("debates.urls")),
    path("", include("strategies.urls")),
    path("", include("traders.urls")),
    path("", include("backtests.urls")),
]

urlpatterns = [
    path("admin/", admin.site.urls),
    path("api/", include(api_patterns)),
    path("", include("web.urls")),
]

handler404 = "arena.apis.page_not_found"
handler500 = "arena.apis.server_error"
