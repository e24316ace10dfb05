from django.apps import AppConfig


class OpsConfig(AppConfig):
    """Health and metrics: ``/healthz``, ``/readyz``, ``/metrics`` and beat's heartbeat."""

    name = "ops"
    verbose_name = "Operations"

    def ready(self) -> None:
        from ops import receivers  # noqa: F401  (beat's heartbeat as beat sends it)
