from django.apps import AppConfig


class ArenaConfig(AppConfig):
    """The project's own code shared by the apps (no models)."""

    name = "arena"
    verbose_name = "Arena"

    def ready(self) -> None:
        from arena.auth import connect_token_signals

        connect_token_signals()
