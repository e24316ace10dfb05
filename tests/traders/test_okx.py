"""Executions on OKX through ccxt, against the fake OKX v5 over real HTTP: an entry
confirmed by its clOrdId (OKX's create answer holds the ids and sCode alone), stops placed,
looked up and cancelled by algoClOrdId, the position mode, and OKX's refusals."""

from __future__ import annotations

from decimal import Decimal

import ccxt
import pytest

from tests.fakes.okx_server import FakeOkx
from tests.traders.conftest import API_KEY, API_PASSPHRASE, API_SECRET
from traders.exchanges.base import AccessRefused, ExchangeUnavailable, OrderNotFound, OrderRejected
from traders.exchanges.ccxt_exchange import CcxtExchange
from traders.exchanges.fills import money
from traders.models import Execution
from traders.services import execution_request, execution_submit

pytestmark = pytest.mark.django_db

PRICE = Decimal("57970.9")  # BTCUSDT at the fake's clock (the dataset's end)
# 25 % of 10,000 USDT at 5x = 12,500 USDT, in contracts of 0.01 BTC, to the lot of 0.01
CONTRACTS = Decimal("21.56")
BATCH = "/api/v5/trade/batch-orders"
ALGO = "/api/v5/trade/order-algo"
SYMBOL = "BTC/USDT:USDT"


def submit(user, trader, decision) -> Execution:
    execution = execution_request(owner=user, debate_id=decision.debate_id, trader_id=trader.pk)
    return execution_submit(execution_id=execution.pk)


def placed(fake: FakeOkx, path: str) -> list[dict]:
    """Return the order placements received on ``path``, one per order (a batch unrolled)."""
    bodies = [request.json for request in fake.order_requests() if request.path == path]
    return [entry for body in bodies for entry in (body if isinstance(body, list) else [body])]


def adapter(fake: FakeOkx, secret: str = API_SECRET, password: str = API_PASSPHRASE):
    return CcxtExchange("okx", api_key=API_KEY, secret=secret, password=password, api_url=fake.url)


def protect(exchange: CcxtExchange, cid: str, contracts: str = "1") -> None:
    """Place a stop loss at 56000 and a take profit at 61000 under a long of ``contracts``."""
    for kind, price, suffix in (("stop_loss", "56000", "S"), ("take_profit", "61000", "T")):
        exchange.protective_order(
            "BTCUSDT",
            "sell",
            Decimal(contracts),
            kind=kind,
            trigger_price=Decimal(price),
            client_order_id=cid + suffix,
        )


def test_an_okx_long_is_confirmed_by_its_client_id_and_protected_by_algo_orders(
    user, okx_trader, fake_okx, make_decision
):
    # given a BTC long decision (25 % at 5x, SL 3 %, TP 6 %) on OKX
    decision = make_decision()
    # when it is submitted
    execution = submit(user, okx_trader, decision)
    cid = execution.client_order_id
    # then the leverage was set in cross margin, and a market buy of contracts carried clOrdId
    assert fake_okx.sent("POST", "/api/v5/account/set-leverage") == [
        {"lever": 5, "mgnMode": "cross", "instId": "BTC-USDT-SWAP"}
    ]
    entry = {"instId": "BTC-USDT-SWAP", "tdMode": "cross", "sz": "21.56"}
    assert placed(fake_okx, BATCH) == [
        {**entry, "side": "buy", "ordType": "market", "clOrdId": cid}
    ]
    # and its answer holding ordId and sCode alone, the fill was looked up by clOrdId
    assert fake_okx.sent("GET", "/api/v5/trade/order") == [
        {"instId": "BTC-USDT-SWAP", "clOrdId": cid}
    ]
    # and the stop and target went out as conditional algo orders keyed by algoClOrdId alone
    stop = {**entry, "side": "sell", "ordType": "conditional", "reduceOnly": True}
    assert placed(fake_okx, ALGO) == [
        {
            **stop,
            "slTriggerPx": "56231.8",
            "slOrdPx": "-1",
            "slTriggerPxType": "last",
            "algoClOrdId": cid + "S",
        },
        {
            **stop,
            "tpTriggerPx": "61449.2",
            "tpOrdPx": "-1",
            "tpTriggerPxType": "last",
            "algoClOrdId": cid + "T",
        },
    ]
    # and the execution records the fill, OKX's fee and the algo orders' ids
    assert (execution.status, execution.error) == ("filled", "")
    assert (execution.filled_quantity, execution.average_price, execution.fee) == (
        CONTRACTS,
        PRICE,
        money(CONTRACTS * Decimal("0.01") * PRICE * Decimal("0.0005")),
    )
    assert execution.exchange_order_id == fake_okx.orders[0]["ordId"]
    assert [execution.stop_loss_order_id, execution.take_profit_order_id] == [
        algo["algoId"] for algo in fake_okx.algo_orders
    ]


