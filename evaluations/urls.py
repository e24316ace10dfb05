"""Routes of evaluations, under ``/api/``."""

from django.urls import path

from evaluations import apis

urlpatterns = [
    path("evaluations/ledger", apis.LedgerApi.as_view(), name="ledger"),
    path("evaluations/calibration", apis.CalibrationApi.as_view(), name="calibration"),
    path("evaluations/monitors", apis.MonitorsApi.as_view(), name="monitors"),
    path(
        "strategies/<int:strategy_id>/monitors",
        apis.StrategyMonitorsApi.as_view(),
        name="strategy-monitors",
    ),
    path(
        "schedules/<int:schedule_id>/monitors",
        apis.ScheduleMonitorsApi.as_view(),
        name="schedule-monitors",
    ),
    path(
        "strategies/<int:strategy_id>/ledger",
        apis.StrategyLedgerApi.as_view(),
        name="strategy-ledger",
    ),
    path(
        "strategies/<int:strategy_id>/calibration",
        apis.StrategyCalibrationApi.as_view(),
        name="strategy-calibration",
    ),
    path(
        "schedules/<int:schedule_id>/ledger",
        apis.ScheduleLedgerApi.as_view(),
        name="schedule-ledger",
    ),
    path(
        "schedules/<int:schedule_id>/calibration",
        apis.ScheduleCalibrationApi.as_view(),
        name="schedule-calibration",
    ),
]
