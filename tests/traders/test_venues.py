"""Bybit and OKX through ccxt, its HTTP stubbed: each request as ccxt 4.5 builds it, each
answer shaped as the exchange gives it (the recorded answers of ccxt's static fixtures,
ts/src/test/static/response, and the exchanges' API references): a create answer that
holds ids alone, an order found only by the id field the exchange looks it up by."""

from __future__ import annotations

import json
from collections.abc import Callable
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from traders.exchanges.ccxt_exchange import CcxtExchange

CID = "arena7abc"
Answer = Callable[[dict[str, str]], dict[str, Any]]


class Venue:
    """ccxt's HTTP for one exchange: each request recorded, answered by its path."""

    def __init__(self, routes: dict[tuple[str, str], Answer]) -> None:
        self.routes = routes
        self.requests: list[tuple[str, str, dict[str, Any]]] = []

    def __call__(self, url, method="GET", headers=None, body=None) -> dict[str, Any]:
        parts = urlsplit(url)
        params = {**dict(parse_qsl(parts.query)), **(json.loads(body) if body else {})}
        self.requests.append((method, parts.path, params))
        return self.routes[(method, parts.path)](params)

    def sent(self, method: str, path: str) -> list[dict[str, Any]]:
        return [params for m, p, params in self.requests if (m, p) == (method, path)]


def swap(market_id: str, symbol: str, **fields: Any) -> dict[str, Any]:
    """A USDT-margined perpetual as ccxt describes a loaded market."""
    return {
        "id": market_id,
        "symbol": symbol,
        "base": "BTC",
        "quote": "USDT",
        "settle": "USDT",
        "baseId": "BTC",
        "quoteId": "USDT",
        "settleId": "USDT",
        "type": "swap",
        "spot": False,
        "margin": False,
        "swap": True,
        "future": False,
        "option": False,
        "contract": True,
        "linear": True,
        "inverse": False,
        "active": True,
        "contractSize": 1,
        "precision": {"amount": 0.001, "price": 0.1},
        "limits": {"amount": {"min": 0.001}, "cost": {"min": 5}, "leverage": {"max": 100}},
        "info": {},
        **fields,
    }


# Bybit v5: an order as /v5/order/realtime and /v5/order/history list it.
FILLED = {
    "orderId": "2088690093937486080",
    "orderLinkId": CID,
    "symbol": "BTCUSDT",
    "side": "Buy",
    "orderType": "Market",
    "orderStatus": "Filled",
    "price": "0",
    "qty": "0.01",
    "avgPrice": "57970.9",
    "cumExecQty": "0.01",
    "cumExecValue": "579.709",
    "cumExecFee": "0.31884",
    "cumFeeDetail": {"USDT": "0.31884"},
    "leavesQty": "0",
    "timeInForce": "IOC",
    "positionIdx": 0,
    "reduceOnly": False,
    "createdTime": "1725408000000",
    "updatedTime": "1725408000012",
}


def bybit_list(orders: list[dict]) -> dict[str, Any]:
    return {
        "retCode": 0,
        "retMsg": "OK",
        "result": {"category": "linear", "list": orders, "nextPageCursor": ""},
        "retExtInfo": {},
        "time": 1725408000100,
    }


def bybit_orders(params: dict[str, str]) -> dict[str, Any]:
    """Bybit finds an order by every id given: orderId "None" matches none."""
    wanted = [FILLED] if params.get("orderLinkId") == CID else []
    if "orderId" in params:
        wanted = [o for o in wanted if o["orderId"] == params["orderId"]]
    return bybit_list(wanted)


def bybit() -> tuple[CcxtExchange, Venue]:
    venue = Venue(
        {
            # The create answer holds the two ids alone (ccxt's recorded createOrder).
            ("POST", "/v5/order/create"): lambda p: {
                "retCode": 0,
                "retMsg": "OK",
                "result": {"orderId": FILLED["orderId"], "orderLinkId": p["orderLinkId"]},
                "retExtInfo": {},
                "time": 1725408000010,
            },
            ("GET", "/v5/order/realtime"): bybit_orders,
            ("GET", "/v5/order/history"): bybit_orders,
            ("GET", "/v5/position/list"): lambda p: bybit_list([]),
        }
    )
    adapter = CcxtExchange("bybit", api_key="k", secret="s")
    adapter.client.fetch = venue
    adapter.client.set_markets([swap("BTCUSDT", "BTC/USDT:USDT")])
    adapter.client.options.update(enableUnifiedAccount=True, enableUnifiedMargin=False)
    return adapter, venue