def test_an_okx_entry_whose_answer_was_lost_is_found_by_its_client_id_and_not_sent_again(
    user, okx_trader, fake_okx, make_decision
):
    # given OKX placing the entry, then dropping the connection before answering
    decision = make_decision()
    execution = execution_request(owner=user, debate_id=decision.debate_id, trader_id=okx_trader.pk)
    fake_okx.drop_after_next(BATCH)
    with pytest.raises(ExchangeUnavailable):
        execution_submit(execution_id=execution.pk)
    # when the retry runs
    execution = execution_submit(execution_id=execution.pk)
    # then it found the entry by clOrdId and sent it once (a second one with the same
    # clOrdId would have been refused as a duplicate, 51016)
    assert [entry["clOrdId"] for entry in placed(fake_okx, BATCH)] == [execution.client_order_id]
    assert (execution.status, execution.filled_quantity) == ("filled", CONTRACTS)
    assert fake_okx.account.positions[("BTCUSDT", "net")].amount == CONTRACTS


def test_an_okx_account_is_checked_in_one_line(api_client, okx_trader, fake_okx):
    # when the owner checks a working OKX account in long/short mode
    fake_okx.account.hedge_mode = True
    answer = api_client.post(f"/api/traders/{okx_trader.pk}/check").json()
    # then the line says the key works, the balance and the mode; OKX lists no minimum
    # order value (its minimum is a size: minSz contracts)
    assert answer == {
        "ok": True,
        "message": "okx: key accepted, 10,000.00 USDT available, hedge mode; BTCUSDT lists "
        "no minimum order value.",
    }


def test_a_close_on_okx_cancels_the_stops_by_their_algo_client_ids(
    user, okx_trader, fake_okx, make_decision
):
    # given a protected BTC long on OKX
    opened = submit(user, okx_trader, make_decision())
    # when a later decision closes it
    closed = submit(user, okx_trader, make_decision(action="close_long"))
    # then a reduce-only sell closed it, and both algo orders were cancelled by algoClOrdId
    assert closed.status == "filled", closed.error
    assert placed(fake_okx, BATCH)[-1]["reduceOnly"] is True
    assert [r.json for r in fake_okx.requests if r.path == "/api/v5/trade/cancel-algos"] == [
        [{"instId": "BTC-USDT-SWAP", "algoClOrdId": opened.client_order_id + "T"}],
        [{"instId": "BTC-USDT-SWAP", "algoClOrdId": opened.client_order_id + "S"}],
    ]
    assert [algo["state"] for algo in fake_okx.algo_orders] == ["canceled", "canceled"]
    assert fake_okx.account.positions[("BTCUSDT", "net")].amount == 0


def test_an_okx_stop_is_looked_up_by_its_algo_client_id_and_fills_when_the_price_crosses_it(
    fake_okx,
):
    # given a long of one contract, its stop at 56000 and target at 61000
    exchange = adapter(fake_okx)
    exchange.market_order("BTCUSDT", "buy", Decimal("1"), client_order_id="arena1")
    protect(exchange, "arena1")
    stop = exchange.fetch_order("BTCUSDT", "arena1S", conditional=True)
    assert (stop.status, stop.order_id) == ("open", fake_okx.algo_orders[0]["algoId"])
    # when the price falls through the stop
    fake_okx.set_price("BTCUSDT", "55000")
    triggered = fake_okx.trigger_crossed()
    # then the stop turned effective, its market order filled at the price, closing the long
    assert [(algo["algoClOrdId"], algo["state"]) for algo in triggered] == [
        ("arena1S", "effective")
    ]
    stop = exchange.fetch_order("BTCUSDT", "arena1S", conditional=True)
    assert stop.status == "filled"
    assert fake_okx.account.positions[("BTCUSDT", "net")].amount == 0
    # and the account's fills name the entry and the stop's order, its algo ids carried
    fills = exchange.client.fetch_my_trades(SYMBOL, fake_okx.now_ms)
    assert [(f["side"], f["amount"], f["price"], f["order"]) for f in fills] == [
        ("buy", 1.0, 57970.9, fake_okx.orders[0]["ordId"]),
        ("sell", 1.0, 55000.0, triggered[0]["ordId"]),
    ]
    assert fake_okx.orders[1]["algoClOrdId"] == "arena1S"


