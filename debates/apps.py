from django.apps import AppConfig


class DebatesConfig(AppConfig):
    name = "debates"

    def ready(self) -> None:
        from debates import (  # noqa: F401  (connect their receivers)
            receivers,  # the rows a debate shows
            step_log,  # the step log, to the task signals
        )
