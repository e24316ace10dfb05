"""Routes of backtests, under ``/api/``."""

from django.urls import path

from arena.apis import combine
from backtests import apis, streams

urlpatterns = [
    path("backtests", combine(apis.BacktestListApi, apis.BacktestCreateApi), name="backtests"),
    path(
        "backtests/<int:backtest_id>",
        combine(apis.BacktestDetailApi, apis.BacktestDeleteApi),
        name="backtest",
    ),
    path(
        "backtests/<int:backtest_id>/cancel",
        apis.BacktestCancelApi.as_view(),
        name="backtest-cancel",
    ),
    path(
        "backtests/<int:backtest_id>/ledger",
        apis.BacktestLedgerApi.as_view(),
        name="backtest-ledger",
    ),
    path(
        "backtests/<int:backtest_id>/calibration",
        apis.BacktestCalibrationApi.as_view(),
        name="backtest-calibration",
    ),
    path(
        "backtests/<int:backtest_id>/monitors",
        apis.BacktestMonitorsApi.as_view(),
        name="backtest-monitors",
    ),
    path("backtests/<int:backtest_id>/stream", streams.backtest_stream, name="backtest-stream"),
]