def test_okx_lists_open_stops_for_the_conditional_type_alone(fake_okx):
    # given a protected long: two conditional algo orders resting
    exchange = adapter(fake_okx)
    exchange.market_order("BTCUSDT", "buy", Decimal("1"), client_order_id="arena2")
    protect(exchange, "arena2")
    # when the open trigger orders are asked as ccxt asks by default (ordType=trigger), and
    # with ordType=conditional
    default = exchange.client.fetch_open_orders(SYMBOL, params={"trigger": True})
    conditional = exchange.client.fetch_open_orders(
        SYMBOL, params={"trigger": True, "ordType": "conditional"}
    )
    # then only the second finds them; their client id is in algoClOrdId (ccxt's
    # clientOrderId reads clOrdId, which OKX leaves empty until an algo order triggers)
    assert default == []
    assert [(o["info"]["algoClOrdId"], o["clientOrderId"]) for o in conditional] == [
        ("arena2T", None),
        ("arena2S", None),
    ]


def test_on_an_okx_long_short_mode_account_every_order_carries_its_pos_side(
    user, okx_trader, fake_okx, make_decision
):
    # given an OKX account in long/short mode
    fake_okx.account.hedge_mode = True
    # when a BTC long is opened, then closed by a decision
    opened = submit(user, okx_trader, make_decision())
    closed = submit(user, okx_trader, make_decision(action="close_long"))
    # then the entry, the stop, the target and the close all named the long side, none
    # reduce-only (the side closes what it does not open)
    assert (opened.status, closed.status) == ("filled", "filled"), (opened.error, closed.error)
    sent = [(o["side"], o.get("posSide"), o.get("reduceOnly")) for o in placed(fake_okx, BATCH)]
    assert sent == [("buy", "long", None), ("sell", "long", None)]
    algos = [(o["side"], o.get("posSide"), o.get("reduceOnly")) for o in placed(fake_okx, ALGO)]
    assert algos == [("sell", "long", None), ("sell", "long", None)]
    assert fake_okx.account.positions[("BTCUSDT", "long")].amount == 0


def test_an_okx_order_whose_pos_side_does_not_match_the_mode_is_refused(fake_okx):
    # given an OKX account in net mode
    exchange = adapter(fake_okx)
    # when an order names the long side
    with pytest.raises(ccxt.BadRequest) as refused:
        exchange.client.create_order(SYMBOL, "market", "buy", 1, None, {"posSide": "long"})
    # then OKX refuses it (51000) and nothing is held
    assert '"sCode": "51000", "sMsg": "Parameter posSide error"' in str(refused.value)
    assert fake_okx.account.positions == {}


def test_an_okx_size_below_the_minimum_is_refused(fake_okx):
    # given BTC-USDT-SWAP taking orders from one contract (its lot staying 0.01)
    fake_okx.min_size["BTCUSDT"] = "1"
    exchange = adapter(fake_okx)
    assert exchange.market("BTCUSDT").min_amount == Decimal("1")
    # when half a contract is sent
    with pytest.raises(OrderRejected) as refused:
        exchange.market_order("BTCUSDT", "buy", Decimal("0.5"), client_order_id="arena3")
    # then OKX refuses it (51020) and nothing is held
    assert '"sCode": "51020"' in str(refused.value)
    assert fake_okx.account.positions == {}


