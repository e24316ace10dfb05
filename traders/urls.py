"""Routes of traders and what they hold, under ``/api/``."""

from django.urls import path

from arena.apis import combine
from traders import apis

urlpatterns = [
    path("traders", combine(apis.TraderListApi, apis.TraderCreateApi), name="traders"),
    path(
        "traders/<int:trader_id>",
        combine(apis.TraderDetailApi, apis.TraderUpdateApi, apis.TraderDeleteApi),
        name="trader",
    ),
    path(
        "traders/<int:trader_id>/positions",
        apis.TraderPositionListApi.as_view(),
        name="trader-positions",
    ),
    path("traders/<int:trader_id>/orders", apis.TraderOrderListApi.as_view(), name="trader-orders"),
    path(
        "traders/<int:trader_id>/executions",
        apis.TraderExecutionListApi.as_view(),
        name="trader-executions",
    ),
]
