"""Reconciling a trader's book with its exchange, against the fake Binance USDT-M server."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.debates.events_helpers import stored_events
from tests.traders.test_ccxt import ALGO, PRICE, QUANTITY, placed, request_execution
from traders.exceptions import ReconcileBusy
from traders.models import HistoryEntry, Order, Position
from traders.services import execution_submit
from traders.services.reconcile import trader_reconcile

pytestmark = pytest.mark.django_db

STOP = Decimal("56231.8")  # 3 % under the entry, to the tick
BOTH = ("BTCUSDT", "BOTH")


@pytest.fixture
def opened(user, binance_trader, fake_exchange, make_decision):
    """A BTC long the trader's execution opened on the exchange, with its stop and
    target resting, and the book reconciled once."""
    execution = execution_submit(
        execution_id=request_execution(user, binance_trader, make_decision()).pk
    )
    assert execution.status == "filled"
    trader_reconcile(trader_id=binance_trader.pk)
    return execution


def kinds(trader) -> list[str]:
    return list(
        HistoryEntry.objects.filter(trader=trader).order_by("pk").values_list("kind", flat=True)
    )


def test_a_position_an_execution_opened_is_recorded_with_its_orders(binance_trader, opened):
    # given a long the trader's execution opened, reconciled once (the fixture)
    position = Position.objects.get(trader=binance_trader)
    # then the book holds it as the exchange does, not foreign, with its orders
    assert (position.status, position.side, position.quantity, position.entry_price) == (
        "open",
        "long",
        QUANTITY,
        PRICE,
    )
    assert position.foreign is False
    assert sorted(position.orders.values_list("type", flat=True)) == [
        "market",
        "stop_market",
        "take_profit_market",
    ]
    # and the change is a line of its history, announced on the trader's stream
    assert kinds(binance_trader) == ["position_recorded"]
    events = stored_events(f"trader-{binance_trader.pk}")
    assert [(kind, data["kind"]) for kind, data in events] == [("history", "position_recorded")]
    assert "BTCUSDT long 0.215 at 57970.9" in events[0][1]["message"]
    # and a second pass finds nothing to change
    assert trader_reconcile(trader_id=binance_trader.pk) == []


def test_a_stop_filled_while_no_worker_ran_is_recorded_with_its_pnl(
    binance_trader, fake_exchange, opened
):
    # given the price fell through the stop and the exchange filled it
    fake_exchange.set_price("BTCUSDT", "56000.0")
    [triggered] = fake_exchange.trigger_crossed()
    assert triggered["clientAlgoId"] == opened.client_order_id + "S"
    assert fake_exchange.positions[BOTH].amount == 0
    # when the book is reconciled
    lines = trader_reconcile(trader_id=binance_trader.pk)
    # then the position is closed by its stop, at the fill price, with its P&L and fees
    position = Position.objects.get(trader=binance_trader)
    pnl = (Decimal("56000.0") - PRICE) * QUANTITY
    exit_fee = Decimal("56000.0") * QUANTITY * Decimal("0.0004")
    assert (position.status, position.close_reason, position.close_price) == (
        "closed",
        "stop_loss",
        Decimal("56000.0"),
    )
    assert position.realized_pnl == pnl
    assert position.fees == exit_fee
    assert position.closed_at.timestamp() * 1000 == fake_exchange.now_ms
    stop = Order.objects.get(client_order_id=opened.client_order_id + "S")
    assert stop.status == "filled"
    # and the target left resting for a position that is gone was cancelled
    target = Order.objects.get(client_order_id=opened.client_order_id + "T")
    assert target.status == "canceled"
    assert [o["algoStatus"] for o in fake_exchange.algo_orders] == ["FINISHED", "CANCELED"]
    assert [line.kind for line in lines] == ["position_closed", "order_canceled"]
    assert f"P&L {pnl - exit_fee:.2f} USDT after fees" in lines[0].message


def test_a_position_closed_by_hand_is_recorded_as_closed_on_the_exchange(
    binance_trader, fake_exchange, opened
):
    # given the owner closed the long on the exchange's own site
    fake_exchange.set_price("BTCUSDT", "58500.0")
    with fake_exchange.lock:
        fake_exchange._market_fill("BTCUSDT", "SELL", QUANTITY, "BOTH", True, "web_by_hand")
    # when the book is reconciled
    trader_reconcile(trader_id=binance_trader.pk)
    # then it is closed, at the price of the hand's trade, by the exchange
    position = Position.objects.get(trader=binance_trader)
    assert (position.close_reason, position.close_price) == ("exchange", Decimal("58500.0"))
    assert position.realized_pnl == (Decimal("58500.0") - PRICE) * QUANTITY
    # and both orphan protective orders were cancelled
    assert [o["algoStatus"] for o in fake_exchange.algo_orders] == ["CANCELED", "CANCELED"]


def test_a_position_whose_stop_was_cancelled_gets_its_planned_stop_again(
    binance_trader, fake_exchange, opened
):
    # given the stop was cancelled on the exchange by hand
    stop_id = opened.client_order_id + "S"
    with fake_exchange.lock:
        fake_exchange.algo_orders[0]["algoStatus"] = "CANCELED"
    # when the book is reconciled
    lines = trader_reconcile(trader_id=binance_trader.pk)
    # then the stop its execution planned rests again, under a new client order id
    assert Order.objects.get(client_order_id=stop_id).status == "canceled"
    [again] = placed(fake_exchange, ALGO)[2:]
    assert (again["type"], again["side"], again["triggerPrice"], again["quantity"]) == (
        "STOP_MARKET",
        "SELL",
        str(STOP),
        str(QUANTITY),
    )
    assert again["clientAlgoId"].startswith("arenap")
    assert [line.kind for line in lines] == ["stop_placed"]
    # and a second pass places nothing more
    assert trader_reconcile(trader_id=binance_trader.pk) == []
    assert len(placed(fake_exchange, ALGO)) == 3


def test_an_unprotected_position_is_closed_when_the_strategy_says_so(
    binance_trader, fake_exchange, opened
):
    # given a strategy that closes what rests without a stop, and a stop cancelled by hand
    strategy = opened.decision.debate.strategy
    strategy.unprotected = "close"
    strategy.save()
    with fake_exchange.lock:
        fake_exchange.algo_orders[0]["algoStatus"] = "CANCELED"
    # when the book is reconciled
    lines = trader_reconcile(trader_id=binance_trader.pk)
    # then the long was closed with a reduce-only market order, and recorded so
    assert fake_exchange.positions[BOTH].amount == 0
    position = Position.objects.get(trader=binance_trader)
    assert (position.status, position.close_reason) == ("closed", "unprotected")
    assert [line.kind for line in lines] == ["unprotected_closed"]


def test_a_position_not_opened_here_is_flagged_and_never_traded(binance_trader, fake_exchange):
    # given a short the owner opened on the exchange by hand
    with fake_exchange.lock:
        fake_exchange._market_fill("ETHUSDT", "SELL", Decimal("1.000"), "BOTH", False, "web")
    # when the book is reconciled
    lines = trader_reconcile(trader_id=binance_trader.pk)
    # then it is shown, flagged foreign, and no stop was put on it
    position = Position.objects.get(trader=binance_trader)
    assert (position.symbol, position.side, position.foreign) == ("ETHUSDT", "short", True)
    assert [line.kind for line in lines] == ["position_foreign"]
    assert fake_exchange.order_requests() == []


def test_a_coin_with_an_execution_in_flight_is_left_to_it(
    user, binance_trader, fake_exchange, make_decision
):
    # given an execution whose entry filled and whose answer was lost (still submitted)
    execution = request_execution(user, binance_trader, make_decision())
    fake_exchange.drop_after_next("/fapi/v1/order")
    with pytest.raises(Exception):  # noqa: B017 (the lost answer: ExchangeUnavailable)
        execution_submit(execution_id=execution.pk)
    # when the book is reconciled
    lines = trader_reconcile(trader_id=binance_trader.pk)
    # then nothing is recorded or placed for its coin: the execution protects it
    assert lines == []
    assert placed(fake_exchange, ALGO) == []


def test_a_second_pass_while_one_runs_changes_nothing(binance_trader, fake_exchange, opened):
    # given a pass holding the trader's lease
    from traders.services.reconcile import _lease_take

    assert _lease_take(binance_trader.pk)
    # when another starts
    with pytest.raises(ReconcileBusy):
        trader_reconcile(trader_id=binance_trader.pk)


def test_a_paper_trader_takes_the_same_path_over_its_own_book(user, paper_trader, make_decision):
    # given a paper long with its stop and target resting, reconciled: nothing to change
    decision = make_decision(as_of="2024-08-04T20:00Z")
    execution = execution_submit(execution_id=request_execution(user, paper_trader, decision).pk)
    assert trader_reconcile(trader_id=paper_trader.pk) == []
    # when its stop is gone (cancelled) and the book is reconciled
    stop = Order.objects.get(client_order_id=execution.client_order_id + "S")
    Order.objects.filter(pk=stop.pk).update(status="canceled")
    lines = trader_reconcile(trader_id=paper_trader.pk)
    # then the stop its execution planned rests again on the paper exchange
    assert [line.kind for line in lines] == ["stop_placed"]
    again = Order.objects.get(status="open", type="stop_market")
    assert (again.trigger_price, again.position.status) == (execution.stop_loss_price, "open")


@pytest.mark.parametrize("venue", ["bybit", "okx"])
def test_a_filled_stop_is_recorded_on_bybit_and_okx_as_on_binance(
    request, user, make_decision, venue
):
    # given a long opened on the venue and recorded, whose stop then filled there
    trader = request.getfixturevalue(f"{venue}_trader")
    fake = request.getfixturevalue(f"fake_{venue}")
    execution = execution_submit(execution_id=request_execution(user, trader, make_decision()).pk)
    assert execution.status == "filled"
    assert [line.kind for line in trader_reconcile(trader_id=trader.pk)] == ["position_recorded"]
    fake.set_price("BTCUSDT", "56000.0")
    assert len(fake.trigger_crossed()) == 1
    # when the book is reconciled
    lines = trader_reconcile(trader_id=trader.pk)
    # then the close is recorded by its stop, at the fill price, and its orphan target
    # (found by its own client order id) cancelled on the venue
    position = Position.objects.get(trader=trader)
    assert (position.status, position.close_reason, position.close_price) == (
        "closed",
        "stop_loss",
        Decimal("56000.0"),
    )
    assert position.realized_pnl < 0
    assert [line.kind for line in lines] == ["position_closed", "order_canceled"]
    target = Order.objects.get(client_order_id=execution.client_order_id + "T")
    assert target.status == "canceled"
    assert trader_reconcile(trader_id=trader.pk) == []
