"""Executions on a real exchange through ccxt, against the fake Binance USDT-M server."""

from __future__ import annotations

import logging
from decimal import Decimal

import ccxt
import pytest

from arena.exceptions import NotFound
from tests.fakes.exchange_server import FakeExchange, RecordedRequest
from tests.traders.conftest import API_KEY, API_SECRET
from tests.traders.factories import TraderFactory
from traders.exchanges.base import ExchangeUnavailable, OrderRejected
from traders.exchanges.ccxt_exchange import CcxtExchange
from traders.models import Execution, Order
from traders.services import execution_request, execution_submit
from traders.tasks import SUBMIT_MAX_RETRIES, execution_submit_task

pytestmark = pytest.mark.django_db

PRICE = Decimal("57970.9")  # BTCUSDT at the fake's clock (the dataset's end)
QUANTITY = Decimal("0.215")  # 25 % of 10,000 USDT at 5x = 12,500 / 57970.9, to 0.001
ORDER = "/fapi/v1/order"
ALGO = "/fapi/v1/algoOrder"


def request_execution(user, trader, decision) -> Execution:
    return execution_request(owner=user, debate_id=decision.debate_id, trader_id=trader.pk)


def placed(fake: FakeExchange, path: str = ORDER) -> list[dict[str, str]]:
    """Return the parameters of the order placements sent to ``path``, signature removed."""
    return [
        {k: v for k, v in r.params.items() if k not in ("signature", "timestamp", "recvWindow")}
        for r in fake.order_requests()
        if r.path == path
    ]


def test_a_binance_long_sets_leverage_sends_the_entry_and_both_protective_orders(
    user, binance_trader, fake_exchange, make_decision
):
    # given a BTC long decision (25 % at 5x, SL 3 %, TP 6 %)
    execution = request_execution(user, binance_trader, make_decision())
    cid = execution.client_order_id
    # when it is submitted
    execution = execution_submit(execution_id=execution.pk)
    # then the leverage was set and a market buy carried the client order id
    leverage = [r.params for r in fake_exchange.requests if r.path == "/fapi/v1/leverage"]
    assert [(p["symbol"], p["leverage"]) for p in leverage] == [("BTCUSDT", "5")]
    assert placed(fake_exchange) == [
        {
            "symbol": "BTCUSDT",
            "side": "BUY",
            "type": "MARKET",
            "quantity": "0.215",
            "newClientOrderId": cid,
            "newOrderRespType": "RESULT",
        }
    ]
    # and the stop loss and take profit went out as reduce-only conditional orders
    assert placed(fake_exchange, ALGO) == [
        {
            "symbol": "BTCUSDT",
            "side": "SELL",
            "type": "STOP_MARKET",
            "quantity": "0.215",
            "triggerPrice": "56231.8",
            "reduceOnly": "true",
            "algoType": "CONDITIONAL",
            "clientAlgoId": cid + "S",
            "newOrderRespType": "RESULT",
        },
        {
            "symbol": "BTCUSDT",
            "side": "SELL",
            "type": "TAKE_PROFIT_MARKET",
            "quantity": "0.215",
            "triggerPrice": "61449.2",
            "reduceOnly": "true",
            "algoType": "CONDITIONAL",
            "clientAlgoId": cid + "T",
            "newOrderRespType": "RESULT",
        },
    ]
    # and the execution records the fill, the fee from the trades and the protective ids
    fee = QUANTITY * PRICE * Decimal("0.0004")
    assert (execution.status, execution.error) == ("filled", "")
    assert (execution.filled_quantity, execution.average_price, execution.fee) == (
        QUANTITY,
        PRICE,
        fee,
    )
    assert (execution.stop_loss_price, execution.take_profit_price) == (
        Decimal("56231.8"),
        Decimal("61449.2"),
    )
    algo_ids = [str(o["algoId"]) for o in fake_exchange.algo_orders]
    assert [execution.stop_loss_order_id, execution.take_profit_order_id] == algo_ids
    assert execution.exchange_order_id == str(fake_exchange.orders[0]["orderId"])
    assert fake_exchange.positions[("BTCUSDT", "BOTH")].amount == QUANTITY


