from django.apps import AppConfig


class ArenaConfig(AppConfig):
    """The project's own code shared by the apps (no models)."""

    name = "arena"
    verbose_name = "Arena"

    def ready(self) -> None:
        from django.contrib import admin

        from arena.auth import AdminLoginForm, connect_token_signals, mask_token_names

        connect_token_signals()
        admin.site.login_form = AdminLoginForm
        mask_token_names()
