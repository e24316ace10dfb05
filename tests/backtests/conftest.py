"""Fixtures for backtests: a strategy on the dataset, models on the fake model server,
and backtests made through the service."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from backtests.events import backtest_channel
from backtests.models import Backtest
from backtests.services import BacktestInput, backtest_create
from debates.models import ModelPrice
from debates.services.costs import prices_forget
from tests.debates.conftest import llm, wait_for  # noqa: F401 (the fake model server)
from tests.debates.events_helpers import stored_events
from tests.debates.factories import FakeLLMModelFactory
from tests.strategies.factories import StrategyFactory

# 1h and 4h candles: a replay of this strategy may start on 2024-05-08 at 12:00, once 12
# hourly candles have closed; the default strategy's 15m timeframe would hold it to
# 5 August, where the 15m candles begin.
TIMEFRAMES = ["1h", "4h"]
# USD per million tokens of the fake server's model (``priced``), input and output.
PRICE = (Decimal("0.5"), Decimal("1.5"))


@pytest.fixture
def strategy(user):
    """A strategy of ``user`` on the dataset: BTC, ETH and SOL on 1h and 4h candles."""
    return StrategyFactory(owner=user, timeframes=TIMEFRAMES)


@pytest.fixture
def fake_models(user, llm) -> Callable[[int], list]:  # noqa: F811
    """Make ``n`` AI models of ``user`` answering from the fake model server."""

    def make(n: int = 3) -> list:
        return FakeLLMModelFactory.create_batch(n, owner=user, llm=llm)

    return make


@pytest.fixture
def make_backtest(user, strategy, fake_models) -> Callable[..., Backtest]:
    """Create (and so start) a backtest of ``user`` whose debates call the fake server,
    seating new models unless ``models`` are given."""

    def make(
        personalities=("bull", "bear", "analyst"),
        start=datetime(2024, 8, 4, 12, tzinfo=UTC),
        end=datetime(2024, 8, 7, 12, tzinfo=UTC),
        interval_minutes=240,
        models=None,
        **fields: Any,
    ) -> Backtest:
        models = models or fake_models(len(personalities))
        data = BacktestInput(
            name="Scripted backtest",
            strategy=fields.pop("strategy", strategy.pk),
            participants=[
                {"ai_model": model.pk, "personality": personality}
                for model, personality in zip(models, personalities, strict=True)
            ],
            symbol=fields.pop("symbol", "BTCUSDT"),
            max_rounds=fields.pop("max_rounds", 2),
            start=start,
            end=end,
            interval_minutes=interval_minutes,
            **fields,
        )
        return backtest_create(owner=user, data=data)

    return make


def wait_until_done(backtest_id: int, timeout: float = 120.0) -> Backtest:
    """Wait for a backtest to end and return it."""
    wait_for(
        lambda: Backtest.objects.get(pk=backtest_id).status in ("completed", "failed", "cancelled"),
        timeout=timeout,
        every=0.1,
    )
    return Backtest.objects.get(pk=backtest_id)


def published(backtest_id: int) -> list[tuple[str, Any]]:
    """Return every stored event of a backtest's channel, oldest first, as (type, data)."""
    return stored_events(backtest_channel(backtest_id))


@pytest.fixture
def priced(db):
    """The fake server's model priced, so that its calls cost USD; the price table is read
    afresh by every process."""
    ModelPrice.objects.create(
        provider="openai_compatible",
        model_name="fake-model",
        input_usd_per_mtok=PRICE[0],
        cached_input_usd_per_mtok=Decimal("0.05"),
        output_usd_per_mtok=PRICE[1],
    )
    prices_forget()
    yield
    prices_forget()
