"""Executions on Bybit through ccxt, against the fake Bybit v5 over real HTTP: an entry
confirmed by its orderLinkId (Bybit's create answer holds the ids alone), conditional
stops that rest until the price crosses them, the position mode, and Bybit's refusals."""

from __future__ import annotations

from decimal import Decimal

import ccxt
import pytest

from tests.fakes.bybit_server import FakeBybit
from tests.fakes.perp import LONG
from tests.fakes.venue import Position
from tests.traders.conftest import API_KEY, API_SECRET
from traders.exchanges.base import AccessRefused, ExchangeUnavailable, OrderNotFound, OrderRejected
from traders.exchanges.ccxt_exchange import CcxtExchange
from traders.exchanges.fills import money
from traders.models import Execution
from traders.services import execution_request, execution_submit

pytestmark = pytest.mark.django_db

PRICE = Decimal("57970.9")  # BTCUSDT at the fake's clock (the dataset's end)
QUANTITY = Decimal("0.215")  # 25 % of 10,000 USDT at 5x = 12,500 / 57970.9, to 0.001
CREATE = "/v5/order/create"
SYMBOL = "BTC/USDT:USDT"


def submit(user, trader, decision) -> Execution:
    execution = execution_request(owner=user, debate_id=decision.debate_id, trader_id=trader.pk)
    return execution_submit(execution_id=execution.pk)


def creates(fake: FakeBybit) -> list[dict]:
    """Return the order placements received, as their JSON bodies."""
    return [request.json for request in fake.order_requests()]


def adapter(fake: FakeBybit, secret: str = API_SECRET) -> CcxtExchange:
    return CcxtExchange("bybit", api_key=API_KEY, secret=secret, api_url=fake.url)


def test_a_bybit_long_is_confirmed_by_its_link_id_and_protected_by_conditional_orders(
    user, bybit_trader, fake_bybit, make_decision
):
    # given a BTC long decision (25 % at 5x, SL 3 %, TP 6 %) on Bybit
    decision = make_decision()
    # when it is submitted
    execution = submit(user, bybit_trader, decision)
    cid = execution.client_order_id
    # then the leverage was set, and a market buy carried the client order id as orderLinkId
    assert fake_bybit.sent("POST", "/v5/position/set-leverage") == [
        {"symbol": "BTCUSDT", "buyLeverage": "5", "sellLeverage": "5", "category": "linear"}
    ]
    entry = {"symbol": "BTCUSDT", "category": "linear", "orderType": "Market", "qty": "0.215"}
    stop = {**entry, "side": "Sell", "reduceOnly": True}
    assert creates(fake_bybit) == [
        {**entry, "side": "Buy", "orderLinkId": cid},
        {**stop, "triggerDirection": 2, "triggerPrice": "56231.8", "orderLinkId": cid + "S"},
        {**stop, "triggerDirection": 1, "triggerPrice": "61449.2", "orderLinkId": cid + "T"},
    ]
    # and its answer holding the ids alone, the fill was looked up by orderLinkId alone:
    # among the open orders, then the finished ones
    lookups = [(r.path, r.params) for r in fake_bybit.requests if r.path.startswith("/v5/order/")][
        1:3
    ]
    assert lookups == [
        ("/v5/order/realtime", {"symbol": "BTCUSDT", "category": "linear", "orderLinkId": cid}),
        ("/v5/order/history", {"symbol": "BTCUSDT", "category": "linear", "orderLinkId": cid}),
    ]
    # and the execution records the fill, Bybit's fee, and the conditional orders' ids
    entry_order, stop_loss, take_profit = fake_bybit.orders
    assert (execution.status, execution.error) == ("filled", "")
    assert (execution.filled_quantity, execution.average_price, execution.fee) == (
        QUANTITY,
        PRICE,
        money(QUANTITY * PRICE * Decimal("0.00055")),
    )
    assert execution.exchange_order_id == entry_order["orderId"]
    assert [execution.stop_loss_order_id, execution.take_profit_order_id] == [
        stop_loss["orderId"],
        take_profit["orderId"],
    ]
    assert [o["orderStatus"] for o in fake_bybit.orders] == ["Filled", "Untriggered", "Untriggered"]


def test_a_bybit_entry_whose_answer_was_lost_is_found_by_its_link_id_and_not_sent_again(
    user, bybit_trader, fake_bybit, make_decision
):
    # given Bybit placing the entry, then dropping the connection before answering
    decision = make_decision()
    execution = execution_request(
        owner=user, debate_id=decision.debate_id, trader_id=bybit_trader.pk
    )
    fake_bybit.drop_after_next(CREATE)
    with pytest.raises(ExchangeUnavailable):
        execution_submit(execution_id=execution.pk)
    # when the retry runs
    execution = execution_submit(execution_id=execution.pk)
    # then it found the entry by orderLinkId and sent it once (a second create with the
    # same orderLinkId would have been refused as a duplicate, 110072)
    cid = execution.client_order_id
    assert [body["orderLinkId"] for body in creates(fake_bybit)] == [cid, cid + "S", cid + "T"]
    assert (execution.status, execution.filled_quantity) == ("filled", QUANTITY)
    assert fake_bybit.account.positions[("BTCUSDT", "net")].amount == QUANTITY


