from django.apps import AppConfig


class TradersConfig(AppConfig):
    name = "traders"

    def ready(self) -> None:
        # A debate's decisions show their executions as trading represents them; the
        # debates app, below this one, imports nothing of trading. A trader deleted
        # moves its owner's channel version (``traders.receivers``).
        from debates.serializers import execution_representation_register
        from traders import receivers  # noqa: F401
        from traders.serializers import ExecutionSerializer

        execution_representation_register(lambda execution: ExecutionSerializer(execution).data)