@pytest.mark.parametrize(
    ("contracts", "reduce_only", "code"),
    [("1", True, "51169"), ("10000", False, "51008")],
)
def test_okx_refuses_a_reduce_only_order_with_no_position_and_an_order_over_the_margin(
    fake_okx, contracts, reduce_only, code
):
    # given an OKX account holding nothing and 10,000 USDT
    exchange = adapter(fake_okx)
    # when a reduce-only sell, or a sell of 10,000 contracts (5.8 M USDT at 10x), is sent
    with pytest.raises(OrderRejected) as refused:
        exchange.market_order(
            "BTCUSDT", "sell", Decimal(contracts), client_order_id="arena4", reduce_only=reduce_only
        )
    # then OKX refuses it with its code; nothing is held and the wallet is whole
    assert f'"sCode": "{code}"' in str(refused.value)
    assert fake_okx.account.positions == {}
    assert fake_okx.account.wallet == Decimal("10000")


def test_resending_an_okx_client_id_is_refused_as_a_duplicate(fake_okx):
    # given a filled market buy sent with clOrdId arena5
    exchange = adapter(fake_okx)
    exchange.market_order("BTCUSDT", "buy", Decimal("1"), client_order_id="arena5")
    # when the same clOrdId is sent again
    with pytest.raises(OrderRejected) as refused:
        exchange.market_order("BTCUSDT", "buy", Decimal("1"), client_order_id="arena5")
    # then OKX refuses it (51016), and the position holds the first order alone
    assert '"sCode": "51016", "sMsg": "Duplicated clOrdId"' in str(refused.value)
    assert fake_okx.account.positions[("BTCUSDT", "net")].amount == Decimal("1")


@pytest.mark.parametrize("conditional", [False, True])
def test_an_unknown_okx_order_is_not_found(fake_okx, conditional):
    # given no order arena6 on OKX
    exchange = adapter(fake_okx)
    # when it is looked up, as an order or an algo order
    with pytest.raises(OrderNotFound) as missing:
        exchange.fetch_order("BTCUSDT", "arena6", conditional=conditional)
    # then OKX says it does not exist (51603)
    assert '"code": "51603"' in str(missing.value)


@pytest.mark.parametrize(
    ("key", "secret", "password", "code"),
    [
        ("wrong-key", API_SECRET, API_PASSPHRASE, "50111"),
        (API_KEY, API_SECRET, "wrong-passphrase", "50105"),
        (API_KEY, "not-the-secret", API_PASSPHRASE, "50113"),
    ],
)
def test_a_wrong_okx_key_passphrase_or_signature_is_refused_as_access_refused(
    fake_okx, key, secret, password, code
):
    # given an adapter with the wrong key, passphrase or secret
    exchange = CcxtExchange(
        "okx", api_key=key, secret=secret, password=password, api_url=fake_okx.url
    )
    # when the balance is asked
    with pytest.raises(AccessRefused) as refused:
        exchange.balance()
    # then OKX refused it with HTTP 401 and its code; no secret is shown
    assert f'"code": "{code}"' in str(refused.value)
    assert secret not in str(refused.value)
    assert password not in str(refused.value)


def test_an_okx_gateway_error_is_a_transient_unavailability(fake_okx):
    # given OKX's gateway failing the next ticker with a 503 page
    exchange = adapter(fake_okx)
    fake_okx.fail_next("/api/v5/market/ticker", 503)
    # when the price is asked
    with pytest.raises(ExchangeUnavailable):
        exchange.price("BTCUSDT")
    # then the next ask is answered
    assert exchange.price("BTCUSDT") == PRICE


def test_an_okx_stop_its_price_already_passed_is_refused(fake_okx):
    # given a BTC long at 57970.9
    exchange = adapter(fake_okx)
    exchange.market_order("BTCUSDT", "buy", Decimal("1"), client_order_id="arena7")
    # when its stop is asked above the price
    with pytest.raises(OrderRejected) as refused:
        exchange.protective_order(
            "BTCUSDT",
            "sell",
            Decimal("1"),
            kind="stop_loss",
            trigger_price=Decimal("58000"),
            client_order_id="arena7S",
        )
    # then OKX refuses it (51280) and no algo order rests
    assert '"sCode": "51280"' in str(refused.value)
    assert fake_okx.algo_orders == []