def test_resending_a_bybit_link_id_is_refused_as_a_duplicate(fake_bybit):
    # given a filled market buy sent with orderLinkId arena1
    exchange = adapter(fake_bybit)
    exchange.market_order("BTCUSDT", "buy", Decimal("0.01"), client_order_id="arena1")
    # when the same orderLinkId is sent again
    with pytest.raises(OrderRejected) as refused:
        exchange.market_order("BTCUSDT", "buy", Decimal("0.01"), client_order_id="arena1")
    # then Bybit refuses it, and the position holds the first order alone
    assert '"retCode": 110072, "retMsg": "OrderLinkedID is duplicate"' in str(refused.value)
    assert fake_bybit.account.positions[("BTCUSDT", "net")].amount == Decimal("0.01")


def test_a_bybit_stop_rests_until_the_price_crosses_it_then_fills_as_a_trade(
    user, bybit_trader, fake_bybit, make_decision
):
    # given a protected BTC long, its stop at 56231.8 and target at 61449.2
    execution = submit(user, bybit_trader, make_decision())
    exchange = adapter(fake_bybit)
    resting = exchange.client.fetch_open_orders(SYMBOL, params={"trigger": True})
    assert [o["clientOrderId"] for o in resting] == [
        execution.client_order_id + "T",
        execution.client_order_id + "S",
    ]
    # when the price falls through the stop
    fake_bybit.set_price("BTCUSDT", "56000")
    triggered = fake_bybit.trigger_crossed()
    # then the stop filled at the price, reduce-only, and closed the long
    assert [(o["orderLinkId"], o["orderStatus"]) for o in triggered] == [
        (execution.client_order_id + "S", "Filled")
    ]
    stop = exchange.fetch_order("BTCUSDT", execution.client_order_id + "S", conditional=True)
    assert (stop.status, stop.filled, stop.average_price) == ("filled", QUANTITY, Decimal("56000"))
    assert stop.fee == QUANTITY * Decimal("56000") * Decimal("0.00055")
    assert fake_bybit.account.positions[("BTCUSDT", "net")].amount == 0
    # and the account's fills since the entry name both orders; the target still rests
    fills = exchange.client.fetch_my_trades(SYMBOL, fake_bybit.now_ms)
    assert [(f["side"], f["amount"], f["price"]) for f in fills] == [
        ("buy", 0.215, 57970.9),
        ("sell", 0.215, 56000.0),
    ]
    resting = exchange.client.fetch_open_orders(SYMBOL, params={"trigger": True})
    assert [o["clientOrderId"] for o in resting] == [execution.client_order_id + "T"]


def test_a_bybit_stop_with_nothing_left_to_reduce_is_deactivated_when_triggered(fake_bybit):
    # given a resting reduce-only stop, its position closed since
    exchange = adapter(fake_bybit)
    exchange.market_order("BTCUSDT", "buy", Decimal("0.01"), client_order_id="arena2")
    exchange.protective_order(
        "BTCUSDT",
        "sell",
        Decimal("0.01"),
        kind="stop_loss",
        trigger_price=Decimal("56000"),
        client_order_id="arena2S",
    )
    exchange.market_order(
        "BTCUSDT", "sell", Decimal("0.01"), client_order_id="arena2X", reduce_only=True
    )
    # when the price crosses it
    fake_bybit.set_price("BTCUSDT", "55000")
    fake_bybit.trigger_crossed()
    # then it is deactivated (canceled), filling nothing
    stop = exchange.fetch_order("BTCUSDT", "arena2S", conditional=True)
    assert (stop.status, stop.filled) == ("canceled", Decimal("0"))
    assert fake_bybit.account.positions[("BTCUSDT", "net")].amount == 0


