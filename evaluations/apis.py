"""The evaluation endpoints: the debate-effect ledger, the calibration of voters and the
monitors of their last decisions, of
one strategy, one schedule or all of the user's debates (a backtest's are under
``/api/backtests/{id}/``). Another user's strategy or schedule is a 404."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework.request import Request
from rest_framework.response import Response

from arena.apis import JsonApi, error_responses
from arena.queries import owned_or_404
from debates.models import Schedule
from evaluations import selectors
from evaluations.serializers import (
    CalibrationSerializer,
    LedgerSerializer,
    MonitorsSerializer,
)
from strategies.models import Strategy

TAGS = ["evaluations"]


class ScopedApi(JsonApi):
    """An evaluation read of a scope of the user's debates; subclasses name the scope."""

    def scope(self, request: Request, **kwargs: Any) -> selectors.Scope:
        return selectors.Scope(owner_id=request.user.pk)


class LedgerMixin:
    def ledger(self, request: Request, **kwargs: Any) -> Response:
        return Response(selectors.ledger(self.scope(request, **kwargs)).to_dict())


class CalibrationMixin:
    def calibration(self, request: Request, **kwargs: Any) -> Response:
        return Response({"voters": selectors.calibration(self.scope(request, **kwargs))})


class MonitorsMixin:
    def monitors(self, request: Request, **kwargs: Any) -> Response:
        return Response(selectors.monitor_report(self.scope(request, **kwargs)))


class StrategyScoped(ScopedApi):
    def scope(self, request: Request, **kwargs: Any) -> selectors.Scope:
        strategy = owned_or_404(
            Strategy.objects.filter(owner=request.user), kwargs["strategy_id"], "Strategy"
        )
        return selectors.Scope(owner_id=request.user.pk, strategy_id=strategy.pk)


class ScheduleScoped(ScopedApi):
    def scope(self, request: Request, **kwargs: Any) -> selectors.Scope:
        schedule = owned_or_404(
            Schedule.objects.filter(owner=request.user), kwargs["schedule_id"], "Schedule"
        )
        return selectors.Scope(owner_id=request.user.pk, schedule_id=schedule.pk)


class LedgerApi(LedgerMixin, ScopedApi):
    """Return the debate-effect ledger of all the user's reviewed debates."""

    @extend_schema(
        operation_id="evaluations_ledger",
        tags=TAGS,
        responses={200: LedgerSerializer, **error_responses()},
    )
    def get(self, request: Request) -> Response:
        return self.ledger(request)


class CalibrationApi(CalibrationMixin, ScopedApi):
    """Return the calibration of every voter of the user's reviewed debates."""

    @extend_schema(
        operation_id="evaluations_calibration",
        tags=TAGS,
        responses={200: CalibrationSerializer, **error_responses()},
    )
    def get(self, request: Request) -> Response:
        return self.calibration(request)


class StrategyLedgerApi(LedgerMixin, StrategyScoped):
    """Return the debate-effect ledger of a strategy's reviewed debates."""

    @extend_schema(
        operation_id="strategies_ledger",
        tags=TAGS,
        responses={200: LedgerSerializer, **error_responses(404)},
    )
    def get(self, request: Request, strategy_id: int) -> Response:
        return self.ledger(request, strategy_id=strategy_id)


class StrategyCalibrationApi(CalibrationMixin, StrategyScoped):
    """Return the calibration of every voter of a strategy's reviewed debates."""

    @extend_schema(
        operation_id="strategies_calibration",
        tags=TAGS,
        responses={200: CalibrationSerializer, **error_responses(404)},
    )
    def get(self, request: Request, strategy_id: int) -> Response:
        return self.calibration(request, strategy_id=strategy_id)


class ScheduleLedgerApi(LedgerMixin, ScheduleScoped):
    """Return the debate-effect ledger of a schedule's reviewed debates."""

    @extend_schema(
        operation_id="schedules_ledger",
        tags=TAGS,
        responses={200: LedgerSerializer, **error_responses(404)},
    )
    def get(self, request: Request, schedule_id: int) -> Response:
        return self.ledger(request, schedule_id=schedule_id)


class ScheduleCalibrationApi(CalibrationMixin, ScheduleScoped):
    """Return the calibration of every voter of a schedule's reviewed debates."""

    @extend_schema(
        operation_id="schedules_calibration",
        tags=TAGS,
        responses={200: CalibrationSerializer, **error_responses(404)},
    )
    def get(self, request: Request, schedule_id: int) -> Response:
        return self.calibration(request, schedule_id=schedule_id)


class MonitorsApi(MonitorsMixin, ScopedApi):
    """Return the action mix, parse failures and warnings of the user's last debates."""

    @extend_schema(
        operation_id="evaluations_monitors",
        tags=TAGS,
        responses={200: MonitorsSerializer, **error_responses()},
    )
    def get(self, request: Request) -> Response:
        return self.monitors(request)


class StrategyMonitorsApi(MonitorsMixin, StrategyScoped):
    """Return the action mix, parse failures and warnings of a strategy's last debates."""

    @extend_schema(
        operation_id="strategies_monitors",
        tags=TAGS,
        responses={200: MonitorsSerializer, **error_responses(404)},
    )
    def get(self, request: Request, strategy_id: int) -> Response:
        return self.monitors(request, strategy_id=strategy_id)


class ScheduleMonitorsApi(MonitorsMixin, ScheduleScoped):
    """Return the action mix, parse failures and warnings of a schedule's last debates."""

    @extend_schema(
        operation_id="schedules_monitors",
        tags=TAGS,
        responses={200: MonitorsSerializer, **error_responses(404)},
    )
    def get(self, request: Request, schedule_id: int) -> Response:
        return self.monitors(request, schedule_id=schedule_id)
