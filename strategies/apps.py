from django.apps import AppConfig


class StrategiesConfig(AppConfig):
    name = "strategies"
