"""Routes of traders and what they hold, and of a debate's execution, under ``/api/``."""

from django.urls import path

from traders import apis, streams

urlpatterns = [
    # A debate's consensus executed on a trader: trading's operation on a debate.
    path(
        "debates/<int:debate_id>/execute",
        apis.DebateExecuteApi.as_view(),
        name="debate-execute",
    ),
    *apis.TRADERS.urls(),
    path(
        "traders/<int:trader_id>/positions",
        apis.TraderPositionListApi.as_view(),
        name="trader-positions",
    ),
    path("traders/<int:trader_id>/orders", apis.TraderOrderListApi.as_view(), name="trader-orders"),
    path("traders/<int:trader_id>/resume", apis.TraderResumeApi.as_view(), name="trader-resume"),
    path("traders/<int:trader_id>/check", apis.TraderCheckApi.as_view(), name="trader-check"),
    path(
        "traders/<int:trader_id>/reconcile",
        apis.TraderReconcileApi.as_view(),
        name="trader-reconcile",
    ),
    path(
        "traders/<int:trader_id>/history",
        apis.TraderHistoryListApi.as_view(),
        name="trader-history",
    ),
    path("traders/<int:trader_id>/stream", streams.trader_stream, name="trader-stream"),
    path(
        "executions/<int:execution_id>/approve",
        apis.ExecutionApproveApi.as_view(),
        name="execution-approve",
    ),
    path(
        "executions/<int:execution_id>/reject",
        apis.ExecutionRejectApi.as_view(),
        name="execution-reject",
    ),
    path(
        "traders/<int:trader_id>/executions",
        apis.TraderExecutionListApi.as_view(),
        name="trader-executions",
    ),
]
