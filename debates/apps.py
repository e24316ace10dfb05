from django.apps import AppConfig


class DebatesConfig(AppConfig):
    name = "debates"

    def ready(self) -> None:
        from debates import receivers  # noqa: F401  (the rows a debate shows)
