"""A backtest as stored, for tests that need its row and not its run."""

from __future__ import annotations

from datetime import UTC, datetime

import factory

from backtests.models import Backtest
from tests.strategies.factories import OnAStrategyFactory


class BacktestFactory(OnAStrategyFactory):
    """A pending backtest of one day at 4h (six steps) from 1 August 2024; nothing runs it."""

    class Meta:
        model = Backtest

    name = factory.Sequence(lambda n: f"Backtest {n}")
    start = datetime(2024, 8, 1, tzinfo=UTC)
    end = datetime(2024, 8, 2, tzinfo=UTC)
    interval_minutes = 240
    horizon_minutes = 240
    steps_total = 6
