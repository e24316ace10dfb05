"""Routes of strategies, under ``/api/``."""

from strategies import apis

urlpatterns = [
    *apis.STRATEGIES.urls(),
]