def test_a_lost_answer_is_found_by_client_order_id_and_never_sent_twice(
    user, binance_trader, fake_exchange, make_decision
):
    # given an exchange that places the entry order but drops the connection before answering
    execution = request_execution(user, binance_trader, make_decision())
    fake_exchange.drop_after_next(ORDER)
    # when the execution is submitted, the answer is lost
    with pytest.raises(ExchangeUnavailable):
        execution_submit(execution_id=execution.pk)
    assert Execution.objects.get(pk=execution.pk).status == "submitted"
    assert len(fake_exchange.orders) == 1
    # and when the retry runs
    execution = execution_submit(execution_id=execution.pk)
    # then it found the order by its client order id and placed no second one
    lookups = [r.params for r in fake_exchange.requests if r.method == "GET" and r.path == ORDER]
    assert [p["origClientOrderId"] for p in lookups] == [execution.client_order_id]
    assert len(placed(fake_exchange)) == 1
    assert len(fake_exchange.orders) == 1
    assert (execution.status, execution.filled_quantity, execution.average_price) == (
        "filled",
        QUANTITY,
        PRICE,
    )
    assert len(fake_exchange.algo_orders) == 2


def test_an_order_that_never_arrived_is_sent_again_with_the_same_client_order_id(
    user, binance_trader, fake_exchange, make_decision
):
    # given an exchange answering 503 to the entry order (nothing placed)
    execution = request_execution(user, binance_trader, make_decision())
    fake_exchange.fail_next(ORDER, 503)
    with pytest.raises(ExchangeUnavailable):
        execution_submit(execution_id=execution.pk)
    # when the retry runs
    execution = execution_submit(execution_id=execution.pk)
    # then it looked the order up, found none, and sent it again under the same id
    assert [p["newClientOrderId"] for p in placed(fake_exchange)] == [
        execution.client_order_id,
        execution.client_order_id,
    ]
    assert len(fake_exchange.orders) == 1
    assert execution.status == "filled"


def test_when_the_stop_loss_is_refused_the_position_is_closed_and_the_execution_fails(
    user, binance_trader, fake_exchange, make_decision
):
    # given an exchange refusing the stop-loss order
    execution = request_execution(user, binance_trader, make_decision())
    fake_exchange.reject_next(ALGO, code=-2021, msg="Order would immediately trigger.")
    # when the execution is submitted
    execution = execution_submit(execution_id=execution.pk)
    # then the entry was closed again with a reduce-only market sell
    cid = execution.client_order_id
    assert [
        (p["side"], p.get("reduceOnly"), p["newClientOrderId"]) for p in placed(fake_exchange)
    ] == [
        ("BUY", None, cid),
        ("SELL", "true", cid + "X"),
    ]
    # and the execution failed with the exchange's reason; nothing is left open
    assert execution.status == "failed"
    assert execution.error == (
        "The stop loss could not be placed (stop_loss order for BTCUSDT: ExchangeError: "
        'binanceusdm {"code": -2021, "msg": "Order would immediately trigger."}); the '
        "position was closed again at 57970.9."
    )
    assert fake_exchange.positions[("BTCUSDT", "BOTH")].amount == 0
    assert [o["algoStatus"] for o in fake_exchange.algo_orders] == []
    statuses = dict(
        Order.objects.filter(execution=execution).values_list("client_order_id", "status")
    )
    assert statuses == {cid: "filled", cid + "S": "rejected", cid + "X": "filled"}


def test_when_closing_after_a_refused_stop_fails_too_the_execution_says_the_position_is_open(
    user, binance_trader, fake_exchange, make_decision
):
    # given an exchange refusing the stop loss, and then the closing order
    execution = request_execution(user, binance_trader, make_decision())

    def refuse_stop(fake: FakeExchange, request: RecordedRequest):
        fake.reject_next(ORDER, code=-2022, msg="ReduceOnly Order is rejected.")
        return 400, {"code": -2021, "msg": "Order would immediately trigger."}

    fake_exchange.routes[("POST", ALGO)] = refuse_stop
    # when the execution is submitted
    execution = execution_submit(execution_id=execution.pk)
    # then it fails saying plainly that the position is open without a stop
    assert execution.status == "failed"
    assert "the position is OPEN WITHOUT A STOP, close it by hand." in execution.error
    assert fake_exchange.positions[("BTCUSDT", "BOTH")].amount == QUANTITY


