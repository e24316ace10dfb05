from django.apps import AppConfig


class BacktestsConfig(AppConfig):
    name = "backtests"

    def ready(self) -> None:
        from backtests import receivers  # noqa: F401  (connects to the debates' signals)