def test_on_a_bybit_hedge_mode_account_every_order_carries_its_position_idx(
    user, bybit_trader, fake_bybit, make_decision
):
    # given a Bybit account in hedge mode, holding a BTC long
    fake_bybit.account.hedge_mode = True
    fake_bybit.account.positions[("BTCUSDT", LONG)] = Position(Decimal("0.01"), PRICE)
    # when an ETH long is opened, then closed by a decision
    opened = submit(user, bybit_trader, make_decision(symbol="ETHUSDT"))
    closed = submit(user, bybit_trader, make_decision(symbol="ETHUSDT", action="close_long"))
    # then every order named the buy side (positionIdx 1): the entry, the stop and target
    # (reduce-only), and the close, which sells that side without reduceOnly
    assert (opened.status, closed.status) == ("filled", "filled"), (opened.error, closed.error)
    sent = [(b["side"], b.get("positionIdx"), b.get("reduceOnly")) for b in creates(fake_bybit)]
    assert sent == [
        ("Buy", 1, None),
        ("Sell", 1, True),
        ("Sell", 1, True),
        ("Sell", 1, None),
    ]
    assert fake_bybit.account.positions[("ETHUSDT", LONG)].amount == 0


def test_on_a_bybit_hedge_mode_account_holding_nothing_the_first_entry_names_its_side(
    user, bybit_trader, fake_bybit, make_decision
):
    # given a Bybit account in hedge mode holding no position (its open positions, the
    # only ones Bybit lists without a symbol, tell nothing of the mode)
    fake_bybit.account.hedge_mode = True
    # when a BTC long is opened
    execution = submit(user, bybit_trader, make_decision())
    # then every order named the buy side (positionIdx 1), as Bybit requires in hedge mode
    assert execution.status == "filled", execution.error
    sent = [(b["side"], b.get("positionIdx"), b.get("reduceOnly")) for b in creates(fake_bybit)]
    assert sent == [("Buy", 1, None), ("Sell", 1, True), ("Sell", 1, True)]
    assert fake_bybit.account.positions[("BTCUSDT", LONG)].amount == QUANTITY


def test_a_bybit_order_whose_position_idx_does_not_match_the_mode_is_refused(fake_bybit):
    # given a one-way Bybit account
    exchange = adapter(fake_bybit)
    # when an order names the buy side of hedge mode
    with pytest.raises(ccxt.BadRequest) as refused:
        exchange.client.create_order(SYMBOL, "market", "buy", 0.01, None, {"positionIdx": 1})
    # then Bybit refuses it and nothing is held
    assert '"retCode": 10001, "retMsg": "position idx not match position mode"' in str(
        refused.value
    )
    assert fake_bybit.account.positions == {}


def test_a_bybit_entry_below_the_markets_minimum_value_is_refused_naming_it(
    user, bybit_trader, fake_bybit, make_decision
):
    # given BTCUSDT listed with a minimum order value of 100 USDT, and a BTC long of 0.99 %
    # of 10,000 USDT at 1x: 0.001 BTC after the amount step (57.97 USDT)
    fake_bybit.min_notional["BTCUSDT"] = "100"
    decision = make_decision(position_pct=0.0099, leverage=1)
    # when it is submitted
    execution = submit(user, bybit_trader, decision)
    # then it was refused before anything was sent, naming the minimum Bybit lists
    assert execution.status == "failed"
    assert execution.error == (
        "the order's value 57.97 USDT is below the market's minimum order value of 100.00 "
        "USDT; a larger position_pct or leverage reaches it"
    )
    assert fake_bybit.order_requests() == []


def test_bybit_refuses_an_order_under_its_minimum_value_naming_the_minimum(fake_bybit):
    # given DOGEUSDT at 0.10 (minimum order value 5 USDT), an order of 10 DOGE (about 1 USDT)
    exchange = adapter(fake_bybit)
    # when it is sent
    with pytest.raises(OrderRejected) as refused:
        exchange.market_order("DOGEUSDT", "buy", Decimal("10"), client_order_id="arena3")
    # then Bybit refuses it naming the minimum, and nothing is held
    assert '"retCode": 110094' in str(refused.value)
    assert "minimum order value 5USDT" in str(refused.value)
    assert fake_bybit.account.positions == {}


@pytest.mark.parametrize(
    ("quantity", "reduce_only", "code", "message"),
    [
        ("0.01", True, 110017, "current position is zero, cannot fix reduce-only order qty"),
        ("100", False, 110007, "ab not enough for new order"),
    ],
)
def test_bybit_refuses_a_reduce_only_order_with_no_position_and_an_order_over_the_margin(
    fake_bybit, quantity, reduce_only, code, message
):
    # given a Bybit account holding nothing and 10,000 USDT
    exchange = adapter(fake_bybit)
    # when a reduce-only sell, or a buy of 100 BTC (5.8 M USDT at 10x), is sent
    with pytest.raises(OrderRejected) as refused:
        exchange.market_order(
            "BTCUSDT", "sell", Decimal(quantity), client_order_id="arena4", reduce_only=reduce_only
        )
    # then Bybit refuses it with its code; nothing is held and the wallet is whole
    assert f'"retCode": {code}, "retMsg": "{message}"' in str(refused.value)
    assert fake_bybit.account.positions == {}
    assert fake_bybit.account.wallet == Decimal("10000")


