"""The replay clock: a debate with ``as_of`` executed on a paper trader fills at the price of
the debate's instant, the open of the first 15m candle at or after it, from ``run_debate``
and from the API alike, whatever an earlier debate left on the paper account's clock.

The expected prices are read from the bundled CSV files here, not through the project's
dataset code.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from debates.models import Debate
from tests.debates.conftest import wait_for, wait_until_finished
from tests.debates.factories import fake_llm_seats
from tests.strategies.factories import StrategyFactory
from tests.traders.factories import PositionFactory, TraderFactory
from traders.models import Execution, Trader

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

DATA = Path(settings.BASE_DIR) / "strategies" / "data" / "market"
NOON = datetime(2024, 8, 5, 12, tzinfo=UTC)


def open_at(symbol: str, instant: datetime) -> Decimal:
    """Return the open of the 15m candle of ``symbol`` opening at ``instant``, from its file."""
    stamp = str(int(instant.timestamp() * 1000))
    with (DATA / f"{symbol}-15m.csv").open(newline="") as handle:
        row = next(row for row in csv.DictReader(handle) if row["timestamp"] == stamp)
    return Decimal(row["open"])


def test_the_as_of_demo_fills_at_the_price_of_its_instant(celery_worker, user):
    # given the demo's paper account left by an earlier demo at the dataset's end, holding
    # a position
    earlier = TraderFactory(
        owner=user,
        name="Demo paper account",
        exchange="paper",
        replay_as_of=datetime(2024, 9, 5, tzinfo=UTC),
    )
    PositionFactory(trader=earlier, symbol="BTCUSDT", side="long")
    # when the demo replays 5 August at noon on ETH (the simulated models short it)
    out = io.StringIO()
    with contextlib.redirect_stderr(io.StringIO()):
        call_command(
            "run_debate",
            *("--as-of", "2024-08-05T12:00Z", "--rounds", "2", "--symbol", "ETH"),
            *("--user", user.username, "--json"),
            stdout=out,
        )
    detail = json.loads(out.getvalue())
    # then its short filled at the open of the 12:00 candle, on a paper account at noon
    primary = next(d for d in detail["decisions"] if d["is_primary"])
    assert (primary["symbol"], primary["action"]) == ("ETHUSDT", "open_short")
    execution = Execution.objects.get(pk=primary["execution"]["id"])
    assert (execution.status, execution.average_price) == ("filled", open_at("ETHUSDT", NOON))
    assert execution.average_price == Decimal("2290.6")
    assert execution.trader.replay_as_of == NOON
    # and the earlier account and its clock were left alone
    assert Trader.objects.get(pk=earlier.pk).replay_as_of == datetime(2024, 9, 5, tzinfo=UTC)


def test_a_debate_executed_through_the_api_fills_at_the_price_of_its_instant(
    celery_worker, api_client, user, llm
):
    # given a paper trader whose clock an earlier debate left at the dataset's end, flat
    trader = TraderFactory(
        owner=user, exchange="paper", replay_as_of=datetime(2024, 9, 5, tzinfo=UTC)
    )
    strategy = StrategyFactory(owner=user)
    created = api_client.post(
        "/api/debates",
        {
            "name": "BTC at noon",
            "strategy": strategy.pk,
            "symbol": "BTC",
            "max_rounds": 2,
            "participants": fake_llm_seats(user, llm),
            "as_of": "2024-08-05T12:00:00Z",
        },
        format="json",
    )
    assert created.status_code == 201, created.json()
    debate_id = created.json()["id"]
    assert api_client.post(f"/api/debates/{debate_id}/start").status_code == 200
    assert wait_until_finished(debate_id).status == "completed"
    # when its consensus (open_long, the fake models' answer) is executed through the API
    answer = api_client.post(
        f"/api/debates/{debate_id}/execute", {"trader": trader.pk}, format="json"
    )
    assert answer.status_code == 202, answer.json()
    execution_id = answer.json()["id"]
    wait_for(lambda: Execution.objects.get(pk=execution_id).status in ("filled", "failed"))
    # then it filled at the open of the 12:00 candle, the clock having gone back to noon
    execution = Execution.objects.get(pk=execution_id)
    assert (execution.status, execution.error) == ("filled", "")
    assert execution.average_price == open_at("BTCUSDT", NOON) == Decimal("51340.0")
    assert Trader.objects.get(pk=trader.pk).replay_as_of == NOON
    assert Debate.objects.get(pk=debate_id).as_of == NOON
