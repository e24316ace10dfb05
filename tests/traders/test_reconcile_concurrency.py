"""Ten reconciliations of one trader at once: each change is made once."""

from __future__ import annotations

import pytest

from tests.threads import run_at_once
from tests.traders.test_ccxt import ALGO, placed, request_execution
from traders.exceptions import ReconcileBusy
from traders.models import HistoryEntry
from traders.services import execution_submit
from traders.services.reconcile import trader_reconcile

pytestmark = pytest.mark.django_db(transaction=True)

PASSES = 10


def at_once(trader_id: int) -> list[BaseException]:
    """Run ``PASSES`` reconciliations of a trader together; return what they raised
    besides a busy trader."""
    errors: list[BaseException] = []

    def reconcile() -> None:
        try:
            trader_reconcile(trader_id=trader_id)
        except ReconcileBusy:
            pass
        except BaseException as exc:
            errors.append(exc)

    run_at_once(reconcile, PASSES, timeout=60)
    return errors


def test_concurrent_passes_record_a_filled_stop_and_cancel_its_target_once(
    user, binance_trader, fake_exchange, make_decision
):
    # given a long, recorded, whose stop the exchange filled while no worker ran
    execution_submit(execution_id=request_execution(user, binance_trader, make_decision()).pk)
    trader_reconcile(trader_id=binance_trader.pk)
    fake_exchange.set_price("BTCUSDT", "56000.0")
    assert fake_exchange.trigger_crossed()
    # when ten passes run at once, then one more
    assert at_once(binance_trader.pk) == []
    assert trader_reconcile(trader_id=binance_trader.pk) == []
    # then the close was recorded once and the orphan target cancelled once
    kinds = list(HistoryEntry.objects.order_by("pk").values_list("kind", flat=True))
    assert kinds == ["position_recorded", "position_closed", "order_canceled"]
    cancels = [r for r in fake_exchange.requests if r.method == "DELETE" and r.path == ALGO]
    assert len(cancels) == 1


def test_concurrent_passes_place_one_stop_on_an_unprotected_position(
    user, binance_trader, fake_exchange, make_decision
):
    # given a long, recorded, whose stop was cancelled on the exchange by hand
    execution_submit(execution_id=request_execution(user, binance_trader, make_decision()).pk)
    trader_reconcile(trader_id=binance_trader.pk)
    with fake_exchange.lock:
        fake_exchange.algo_orders[0]["algoStatus"] = "CANCELED"
    # when ten passes run at once, then one more
    assert at_once(binance_trader.pk) == []
    assert trader_reconcile(trader_id=binance_trader.pk) == []
    # then exactly one new stop was sent, and written once in the history
    assert len(placed(fake_exchange, ALGO)) == 3
    assert HistoryEntry.objects.filter(kind="stop_placed").count() == 1