def test_a_bybit_entry_answered_with_its_ids_alone_is_confirmed_by_its_link_id():
    # given Bybit, whose create answer holds the order's ids and no fill
    adapter, venue = bybit()
    # when a market buy is sent
    result = adapter.market_order("BTCUSDT", "buy", Decimal("0.01"), client_order_id=CID)
    # then its fill was looked up by orderLinkId alone, and is the answer
    assert (result.status, result.filled, result.average_price) == (
        "filled",
        Decimal("0.01"),
        Decimal("57970.9"),
    )
    assert result.fee == Decimal("0.31884")
    assert [p["orderLinkId"] for p in venue.sent("POST", "/v5/order/create")] == [CID]
    lookups = venue.sent("GET", "/v5/order/realtime")
    assert lookups and all(p["orderLinkId"] == CID and "orderId" not in p for p in lookups)


def test_a_bybit_order_whose_answer_was_lost_is_found_by_its_link_id():
    # given Bybit holding the order sent with our client order id
    adapter, venue = bybit()
    # when it is looked up by that id (the answer to its create was lost)
    found = adapter.fetch_order("BTCUSDT", CID)
    # then it is found filled, asked by orderLinkId with no orderId beside it
    assert (found.status, found.filled, found.order_id) == (
        "filled",
        Decimal("0.01"),
        FILLED["orderId"],
    )
    assert all("orderId" not in p for _, _, p in venue.requests)


# OKX v5: an algo order as /api/v5/trade/order-algo and its lookup answer it.
def okx_answer(data: list[dict]) -> dict[str, Any]:
    return {"code": "0", "msg": "", "data": data}


def okx() -> tuple[CcxtExchange, Venue]:
    placed: list[dict] = []

    def place_algo(params: dict) -> dict:
        placed.append(params)
        algo = {"algoId": "1753184812254216192", "algoClOrdId": params.get("algoClOrdId", "")}
        return okx_answer([{**algo, "clOrdId": "", "sCode": "0", "sMsg": ""}])

    def algo_by_client_id(params: dict) -> dict:
        known = [p for p in placed if p.get("algoClOrdId") == params.get("algoClOrdId")]
        if not known:
            return {"code": "51603", "msg": "Order does not exist", "data": []}
        return okx_answer(
            [
                {
                    "algoId": "1753184812254216192",
                    "algoClOrdId": known[0]["algoClOrdId"],
                    "instId": "BTC-USDT-SWAP",
                    "instType": "SWAP",
                    "ordType": "conditional",
                    "side": known[0]["side"],
                    "posSide": "net",
                    "sz": known[0]["sz"],
                    "slTriggerPx": known[0].get("slTriggerPx", ""),
                    "slOrdPx": "-1",
                    "state": "live",
                    "reduceOnly": "true",
                    "cTime": "1725408000000",
                    "uTime": "1725408000000",
                }
            ]
        )

    venue = Venue(
        {
            ("POST", "/api/v5/trade/order-algo"): place_algo,
            ("GET", "/api/v5/trade/order-algo"): algo_by_client_id,
            ("GET", "/api/v5/account/config"): lambda p: okx_answer([{"posMode": "net_mode"}]),
        }
    )
    adapter = CcxtExchange("okx", api_key="k", secret="s", password="p")
    adapter.client.fetch = venue
    adapter.client.set_markets([swap("BTC-USDT-SWAP", "BTC/USDT:USDT", contractSize=0.01)])
    return adapter, venue


def test_an_okx_stop_is_placed_looked_up_and_found_by_its_algo_client_id():
    # given OKX, whose algo orders are looked up and cancelled by algoClOrdId
    adapter, venue = okx()
    # when a stop loss is placed, then looked up by its client order id
    adapter.protective_order(
        "BTCUSDT",
        "sell",
        Decimal("1"),
        kind="stop_loss",
        trigger_price=Decimal("56231.8"),
        client_order_id=CID + "S",
    )
    found = adapter.fetch_order("BTCUSDT", CID + "S", conditional=True)
    # then it was placed with algoClOrdId, and found by it
    [placed] = venue.sent("POST", "/api/v5/trade/order-algo")
    assert (placed.get("algoClOrdId"), placed.get("clOrdId")) == (CID + "S", None)
    assert [p["algoClOrdId"] for p in venue.sent("GET", "/api/v5/trade/order-algo")] == [CID + "S"]
    assert (found.status, found.order_id) == ("open", "1753184812254216192")