def test_a_refused_take_profit_is_recorded_and_the_protected_position_stays(
    user, binance_trader, fake_exchange, make_decision
):
    # given an exchange accepting the stop loss but refusing the take profit
    execution = request_execution(user, binance_trader, make_decision())
    fake_exchange.delay_next(ALGO, 0)
    fake_exchange.reject_next(ALGO, code=-4045, msg="Reach max stop order limit.")
    # when submitted
    execution = execution_submit(execution_id=execution.pk)
    # then it filled, protected by its stop, and the error names the missing target
    assert execution.status == "filled"
    assert execution.stop_loss_order_id == str(fake_exchange.algo_orders[0]["algoId"])
    assert execution.take_profit_order_id == ""
    assert execution.error == (
        "The take profit could not be placed (the stop loss protects the position): "
        'take_profit order for BTCUSDT: OperationRejected: binanceusdm {"code": -4045, '
        '"msg": "Reach max stop order limit."}'
    )


def test_a_close_decision_sells_reduce_only_and_cancels_the_resting_orders(
    user, binance_trader, fake_exchange, make_decision
):
    # given an open, protected long
    opened = execution_submit(
        execution_id=request_execution(user, binance_trader, make_decision()).pk
    )
    # when a later debate closes it
    closing = request_execution(user, binance_trader, make_decision(action="close_long"))
    execution = execution_submit(execution_id=closing.pk)
    # then a reduce-only sell of the whole position filled and both protective orders went
    assert placed(fake_exchange)[-1] == {
        "symbol": "BTCUSDT",
        "side": "SELL",
        "type": "MARKET",
        "quantity": "0.215",
        "reduceOnly": "true",
        "newClientOrderId": execution.client_order_id,
        "newOrderRespType": "RESULT",
    }
    assert (execution.status, execution.filled_quantity) == ("filled", QUANTITY)
    assert fake_exchange.positions[("BTCUSDT", "BOTH")].amount == 0
    assert [o["algoStatus"] for o in fake_exchange.algo_orders] == ["CANCELED", "CANCELED"]
    assert set(
        Order.objects.filter(
            execution=opened, type__in=("stop_market", "take_profit_market")
        ).values_list("status", flat=True)
    ) == {"canceled"}


def test_a_position_above_the_maximum_value_sends_no_order(
    user, binance_trader, fake_exchange, make_decision
):
    # given all of the balance at 5x against a maximum of 3 x equity
    execution = request_execution(user, binance_trader, make_decision(position_pct=1.0))
    # when submitted
    execution = execution_submit(execution_id=execution.pk)
    # then it failed and nothing reached the exchange
    assert execution.status == "failed"
    assert execution.error == (
        "position value 49970.92 USD is above the strategy's maximum of 3.00 x equity = "
        "30000.00 USD"
    )
    assert fake_exchange.order_requests() == []


def test_another_users_trader_is_not_found_and_no_order_is_sent(
    user, other_user, fake_exchange, make_decision
):
    # given someone else's binance trader
    trader = TraderFactory(
        owner=other_user, exchange="binanceusdm", api_key=API_KEY, api_secret=API_SECRET
    )
    # when the user asks to execute on it
    with pytest.raises(NotFound):
        request_execution(user, trader, make_decision())
    # then nothing is recorded and the exchange heard nothing
    assert Execution.objects.count() == 0
    assert fake_exchange.requests == []


