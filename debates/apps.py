from django.apps import AppConfig


class DebatesConfig(AppConfig):
    name = "debates"

    def ready(self) -> None:
        from debates import step_log  # noqa: F401  (connects the step log to the task signals)
