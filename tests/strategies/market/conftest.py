"""Fixtures for the market-data tests: the fake exchange and pool servers, and CSV readers."""

from __future__ import annotations

import csv
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from strategies.market.builder import SnapshotSpec, build_snapshot
from strategies.market.dataset import DATASET_SYMBOLS, DatasetSource
from strategies.market.snapshot import TIMEFRAMES, MarketSnapshot
from tests.fakes.exchange_server import FakeExchange
from tests.fakes.pool_server import FakePool

DATA_DIR = Path(__file__).resolve().parents[3] / "strategies" / "data" / "market"
# An instant inside every window that is not on a candle boundary.
MID_WINDOW = datetime(2024, 9, 1, 12, 7, 30, tzinfo=UTC)


def dataset_snapshot(*coins: tuple[str, str], **spec: Any) -> MarketSnapshot:
    """Build from the bundled dataset a snapshot of ``coins``, (coin, chosen by) pairs,
    ``spec`` giving the rest of its ``SnapshotSpec``."""
    return build_snapshot(SnapshotSpec(coins=coins, **spec), DatasetSource())


def every_coin_spec(rows: int, as_of: datetime) -> SnapshotSpec:
    """Return the spec of a snapshot of every dataset coin on every timeframe at ``as_of``,
    without open interest (which the dataset has not)."""
    return SnapshotSpec(
        coins=tuple((symbol, "static") for symbol in DATASET_SYMBOLS),
        timeframes=TIMEFRAMES,
        rows=rows,
        include_open_interest=False,
        as_of=as_of,
    )


def read_rows(symbol: str, timeframe: str) -> list[list[str]]:
    """Return the rows of a dataset candle CSV as strings, read without our own code."""
    with (DATA_DIR / f"{symbol}-{timeframe}.csv").open(newline="") as handle:
        reader = csv.reader(handle)
        next(reader)
        return list(reader)


def read_funding(symbol: str) -> list[tuple[int, float]]:
    """Return (settlement ms, rate) pairs of a dataset funding CSV."""
    with (DATA_DIR / f"{symbol}-funding-8h.csv").open(newline="") as handle:
        reader = csv.reader(handle)
        next(reader)
        return [(int(timestamp), float(rate)) for timestamp, rate in reader]


@pytest.fixture
def fake_exchange() -> Iterator[FakeExchange]:
    """A fake Binance USDT-M server at MID_WINDOW, so live code runs without the internet."""
    with FakeExchange(MID_WINDOW) as fake:
        yield fake


@pytest.fixture
def fake_pool() -> Iterator[FakePool]:
    """A fake coin-pool endpoint; each test sets what it answers."""
    with FakePool() as pool:
        yield pool