def test_exchange_errors_never_carry_the_credentials(
    user, binance_trader, fake_exchange, make_decision, caplog
):
    # given an exchange whose error message repeats the key and the secret
    caplog.set_level(logging.DEBUG)
    execution = request_execution(user, binance_trader, make_decision())
    fake_exchange.reject_next(ORDER, code=-2015, msg=f"Invalid API-key {API_KEY}/{API_SECRET}")
    # when the order is refused
    execution = execution_submit(execution_id=execution.pk)
    # then the stored error and the logs name neither
    assert execution.status == "failed"
    assert execution.error == (
        "The exchange refused: buy BTCUSDT market order: AuthenticationError: binanceusdm "
        '{"code": -2015, "msg": "Invalid API-key ***/***"}'
    )
    order = Order.objects.get(client_order_id=execution.client_order_id)
    for text in (execution.error, order.error, caplog.text):
        assert API_KEY not in text
        assert API_SECRET not in text


def test_network_errors_carry_no_signature(fake_exchange):
    # given an exchange dropping the balance request (a signed GET)
    adapter = CcxtExchange(
        "binanceusdm", api_key=API_KEY, secret=API_SECRET, api_url=fake_exchange.url
    )
    fake_exchange.drop_next("/fapi/v3/account")
    # when the balance is asked
    with pytest.raises(ExchangeUnavailable) as failed:
        adapter.balance()
    # then the message names the request with its signature masked
    signature = fake_exchange.requests[-1].params["signature"]
    assert signature not in str(failed.value)
    assert "signature=***" in str(failed.value)


def test_wrong_credentials_are_a_terminal_refusal(fake_exchange):
    # given an adapter with the wrong secret
    adapter = CcxtExchange(
        "binanceusdm", api_key=API_KEY, secret="not-the-secret", api_url=fake_exchange.url
    )
    # when the balance is asked
    with pytest.raises(OrderRejected) as refused:
        adapter.balance()
    # then the exchange refused the signature
    assert str(refused.value) == (
        'balance: AuthenticationError: binanceusdm {"code": -1022, "msg": "Signature for '
        'this request is not valid."}'
    )


def test_the_task_retries_an_unreachable_exchange_then_records_the_failure(
    user, binance_trader, fake_exchange, make_decision
):
    # given an exchange whose prices never answer
    execution = request_execution(user, binance_trader, make_decision())
    fake_exchange.fail_next("/fapi/v1/ticker/24hr", 503, times=SUBMIT_MAX_RETRIES + 1)
    # when the task runs (eagerly: retries follow at once)
    execution_submit_task.apply(args=[execution.pk])
    # then every attempt asked once, and the execution failed saying nothing was sent
    tickers = [r for r in fake_exchange.requests if r.path == "/fapi/v1/ticker/24hr"]
    assert len(tickers) == SUBMIT_MAX_RETRIES + 1
    execution.refresh_from_db()
    assert execution.status == "failed"
    assert execution.error.startswith("The exchange could not be reached; nothing was sent.")
    assert fake_exchange.order_requests() == []


def test_an_entry_below_the_markets_minimum_value_is_refused_naming_it(
    user, binance_trader, fake_exchange, make_decision
):
    # given a BTC long of 0.99 % of 10,000 USDT at 1x: 99 USDT, 0.001 BTC after the amount
    # step (57.97 USDT), under Binance's 100 USDT minimum for BTCUSDT
    decision = make_decision(position_pct=0.0099, leverage=1)
    execution = request_execution(user, binance_trader, decision)
    # when it is submitted
    execution = execution_submit(execution_id=execution.pk)
    # then it was refused before anything was sent, naming the market's minimum
    assert execution.status == "failed"
    assert execution.error == (
        "the order's value 57.97 USDT is below the market's minimum order value of 100.00 "
        "USDT; a larger position_pct or leverage reaches it"
    )
    assert fake_exchange.order_requests() == []


