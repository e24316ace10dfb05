from django.apps import AppConfig


class OpsConfig(AppConfig):
    """Health and metrics: ``/healthz``, ``/readyz``, ``/metrics`` and beat's heartbeat."""

    name = "ops"
    verbose_name = "Operations"
