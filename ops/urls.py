"""The operators' endpoints, at the root of the site: probes and Prometheus expect them
there, outside the versioned REST API."""

from django.urls import path

from ops.apis import healthz, metrics_view, readyz

urlpatterns = [
    path("healthz", healthz, name="healthz"),
    path("readyz", readyz, name="readyz"),
    path("metrics", metrics_view, name="metrics"),
]