def test_a_binance_practice_account_trades_on_demo_trading():
    # given a binanceusdm account in sandbox mode (Binance's futures testnet is gone:
    # ccxt refuses to sign for it, and demo trading replaced it)
    adapter = CcxtExchange("binanceusdm", api_key="k", secret="s", sandbox=True)
    # when an order and the account are signed for sending
    order = adapter.client.sign("order", ["fapiPrivate"], "POST", {"symbol": "BTCUSDT"})
    account = adapter.client.sign("account", ["fapiPrivateV3"], "GET", {})
    # then both go to the demo trading host
    assert order["url"] == "https://demo-fapi.binance.com/fapi/v1/order"
    assert account["url"].startswith("https://demo-fapi.binance.com/fapi/v3/account?")


@pytest.mark.parametrize(
    ("exchange_id", "id_param", "stop_id_param", "password"),
    [("bybit", "orderLinkId", "orderLinkId", ""), ("okx", "clOrdId", "algoClOrdId", "pass")],
)
def test_bybit_and_okx_orders_carry_their_own_idempotency_field(
    exchange_id, id_param, stop_id_param, password
):
    # given a bybit or okx account in sandbox mode
    adapter = CcxtExchange(exchange_id, api_key="k", secret="s", password=password, sandbox=True)
    adapter.client.fetch_position_mode = lambda *args, **kwargs: {"hedged": False}
    adapter.client.fetch_positions = lambda *args, **kwargs: []  # bybit: none held
    sent: list[tuple] = []

    def create_order(symbol, order_type, side, amount, price=None, params=None):
        sent.append((symbol, order_type, side, amount, params))
        return {"id": "1", "status": "closed", "filled": 0.01, "average": 50000, "fee": None}

    adapter.client.create_order = create_order
    # when a market order and a stop loss are sent
    adapter.market_order("BTCUSDT", "buy", Decimal("0.01"), client_order_id="arena7abc")
    adapter.protective_order(
        "BTCUSDT",
        "sell",
        Decimal("0.01"),
        kind="stop_loss",
        trigger_price=Decimal("48500"),
        client_order_id="arena7abcS",
    )
    # then ccxt got the exchange's own client id field and the unified stop price
    assert isinstance(adapter.client, getattr(ccxt, exchange_id))
    assert adapter.client.isSandboxModeEnabled
    assert sent == [
        ("BTC/USDT:USDT", "market", "buy", "0.01", {id_param: "arena7abc"}),
        (
            "BTC/USDT:USDT",
            "market",
            "sell",
            "0.01",
            {stop_id_param: "arena7abcS", "reduceOnly": True, "stopLossPrice": "48500"},
        ),
    ]


def test_a_stop_loss_the_exchange_never_answers_leaves_a_plain_warning(
    user, binance_trader, fake_exchange, make_decision
):
    # given an exchange that fills the entry, then drops every conditional-order request
    execution = request_execution(user, binance_trader, make_decision())
    fake_exchange.drop_next(ALGO, times=SUBMIT_MAX_RETRIES + 1)
    # when the task has used up its retries
    execution_submit_task.apply(args=[execution.pk])
    # then the stop was sent once and looked up on every retry, the entry was never repeated,
    # and the execution says the position may be unprotected
    algo = [r.method for r in fake_exchange.requests if r.path == ALGO]
    assert algo == ["POST"] + ["GET"] * SUBMIT_MAX_RETRIES
    assert len(placed(fake_exchange)) == 1
    execution.refresh_from_db()
    assert execution.status == "failed"
    assert execution.error.startswith(
        "The entry filled, then the exchange could not be reached to protect it: the "
        "position may be OPEN WITHOUT A STOP, check the exchange."
    )


def test_a_price_set_on_the_fake_exchange_is_the_one_its_tickers_give(fake_exchange):
    # given the fake exchange's BTCUSDT moved off the dataset's close
    adapter = CcxtExchange(
        "binanceusdm", api_key=API_KEY, secret=API_SECRET, api_url=fake_exchange.url
    )
    fake_exchange.set_price("BTCUSDT", "61234.5")
    # when the adapter reads the price, and the mark price is asked
    mark = adapter.client.fapiPublicGetPremiumIndex({"symbol": "BTCUSDT"})["markPrice"]
    # then both are the price its fills would take
    assert (adapter.price("BTCUSDT"), Decimal(mark)) == (Decimal("61234.5"), Decimal("61234.5"))
