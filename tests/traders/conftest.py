"""Fixtures for trading: the fake exchanges (Binance USDT-M, Bybit, OKX), traders,
decisions, a worker."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from decimal import Decimal

import pytest

from debates.models import Decision
from tests.debates.conftest import llm  # noqa: F401 (the fake model server, for whole debates)
from tests.debates.factories import DecisionFactory
from tests.fakes.bybit_server import FakeBybit
from tests.fakes.exchange_server import FakeExchange
from tests.fakes.okx_server import FakeOkx
from tests.traders.factories import TraderFactory
from traders.models import Trader

API_KEY = "fake-api-key-0123456789"
API_SECRET = "fake-api-secret-9876543210"
API_PASSPHRASE = "fake-passphrase-42"


@pytest.fixture
def fake_exchange(settings) -> Iterator[FakeExchange]:
    """A fake Binance USDT-M exchange checking our credentials; ccxt traders are sent to it.

    Its clock is the dataset's end (BTCUSDT at 57970.9) and its wallet holds 10,000 USDT.
    """
    with FakeExchange() as fake:
        fake.api_key, fake.api_secret = API_KEY, API_SECRET
        settings.TRADER_EXCHANGE_API_URL = fake.url
        yield fake


@pytest.fixture
def fake_bybit(settings) -> Iterator[FakeBybit]:
    """A fake Bybit v5 checking our key and signature; ccxt traders are sent to it.

    Its clock is the dataset's end (BTCUSDT at 57970.9); its unified account holds 10,000
    USDT in one-way mode.
    """
    with FakeBybit() as fake:
        fake.api_key, fake.api_secret = API_KEY, API_SECRET
        settings.TRADER_EXCHANGE_API_URL = fake.url
        yield fake


@pytest.fixture
def fake_okx(settings) -> Iterator[FakeOkx]:
    """A fake OKX v5 checking our key, passphrase and signature; ccxt traders are sent to it.

    Its clock is the dataset's end (BTCUSDT at 57970.9); its trading account holds 10,000
    USDT in ``net_mode``.
    """
    with FakeOkx() as fake:
        fake.api_key, fake.api_secret, fake.passphrase = API_KEY, API_SECRET, API_PASSPHRASE
        settings.TRADER_EXCHANGE_API_URL = fake.url
        yield fake


@pytest.fixture
def paper_trader(user) -> Trader:
    """A running paper trader of ``user`` on the dataset: 1,000 USDT, fee rate 0.04 %."""
    return TraderFactory(
        owner=user,
        exchange="paper",
        starting_balance=Decimal("1000"),
        balance=Decimal("1000"),
        fee_rate=Decimal("0.0004"),
        market_source="dataset",
    )


@pytest.fixture
def binance_trader(user, fake_exchange) -> Trader:
    """A running binanceusdm trader of ``user`` whose credentials the fake exchange accepts."""
    return TraderFactory(owner=user, exchange="binanceusdm", api_key=API_KEY, api_secret=API_SECRET)


@pytest.fixture
def bybit_trader(user, fake_bybit) -> Trader:
    """A running Bybit trader of ``user`` whose credentials the fake Bybit accepts."""
    return TraderFactory(owner=user, exchange="bybit", api_key=API_KEY, api_secret=API_SECRET)


@pytest.fixture
def okx_trader(user, fake_okx) -> Trader:
    """A running OKX trader of ``user`` whose credentials the fake OKX accepts."""
    return TraderFactory(
        owner=user,
        exchange="okx",
        api_key=API_KEY,
        api_secret=API_SECRET,
        api_passphrase=API_PASSPHRASE,
    )


@pytest.fixture
def make_decision(user) -> Callable[..., Decision]:
    """Build a decision of a completed debate of ``user`` (primary BTCUSDT open_long).

    ``as_of`` sets the debate's snapshot instant (``market_snapshot['as_of']``).
    """

    def make(as_of: str | None = None, debate=None, **fields) -> Decision:
        if debate is not None:
            return DecisionFactory(debate=debate, **fields)
        snapshot = {"as_of": as_of, "coins": []} if as_of else None
        return DecisionFactory(debate__owner=user, debate__market_snapshot=snapshot, **fields)

    return make
