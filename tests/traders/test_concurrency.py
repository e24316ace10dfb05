"""Fifty people press "execute" at once: one execution, one order on the exchange."""

from __future__ import annotations

import threading

import pytest

from tests.debates.conftest import wait_for
from tests.threads import run_at_once
from traders.models import Execution
from traders.services import execution_request

pytestmark = pytest.mark.django_db(transaction=True)

REQUESTS = 50


def test_fifty_concurrent_requests_make_one_execution_and_one_order(
    user, binance_trader, fake_exchange, make_decision, celery_worker
):
    # given a completed debate with a BTC long decision, and a worker running
    decision = make_decision()
    start = threading.Barrier(REQUESTS)
    answers: list[int] = []
    errors: list[BaseException] = []

    def press_execute() -> None:
        try:
            start.wait()
            execution = execution_request(
                owner=user, debate_id=decision.debate_id, trader_id=binance_trader.pk
            )
            answers.append(execution.pk)
        except BaseException as exc:
            errors.append(exc)

    # when 50 requests arrive at once, each on its own database connection
    run_at_once(press_execute, REQUESTS, timeout=30)
    wait_for(lambda: Execution.objects.get().status in ("filled", "failed"), timeout=30)
    # then every answer names the one execution, which filled with exactly one entry order
    assert errors == []
    execution = Execution.objects.get()
    assert answers == [execution.pk] * REQUESTS
    assert (execution.status, execution.error) == ("filled", "")
    entries = [r for r in fake_exchange.order_requests() if r.path == "/fapi/v1/order"]
    assert [r.params["newClientOrderId"] for r in entries] == [execution.client_order_id]
    assert len(fake_exchange.orders) == 1
