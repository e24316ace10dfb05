"""Reconciliation as an operator meets it: on a worker's start, through the API, on the
trader's live stream."""

from __future__ import annotations

import time

import httpx
import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from tests.debates.conftest import start_worker_process
from tests.processes import stop_process
from tests.streams.conftest import web  # noqa: F401 (fixture)
from tests.streams.sse import SSEClient
from tests.traders.test_ccxt import request_execution
from traders.models import Position
from traders.services import execution_submit
from traders.services.reconcile import trader_reconcile

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def opened_and_stopped_out(user, trader, fake_exchange, make_decision) -> None:
    """Open a BTC long on the trader, record it, then fill its stop on the exchange."""
    execution_submit(execution_id=request_execution(user, trader, make_decision()).pk)
    trader_reconcile(trader_id=trader.pk)
    fake_exchange.set_price("BTCUSDT", "56000.0")
    assert fake_exchange.trigger_crossed()


def test_a_stop_filled_while_no_worker_ran_is_recorded_when_a_worker_starts(
    user, binance_trader, fake_exchange, make_decision, settings
):
    # given a stop that filled on the exchange while no worker ran, and no beat
    opened_and_stopped_out(user, binance_trader, fake_exchange, make_decision)
    # when a worker process starts
    worker = start_worker_process(
        "reconciler", concurrency=1, TRADER_EXCHANGE_API_URL=fake_exchange.url
    )
    try:
        # then the close is recorded within one beat interval
        deadline = time.monotonic() + settings.RECONCILE_EVERY_S
        while time.monotonic() < deadline:
            if Position.objects.filter(trader=binance_trader, status="closed").exists():
                break
            time.sleep(0.2)
    finally:
        stop_process(worker)
    position = Position.objects.get(trader=binance_trader)
    assert (position.status, position.close_reason) == ("closed", "stop_loss")


def test_the_api_reconciles_and_the_stream_announces_each_change(
    web,  # noqa: F811 (the fixture imported above)
    user,
    other_user,
    binance_trader,
    fake_exchange,
    make_decision,
):
    # given a trader whose stop filled on the exchange, and its stream open on a web process
    opened_and_stopped_out(user, binance_trader, fake_exchange, make_decision)
    server = web(TRADER_EXCHANGE_API_URL=fake_exchange.url)
    auth = {"Authorization": f"Token {Token.objects.create(user=user).key}"}
    url = f"{server.url}/api/traders/{binance_trader.pk}"
    with SSEClient(f"{url}/stream", headers=auth) as stream:
        stream.wait_for_type("initial")
        assert stream.received()[0].json["id"] == binance_trader.pk
        # when its owner asks for a reconciliation
        answer = httpx.post(f"{url}/reconcile", headers=auth, timeout=30)
        # then the answer lists the changes, and the stream announced each
        assert answer.status_code == 200
        kinds = [line["kind"] for line in answer.json()["lines"]]
        assert kinds == ["position_closed", "order_canceled"]
        stream.wait_for_type("history", 2)
    announced = [e.json["kind"] for e in stream.received() if e.type == "history"]
    assert announced == kinds
    history = httpx.get(f"{url}/history", headers=auth, params={"kind": "position_closed"})
    assert [line["kind"] for line in history.json()["results"]] == ["position_closed"]
    # and another user gets a 404 for the reconcile, the history and the stream
    theirs = {"Authorization": f"Token {Token.objects.create(user=other_user).key}"}
    assert httpx.post(f"{url}/reconcile", headers=theirs).status_code == 404
    assert httpx.get(f"{url}/history", headers=theirs).status_code == 404
    assert Client().get(f"/api/traders/{binance_trader.pk}/stream").status_code == 401
