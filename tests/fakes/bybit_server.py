"""A fake Bybit v5 (unified trading account, linear USDT perpetuals): a real HTTP server on
127.0.0.1 for tests, answering as Bybit does.

ccxt's ``bybit`` is pointed at it like the Binance fake (``override_api_urls``, or the
adapter's ``api_url``). Answers follow Bybit's: the envelope ``{retCode, retMsg, result,
retExtInfo, time}`` with HTTP 200, refusals included; shapes as ccxt's recorded fixtures
(``ts/src/test/static/response/bybit.json``) and Bybit's v5 reference show them.

Endpoints (``ROUTES``), exactly those ccxt 4.5 calls for what the adapter does: ``GET
/v5/market/time`` (ccxt's fetch_time), ``/v5/market/instruments-info`` (category
``linear``: the dataset pairs and a USDC perpetual, each with its ``lotSizeFilter``
minOrderQty, qtyStep and minNotionalValue, ``priceFilter`` tickSize and
``leverageFilter``; ``spot``, ``inverse``, ``option`` and ``status=PreLaunch`` list
nothing), ``/v5/market/tickers``; signed: ``GET /v5/asset/coin/query-info`` (ccxt loads
the coins with the markets once it has a key), ``/v5/user/query-api`` and
``/v5/account/info`` (ccxt's unified-account check: a UTA 2.0 account),
``/v5/account/wallet-balance`` (USDT), ``/v5/position/list`` (with a ``symbol``, every
position slot of it, empty or not; with ``settleCoin`` alone, those holding a size, as
Bybit documents), ``POST /v5/position/set-leverage``, ``POST /v5/order/create``, ``GET
/v5/order/realtime`` (open orders: New and Untriggered), ``GET /v5/order/history``
(finished ones: Filled, Cancelled, Deactivated), ``POST /v5/order/cancel`` and ``GET
/v5/execution/list`` (the account's fills). The last three lookups filter by ``orderId``,
``orderLinkId`` and ``orderFilter`` (``Order`` or ``StopOrder``, the conditional orders
ccxt asks for with ``trigger``).

Orders: a market order fills at once at the price (``price()``, the dataset's at ``now``
or ``set_price``'s) with a taker fee of ``account.fee_rate``; the create answer holds only
``orderId`` and ``orderLinkId``, so its fill is seen by looking the order up. A
conditional order (``triggerPrice`` with ``triggerDirection`` 1 rising or 2 falling, as
ccxt sends ``stopLossPrice`` / ``takeProfitPrice``) rests as Untriggered until
``trigger_crossed()`` finds the price past its trigger: it then fills at the price like a
market order (Filled, one more execution), or is Deactivated when it has nothing left to
reduce.

Refusals, with Bybit's codes: a reused orderLinkId 110072, an order under the market's
minimum value (``min_notional``, 5 USDT as Bybit lists its perpetuals) 110094, naming it
(reduce-only orders are exempt), or under its minimum quantity 10001, a reduce-only order
with no position to reduce 110017, too little available margin 110007, a positionIdx
that does not match the mode 10001 ("position idx not match position mode": 0 in one-way
mode, 1 buy side or 2 sell side in hedge mode), a trigger already passed 110092 / 110093,
an unknown order (cancel) 110001, an unchanged leverage 110043 "leverage not modified".
Bybit keeps the position mode per symbol (set by symbol or by settle coin); the fake keeps
one for the account (``account.hedge_mode``). No endpoint tells it, so ccxt cannot ask:
the position slots of a symbol show it (positionIdx 1 and 2 in hedge mode, 0 in one-way).

With ``api_key`` and ``api_secret`` set, signed endpoints check ``X-BAPI-API-KEY``
(10003) and ``X-BAPI-SIGN``, the HMAC-SHA256 of timestamp + key + recv window + query
string or JSON body (10004), as Bybit does; the timestamp is not held to the fake's clock.
Faults as in ``tests.fakes.venue``; a 5xx carries Bybit's gateway page, not JSON.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from typing import Any

from tests.fakes import bybit_answers as answers
from tests.fakes.bybit_answers import (
    EXECUTION_FIELDS,
    INSTRUMENTS,
    MIN_NOTIONAL,
    OPEN_STATUSES,
    ORDER_FIELDS,
    POSITION_IDX,
)
from tests.fakes.perp import LONG, NET, NOTHING_TO_REDUCE, SHORT, PerpAccount, Plan, crossed, text
from tests.fakes.venue import (
    DEFAULT_NOW,
    FakeVenue,
    RecordedRequest,
    hmac_sha256,
    same_signature,
    signed,
)


class FakeBybit(FakeVenue):
    """A Bybit v5 lookalike with one unified trading account; use as a context manager."""

    ROUTES: dict[tuple[str, str], str] = {
        ("GET", "/v5/market/time"): "server_time",
        ("GET", "/v5/market/instruments-info"): "instruments",
        ("GET", "/v5/market/tickers"): "tickers",
        ("GET", "/v5/asset/coin/query-info"): "coin_info",
        ("GET", "/v5/user/query-api"): "api_key_info",
        ("GET", "/v5/account/info"): "account_info",
        ("GET", "/v5/account/wallet-balance"): "wallet_balance",
        ("GET", "/v5/position/list"): "position_list",
        ("POST", "/v5/position/set-leverage"): "set_leverage",
        ("POST", "/v5/order/create"): "create_order",
        ("GET", "/v5/order/realtime"): "open_orders",
        ("GET", "/v5/order/history"): "order_history",
        ("POST", "/v5/order/cancel"): "cancel_order",
        ("GET", "/v5/execution/list"): "executions",
    }
    ORDER_PATHS = ("/v5/order/create",)

    def __init__(self, now: datetime = DEFAULT_NOW, **kwargs: Any) -> None:
        super().__init__(now, **kwargs)
        self.api_key: str | None = None
        self.api_secret: str | None = None
        self.account = PerpAccount(
            price=self.price, contract_size=lambda symbol: Decimal(1), fee_rate=Decimal("0.00055")
        )
        self.min_notional = {symbol: MIN_NOTIONAL for symbol in self.symbols}
        self.orders: list[dict[str, Any]] = []
        self.executions: list[dict[str, Any]] = []
        self._ids = itertools.count(1)

    def error_body(self, status: int) -> Any:
        """Return Bybit's answer to an HTTP ``status``: its gateway's page for a 5xx, its
        rate limit (10006) for 429, a missing route (10017) for 404."""
        if status >= 500:
            return "<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>"
        if status == 429:
            return answers.envelope(10006, "Too many visits. Exceeded the API Rate Limit.", {}, 0)
        return answers.envelope(10017, "Route not found.", {}, 0)

    def reject_next(self, path: str, *, code: int, msg: str, times: int = 1) -> None:
        """Refuse the next ``times`` requests to ``path`` with a Bybit error; do nothing."""
        self.fail_next(path, 200, times, body=answers.envelope(code, msg, {}, self.now_ms))

    # public endpoints

    def server_time(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /v5/market/time`` with the fake's ``now``."""
        seconds = self.now_ms // 1000
        return self._ok({"timeSecond": str(seconds), "timeNano": str(self.now_ms * 1_000_000)})

    def instruments(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /v5/market/instruments-info``: the linear perpetuals, trading."""
        category = request.params.get("category")
        listed = category == "linear" and request.params.get("status") != "PreLaunch"
        entries = []
        if listed:
            entries = [answers.instrument(s, self.min_notional[s]) for s in self.symbols]
            entries.append(answers.instrument("BTCPERP", MIN_NOTIONAL, settle="USDC"))
        return self._ok({"category": category, "list": entries, "nextPageCursor": ""})

    def tickers(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /v5/market/tickers`` for one symbol or every linear one."""
        wanted = request.params.get("symbol")
        if wanted is not None and wanted not in self.symbols:
            return self._error(10001, "Not supported symbols")
        symbols = [wanted] if wanted else list(self.symbols)
        listed = [answers.ticker(s, self.price(s), self.day_rows(s)) for s in symbols]
        return self._ok({"category": "linear", "list": listed})

    # account endpoints

    @signed
    def coin_info(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /v5/asset/coin/query-info`` (ccxt loads it with the markets)."""
        names = ["USDT", *(symbol.removesuffix("USDT") for symbol in self.symbols)]
        return self._ok(answers.coins(names))

    @signed
    def api_key_info(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /v5/user/query-api``: a read-write key of a unified account."""
        return self._ok(answers.api_key(self.api_key or ""))

    @signed
    def account_info(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /v5/account/info``: a UTA 2.0 account in regular margin."""
        return self._ok(answers.account_info(self.now_ms))

    @signed
    def wallet_balance(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /v5/account/wallet-balance``: the unified account's USDT."""
        if request.params.get("accountType") != "UNIFIED":
            return self._error(10001, "accountType only support UNIFIED.")
        with self.lock:
            wallet, unrealized, margin = self.account.funds()
        return self._ok({"list": [answers.wallet(wallet, unrealized, margin)]})

    @signed
    def position_list(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /v5/position/list``: a symbol's position slots, or the positions
        holding a size in the settle coin."""
        symbol = request.params.get("symbol")
        with self.lock:
            if symbol is not None:
                if symbol not in self.symbols:
                    return self._error(10001, "Not supported symbols")
                sides = (LONG, SHORT) if self.account.hedge_mode else (NET,)
                entries = [self._position(symbol, side) for side in sides]
            elif request.params.get("settleCoin") == "USDT":
                entries = [
                    self._position(*key) for key, p in self.account.positions.items() if p.amount
                ]
            else:
                return self._error(10001, "symbol or settleCoin is required")
        return self._ok({"category": "linear", "list": entries, "nextPageCursor": ""})

    @signed
    def set_leverage(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``POST /v5/position/set-leverage``; an unchanged leverage is an error."""
        params = request.params
        symbol = params.get("symbol", "")
        if symbol not in self.symbols:
            return self._error(10001, "Not supported symbols")
        leverage = int(Decimal(str(params.get("buyLeverage", "0"))))
        if not 1 <= leverage <= Decimal(INSTRUMENTS.get(symbol, ("", "", "100"))[2]):
            return self._error(10001, "leverage invalid")
        with self.lock:
            if self.account.leverage_of(symbol) == leverage:
                return self._error(110043, "leverage not modified")
            self.account.leverage[symbol] = leverage
        return self._ok({})

    # orders

    @signed
    def create_order(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``POST /v5/order/create``: fill a market order, or rest a conditional one;
        the answer holds the ids alone."""
        params = request.params
        symbol = params.get("symbol", "")
        if params.get("category") != "linear" or symbol not in self.symbols:
            return self._error(10001, "Not supported symbols")
        if params.get("orderType") != "Market":
            return self._error(10001, "The fake takes market orders only.")
        quantity, refused = self._quantity(symbol, params.get("qty"))
        if refused is not None:
            return refused
        position_side, refused = self._position_side(params)
        if refused is not None:
            return refused
        with self.lock:
            link_id = str(params.get("orderLinkId") or "")
            if link_id and any(order["orderLinkId"] == link_id for order in self.orders):
                return self._error(110072, "OrderLinkedID is duplicate")
            if params.get("triggerPrice") is not None:
                return self._rest(params, symbol, quantity, position_side, link_id)
            order = self._new_order(params, symbol, quantity, position_side, link_id)
            refused = self._execute(order, reduce_only=params.get("reduceOnly") is True)
            if refused is not None:
                return refused
            self.orders.append(order)
        return self._ok({"orderId": order["orderId"], "orderLinkId": link_id})

    @signed
    def open_orders(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /v5/order/realtime``: the open orders (New, Untriggered)."""
        return self._order_list(request, lambda order: order["orderStatus"] in OPEN_STATUSES)

    @signed
    def order_history(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /v5/order/history``: the finished orders."""
        return self._order_list(request, lambda order: order["orderStatus"] not in OPEN_STATUSES)

    @signed
    def cancel_order(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``POST /v5/order/cancel`` by ``orderId`` or ``orderLinkId``."""
        with self.lock:
            found = [o for o in self.orders if self._matches(o, request.params)]
            if not found or found[0]["orderStatus"] not in OPEN_STATUSES:
                return self._error(110001, "order not exists or too late to cancel")
            order = found[0]
            untriggered = order["orderStatus"] == "Untriggered"
            order["orderStatus"] = "Deactivated" if untriggered else "Cancelled"
            order["cancelType"] = "CancelByUser"
            order["updatedTime"] = str(self.now_ms)
        return self._ok({"orderId": order["orderId"], "orderLinkId": order["orderLinkId"]})

    @signed
    def executions(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /v5/execution/list``: the account's fills, newest first."""
        params = request.params
        start = int(params.get("startTime", 0))
        end = int(params.get("endTime", self.now_ms))
        with self.lock:
            fills = [
                dict(fill)
                for fill in reversed(self.executions)
                if self._matches(fill, params) and start <= int(fill["execTime"]) <= end
            ]
        limit = int(params.get("limit", 50))
        return self._ok({"category": "linear", "list": fills[:limit], "nextPageCursor": ""})

    # test hooks

    def trigger_crossed(self) -> list[dict[str, Any]]:
        """Trigger the resting conditional orders whose trigger the price has crossed, as
        Bybit would: each fills at the price (or is Deactivated with nothing to reduce).
        Return the orders triggered."""
        triggered = []
        with self.lock:
            for order in self.orders:
                if order["orderStatus"] != "Untriggered":
                    continue
                price = self.price(order["symbol"])
                rising = order["triggerDirection"] == 1
                if not crossed(Decimal(order["triggerPrice"]), price, rising=rising):
                    continue
                refused = self._execute(order, reduce_only=order["reduceOnly"])
                if refused is not None:
                    order["orderStatus"] = "Deactivated"
                triggered.append({k: v for k, v in order.items() if not k.startswith("_")})
        return triggered

    # helpers (called with ``self.lock`` held where they read or change the account)

    def _rest(
        self, params: dict[str, Any], symbol: str, quantity: Decimal, side: str, link_id: str
    ) -> tuple[int, Any]:
        trigger = Decimal(str(params["triggerPrice"]))
        rising = int(params.get("triggerDirection", 0)) == 1
        price = self.price(symbol)
        if rising and trigger <= price:
            return self._error(
                110092, f"expect Rising, but trigger_price[{trigger}] <= current[{price}]"
            )
        if not rising and trigger >= price:
            return self._error(
                110093, f"expect Falling, but trigger_price[{trigger}] >= current[{price}]"
            )
        order = self._new_order(params, symbol, quantity, side, link_id)
        order.update(
            orderStatus="Untriggered",
            triggerPrice=text(trigger),
            triggerDirection=1 if rising else 2,
            triggerBy="LastPrice",
            stopOrderType="Stop",
            lastPriceOnCreated=text(price),
        )
        self.orders.append(order)
        return self._ok({"orderId": order["orderId"], "orderLinkId": link_id})

    def _execute(self, order: dict[str, Any], *, reduce_only: bool) -> tuple[int, Any] | None:
        """Fill ``order`` at the price; return Bybit's refusal instead when it cannot."""
        symbol = order["symbol"]
        side = "buy" if order["side"] == "Buy" else "sell"
        quantity = Decimal(order["qty"])
        plan = self.account.plan(
            symbol, side, quantity, position_side=order["_side"], reduce_only=reduce_only
        )
        if plan == NOTHING_TO_REDUCE:
            return self._error(110017, "current position is zero, cannot fix reduce-only order qty")
        if isinstance(plan, str):
            return self._error(110017, "Reduce-only rule not satisfied")
        price = self.price(symbol)
        if plan.opens and not reduce_only:
            least = Decimal(self.min_notional[symbol])
            if quantity * price < least:
                return self._error(110094, f"Order does not meet minimum order value {least}USDT")
            if self.account.margin_needed(symbol, quantity, price) > self.account.available():
                return self._error(110007, "ab not enough for new order")
        _, fee = self.account.fill(plan, price)
        self._filled(order, plan, price, fee)
        return None

    def _filled(self, order: dict[str, Any], plan: Plan, price: Decimal, fee: Decimal) -> None:
        value = plan.quantity * price
        order.update(
            orderStatus="Filled",
            avgPrice=text(price),
            cumExecQty=text(plan.quantity),
            cumExecValue=text(value),
            cumExecFee=text(fee),
            cumFeeDetail={"USDT": text(fee)},
            leavesQty="0",
            leavesValue="0",
            updatedTime=str(self.now_ms),
        )
        conditional = order["stopOrderType"] == "Stop"
        self.executions.append(
            {
                **EXECUTION_FIELDS,
                **{key: order[key] for key in ("symbol", "orderId", "orderLinkId", "side")},
                "stopOrderType": "Stop" if conditional else "UNKNOWN",
                "createType": "CreateByStopOrder" if conditional else "CreateByUser",
                "execId": self._uuid(),
                "execPrice": text(price),
                "execQty": text(plan.quantity),
                "execValue": text(value),
                "execFee": text(fee),
                "feeRate": text(self.account.fee_rate),
                "execTime": str(self.now_ms),
                "orderPrice": order["price"],
                "orderQty": order["qty"],
                "closedSize": "0" if plan.opens else text(plan.quantity),
                "markPrice": text(price),
                "seq": next(self._ids),
            }
        )

    def _new_order(
        self, params: dict[str, Any], symbol: str, quantity: Decimal, side: str, link_id: str
    ) -> dict[str, Any]:
        now = str(self.now_ms)
        return {
            **ORDER_FIELDS,
            "orderId": self._uuid(),
            "orderLinkId": link_id,
            "symbol": symbol,
            "side": params.get("side"),
            "qty": text(quantity),
            "leavesQty": text(quantity),
            "positionIdx": POSITION_IDX[side],
            "reduceOnly": params.get("reduceOnly") is True,
            "createdTime": now,
            "updatedTime": now,
            "_side": side,
        }

    def _order_list(
        self, request: RecordedRequest, keep: Callable[[dict[str, Any]], bool]
    ) -> tuple[int, Any]:
        params = request.params
        if params.get("category") != "linear":
            return self._error(10001, "category only support linear")
        with self.lock:
            listed = [
                {k: v for k, v in order.items() if not k.startswith("_")}
                for order in reversed(self.orders)
                if keep(order) and self._matches(order, params)
            ]
        return self._ok({"category": "linear", "list": listed, "nextPageCursor": ""})

    @staticmethod
    def _matches(entry: dict[str, Any], params: dict[str, Any]) -> bool:
        """Say whether an order or a fill is one the lookup asks for: Bybit looks an order
        up by every id given (``orderId`` first), then by symbol and order filter."""
        for key in ("orderId", "orderLinkId", "symbol"):
            if key in params and entry.get(key) != params[key]:
                return False
        conditional = entry.get("stopOrderType") == "Stop"
        wanted = params.get("orderFilter")
        return wanted is None or (wanted == "StopOrder") == conditional

    def _quantity(self, symbol: str, raw: Any) -> tuple[Decimal, tuple[int, Any] | None]:
        step = Decimal(INSTRUMENTS.get(symbol, ("", "0.001", ""))[1])
        try:
            quantity = Decimal(str(raw))
        except ArithmeticError:
            return Decimal(0), self._error(10001, "Qty invalid")
        if quantity < step:
            return quantity, self._error(
                10001, "The number of contracts exceeds minimum limit allowed"
            )
        if quantity % step:
            return quantity, self._error(10001, "Qty invalid")
        return quantity, None

    def _position_side(self, params: dict[str, Any]) -> tuple[str, tuple[int, Any] | None]:
        """Return the position an order acts on (net, long, short), or Bybit's refusal of a
        positionIdx that does not match the mode."""
        index = int(params.get("positionIdx", 0))
        expected = (1, 2) if self.account.hedge_mode else (0,)
        if index not in expected:
            return "", self._error(10001, "position idx not match position mode")
        return {0: NET, 1: LONG, 2: SHORT}[index], None

    def _position(self, symbol: str, side: str) -> dict[str, Any]:
        held = self.account.positions.get((symbol, side))
        amount, entry = (held.amount, held.entry_price) if held else (Decimal(0), Decimal(0))
        price, leverage = self.price(symbol), self.account.leverage_of(symbol)
        now = str(self.now_ms)
        return {
            **answers.position(symbol, side, amount, entry, price, leverage),
            "createdTime": now,
            "updatedTime": now,
            "seq": next(self._ids),
        }

    def _uuid(self) -> str:
        number = next(self._ids)
        return f"{number:08x}-0000-4000-8000-{number:012x}"

    def _ok(self, result: Any) -> tuple[int, Any]:
        return 200, answers.envelope(0, "OK", result, self.now_ms)

    def _error(self, code: int, message: str) -> tuple[int, Any]:
        return 200, answers.envelope(code, message, {}, self.now_ms)

    def refuse_unsigned(self, request: RecordedRequest) -> tuple[int, Any] | None:
        if not (self.api_key and self.api_secret):
            return None
        headers = request.headers
        if headers.get("X-BAPI-API-KEY") != self.api_key:
            return self._error(10003, "API key is invalid.")
        payload = request.body if request.method == "POST" else request.query
        origin = (
            headers.get("X-BAPI-TIMESTAMP", "")
            + self.api_key
            + headers.get("X-BAPI-RECV-WINDOW", "")
            + payload
        )
        expected = hmac_sha256(self.api_secret, origin)
        if not same_signature(expected, headers.get("X-BAPI-SIGN", ""), encoding="hex"):
            return self._error(10004, f"error sign! origin_string[{origin}]")
        return None