def test_an_unchanged_bybit_leverage_is_answered_with_an_error_the_adapter_accepts(fake_bybit):
    # given a Bybit account with BTCUSDT at 5x
    exchange = adapter(fake_bybit)
    exchange.set_leverage("BTCUSDT", 5)
    # when 5x is set again
    exchange.set_leverage("BTCUSDT", 5)
    # then Bybit answered "leverage not modified" (110043), which is no failure
    assert len(fake_bybit.sent("POST", "/v5/position/set-leverage")) == 2
    assert fake_bybit.account.leverage_of("BTCUSDT") == 5


def test_cancelling_an_unknown_bybit_order_is_not_found(fake_bybit):
    # given no order arena5S on Bybit
    exchange = adapter(fake_bybit)
    # when it is cancelled
    with pytest.raises(OrderNotFound) as missing:
        exchange.cancel_order("BTCUSDT", "arena5S", conditional=True)
    # then Bybit says it does not exist (110001)
    assert '"retCode": 110001' in str(missing.value)


@pytest.mark.parametrize(
    ("key", "secret", "code"),
    [("wrong-key", API_SECRET, 10003), (API_KEY, "not-the-secret", 10004)],
)
def test_a_wrong_bybit_key_or_signature_is_refused_as_access_refused(fake_bybit, key, secret, code):
    # given an adapter with the wrong key, or the wrong secret
    exchange = CcxtExchange("bybit", api_key=key, secret=secret, api_url=fake_bybit.url)
    # when the balance is asked
    with pytest.raises(AccessRefused) as refused:
        exchange.balance()
    # then Bybit refused the key (10003) or the signature (10004); neither secret is shown
    assert f'"retCode": {code}' in str(refused.value)
    assert secret not in str(refused.value)


def test_a_bybit_stop_its_price_already_passed_is_refused(fake_bybit):
    # given a BTC long at 57970.9
    exchange = adapter(fake_bybit)
    exchange.market_order("BTCUSDT", "buy", Decimal("0.01"), client_order_id="arena6")
    # when its stop is asked above the price
    with pytest.raises(OrderRejected) as refused:
        exchange.protective_order(
            "BTCUSDT",
            "sell",
            Decimal("0.01"),
            kind="stop_loss",
            trigger_price=Decimal("58000"),
            client_order_id="arena6S",
        )
    # then Bybit refuses it: a falling trigger must rest under the price (110093)
    assert '"retCode": 110093' in str(refused.value)
    assert "expect Falling, but trigger_price[58000] >= current[57970.9]" in str(refused.value)


def test_a_bybit_gateway_error_is_a_transient_unavailability(fake_bybit):
    # given Bybit's gateway failing the next ticker with a 503 page
    exchange = adapter(fake_bybit)
    fake_bybit.fail_next("/v5/market/tickers", 503)
    # when the price is asked
    with pytest.raises(ExchangeUnavailable):
        exchange.price("BTCUSDT")
    # then the next ask is answered
    assert exchange.price("BTCUSDT") == PRICE


def test_a_bybit_account_is_checked_in_one_line_naming_the_markets_minimum(
    api_client, bybit_trader, fake_bybit
):
    # when the owner checks a working Bybit account
    answer = api_client.post(f"/api/traders/{bybit_trader.pk}/check").json()
    # then the line says the key works, the balance, the mode and Bybit's minimum order value
    assert answer == {
        "ok": True,
        "message": "bybit: key accepted, 10,000.00 USDT available, one-way mode; BTCUSDT "
        "takes orders from 5.00 USDT.",
    }
    assert fake_bybit.order_requests() == []


def test_a_bybit_hedge_mode_account_holding_nothing_is_checked_as_hedge_mode(
    api_client, bybit_trader, fake_bybit
):
    # given a Bybit account in hedge mode holding no position
    fake_bybit.account.hedge_mode = True
    # when the owner checks it
    answer = api_client.post(f"/api/traders/{bybit_trader.pk}/check").json()
    # then the line says hedge mode, as the market's position slots say (the orders its
    # executions send read the same)
    assert answer["message"] == (
        "bybit: key accepted, 10,000.00 USDT available, hedge mode; BTCUSDT "
        "takes orders from 5.00 USDT."
    )


def test_bybits_try_again_later_is_unavailable_not_a_refusal(fake_bybit):
    # given Bybit answering its system error, "please try again later" (10016), once
    fake_bybit.fail_next(
        "/v5/market/tickers",
        200,
        body={"retCode": 10016, "retMsg": "System error. Please try again later.", "result": {}},
    )
    exchange = adapter(fake_bybit)
    # when / then: the caller is told to retry, and the retry is answered
    with pytest.raises(ExchangeUnavailable, match="10016"):
        exchange.price("BTCUSDT")
    assert exchange.price("BTCUSDT") == PRICE
