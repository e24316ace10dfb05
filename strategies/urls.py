"""Routes of strategies, under ``/api/``."""

from django.urls import path

from arena.apis import combine
from strategies import apis

urlpatterns = [
    path("strategies", combine(apis.StrategyListApi, apis.StrategyCreateApi), name="strategies"),
    path(
        "strategies/<int:strategy_id>",
        combine(apis.StrategyDetailApi, apis.StrategyUpdateApi, apis.StrategyDeleteApi),
        name="strategy",
    ),
]
