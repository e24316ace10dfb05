"""A fake OKX v5 (single-currency margin account, USDT-margined swaps): a real HTTP server
on 127.0.0.1 for tests, answering as OKX does.

ccxt's ``okx`` is pointed at it like the Binance fake (``override_api_urls``, or the
adapter's ``api_url``). Answers follow OKX's: ``{code, msg, data}``, ``code`` "0" when
all went well; an order refused is HTTP 200 with ``code`` "1" and the reason in its
entry's ``sCode`` / ``sMsg``; shapes as ccxt's recorded fixtures
(``ts/src/test/static/response/okx.json``) and OKX's v5 reference show them
(``tests.fakes.okx_answers``). Quantities are contracts of ``ctVal`` coins.

Endpoints (``ROUTES``), exactly those ccxt 4.5 calls for what the adapter does:
``GET /api/v5/public/time``, ``/api/v5/public/instruments`` (``SWAP``: the dataset pairs
as ``BTC-USDT-SWAP`` and so on, each with ctVal, lotSz, minSz, tickSz and lever, and a
coin-margined BTC-USD-SWAP; ``SPOT``, ``FUTURES``, ``OPTION`` list nothing),
``/api/v5/market/ticker``; signed: ``GET /api/v5/asset/currencies`` (ccxt loads the coins
with the markets once it has a key), ``/api/v5/account/config`` (``posMode``),
``/api/v5/account/balance``, ``/api/v5/account/positions``, ``POST
/api/v5/account/set-leverage``, ``POST /api/v5/trade/order`` and ``/trade/batch-orders``
(ccxt's create), ``GET /api/v5/trade/order`` (by ``ordId`` or ``clOrdId``), ``POST
/api/v5/trade/order-algo`` (the ``conditional`` orders ccxt sends for ``stopLossPrice`` /
``takeProfitPrice``, keyed by ``algoClOrdId``), ``GET /api/v5/trade/order-algo`` (by
``algoId`` or ``algoClOrdId``), ``POST /api/v5/trade/cancel-algos``, ``GET
/api/v5/trade/orders-algo-pending`` (``ordType`` required: a conditional order is listed
for ``conditional`` alone, not for ccxt's default ``trigger``), ``GET /api/v5/trade/fills``
and ``/trade/fills-history`` (the account's fills).

Orders: a market order fills at once at the price (``price()``, the dataset's at ``now``
or ``set_price``'s) with a taker fee of ``account.fee_rate``; the create answer holds
``ordId``, ``clOrdId``, ``sCode`` and ``sMsg`` alone, so its fill is seen by looking the
order up. An algo order rests (``live``) until ``trigger_crossed()`` finds the price past
its trigger: it then turns ``effective`` and places a market order (its ``ordId``,
carrying the algo's ids) that fills at the price, with one more fill; with nothing left
to reduce it is ``order_failed``.

Refusals, with OKX's codes: a reused ``clOrdId`` (or ``algoClOrdId``) 51016, a size under
the minimum (``min_size``) 51020 or off the lot size 51121, a posSide that does not match
the mode 51000 "Parameter posSide error" (none or ``net`` in ``net_mode``, ``long`` or
``short`` in ``long_short_mode``), a reduce-only or closing order with no position to
reduce 51169, a reduce-only order that would open 51148, too little margin 51008, a stop
already passed 51277-51280, an order that does not exist 51603 (lookups) or 51400
(cancel), a missing ``ordType`` 50014.

With ``api_key``, ``api_secret`` and ``passphrase`` set, signed endpoints check
``OK-ACCESS-KEY`` (50111), ``OK-ACCESS-PASSPHRASE`` (50105) and ``OK-ACCESS-SIGN``, the
base64 HMAC-SHA256 of timestamp + method + path and query + body (50113), each refused
with HTTP 401 as OKX does; the timestamp is not held to the fake's clock. Faults as in
``tests.fakes.venue``; a 5xx carries OKX's gateway page, not JSON.
"""

from __future__ import annotations

import itertools
from datetime import datetime
from decimal import Decimal
from typing import Any

from tests.fakes import okx_answers as answers
from tests.fakes.okx_answers import ALGO_FIELDS, FILL_FIELDS, INSTRUMENTS, ORDER_FIELDS
from tests.fakes.perp import (
    LONG,
    NET,
    NOTHING_TO_REDUCE,
    SHORT,
    PerpAccount,
    Plan,
    crossed,
    text,
)
from tests.fakes.venue import (
    DEFAULT_NOW,
    FakeVenue,
    RecordedRequest,
    hmac_sha256,
    same_signature,
    signed,
)

Refusal = tuple[str, str]
NO_POSITION = (
    "51169",
    "Order failed because you don't have any positions in this direction for this "
    "contract to reduce or close.",
)


class _Refused(Exception):
    """An order request OKX refuses: its ``sCode`` and ``sMsg``."""

    def __init__(self, code: str, msg: str) -> None:
        super().__init__(msg)
        self.refusal: Refusal = (code, msg)


class FakeOkx(FakeVenue):
    """An OKX v5 lookalike with one trading account; use as a context manager."""

    ROUTES: dict[tuple[str, str], str] = {
        ("GET", "/api/v5/public/time"): "server_time",
        ("GET", "/api/v5/public/instruments"): "instruments",
        ("GET", "/api/v5/market/ticker"): "ticker",
        ("GET", "/api/v5/asset/currencies"): "currencies",
        ("GET", "/api/v5/account/config"): "account_config",
        ("GET", "/api/v5/account/balance"): "balance",
        ("GET", "/api/v5/account/positions"): "positions",
        ("POST", "/api/v5/account/set-leverage"): "set_leverage",
        ("POST", "/api/v5/trade/order"): "place_order",
        ("POST", "/api/v5/trade/batch-orders"): "place_batch",
        ("GET", "/api/v5/trade/order"): "order_details",
        ("POST", "/api/v5/trade/order-algo"): "place_algo",
        ("GET", "/api/v5/trade/order-algo"): "algo_details",
        ("POST", "/api/v5/trade/cancel-algos"): "cancel_algos",
        ("GET", "/api/v5/trade/orders-algo-pending"): "algos_pending",
        ("GET", "/api/v5/trade/fills"): "fills",
        ("GET", "/api/v5/trade/fills-history"): "fills",
    }
    ORDER_PATHS = ("/api/v5/trade/order", "/api/v5/trade/batch-orders", "/api/v5/trade/order-algo")

    def __init__(self, now: datetime = DEFAULT_NOW, **kwargs: Any) -> None:
        super().__init__(now, **kwargs)
        self.api_key: str | None = None
        self.api_secret: str | None = None
        self.passphrase: str | None = None
        self.account = PerpAccount(price=self.price, contract_size=self.contract_size)
        self.min_size = {symbol: INSTRUMENTS[symbol][1] for symbol in self.symbols}
        self.orders: list[dict[str, Any]] = []
        self.algo_orders: list[dict[str, Any]] = []
        self.fill_list: list[dict[str, Any]] = []
        self._ids = itertools.count(2_896_576_259_728_695_296)

    def error_body(self, status: int) -> Any:
        """Return OKX's answer to an HTTP ``status``: its gateway's page for a 5xx, its
        rate limit (50011) for 429, a missing route otherwise."""
        if status >= 500:
            return "<html><body><h1>503 Service Temporarily Unavailable</h1></body></html>"
        if status == 429:
            return answers.refused("50011", "Too Many Requests")
        return answers.refused("404", "Not Found")

    def reject_next(self, path: str, *, code: str, msg: str, times: int = 1) -> None:
        """Refuse the next ``times`` requests to ``path`` with an OKX error; do nothing."""
        self.fail_next(path, 200, times, body=answers.refused(code, msg))

    def contract_size(self, symbol: str) -> Decimal:
        """Return the coins one contract of ``symbol`` is worth (its ``ctVal``)."""
        return Decimal(INSTRUMENTS[symbol][0])

    # public endpoints

    def server_time(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /api/v5/public/time`` with the fake's ``now``."""
        return 200, answers.ok([{"ts": str(self.now_ms)}])

    def instruments(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /api/v5/public/instruments``: the swaps, live."""
        if request.params.get("instType") != "SWAP":
            return 200, answers.ok([])
        listed = [answers.instrument(symbol) for symbol in self.symbols]
        for entry in listed:
            entry["minSz"] = self.min_size[self._symbol(entry["instId"]) or ""]
        return 200, answers.ok([*listed, answers.inverse_swap()])

    def ticker(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /api/v5/market/ticker`` for one swap."""
        inst_id = request.params.get("instId", "")
        symbol = self._symbol(inst_id)
        if symbol is None:
            return 200, answers.refused("51001", "Instrument ID does not exist.")
        entry = answers.ticker(
            inst_id, self.price(symbol), self.day_rows(symbol), self.contract_size(symbol)
        )
        return 200, answers.ok([{**entry, "ts": str(self.now_ms)}])

    # account endpoints

    @signed
    def currencies(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /api/v5/asset/currencies``: USDT on one chain."""
        return 200, answers.ok([answers.usdt_chain()])

    @signed
    def account_config(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /api/v5/account/config``: the position mode among the rest."""
        return 200, answers.ok([answers.config(self.account.hedge_mode)])

    @signed
    def balance(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /api/v5/account/balance``: the trading account's USDT."""
        with self.lock:
            wallet, unrealized, margin = self.account.funds()
        entry = answers.balance(wallet, unrealized, margin)
        return 200, answers.ok([{**entry, "uTime": str(self.now_ms)}])

    @signed
    def positions(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /api/v5/account/positions``: the open positions, optionally of the
        ``instId`` asked (several separated by commas)."""
        wanted = request.params.get("instId")
        with self.lock:
            listed = [
                self._position(symbol, side)
                for (symbol, side), held in self.account.positions.items()
                if held.amount and (wanted is None or self._inst_id(symbol) in wanted.split(","))
            ]
        return 200, answers.ok(listed)

    @signed
    def set_leverage(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``POST /api/v5/account/set-leverage`` for a swap in cross margin."""
        params = request.params
        symbol = self._symbol(params.get("instId", ""))
        if symbol is None:
            return 200, answers.refused("51001", "Instrument ID does not exist.")
        leverage = int(Decimal(str(params.get("lever", "0"))))
        if not 1 <= leverage <= int(INSTRUMENTS[symbol][3]):
            return 200, answers.refused("59102", "Leverage exceeds the maximum leverage.")
        with self.lock:
            self.account.leverage[symbol] = leverage
        entry = {"lever": str(leverage), "mgnMode": params.get("mgnMode"), "posSide": ""}
        return 200, answers.ok([{**entry, "instId": params["instId"]}])

    # orders

    @signed
    def place_order(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``POST /api/v5/trade/order``: fill one market order."""
        return self._outcome([self._place(request.params)])

    @signed
    def place_batch(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``POST /api/v5/trade/batch-orders``: fill each market order."""
        entries = request.json if isinstance(request.json, list) else []
        return self._outcome([self._place(entry) for entry in entries])

    @signed
    def order_details(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /api/v5/trade/order`` by ``ordId`` or ``clOrdId``."""
        with self.lock:
            found = self._find(self.orders, request.params, "ordId", "clOrdId")
            if found is None:
                return 200, answers.refused("51603", "Order does not exist")
            return 200, answers.ok([dict(found)])

    @signed
    def place_algo(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``POST /api/v5/trade/order-algo``: rest a conditional order."""
        return self._outcome([self._rest(request.params)])

    @signed
    def algo_details(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /api/v5/trade/order-algo`` by ``algoId`` or ``algoClOrdId``."""
        with self.lock:
            found = self._find(self.algo_orders, request.params, "algoId", "algoClOrdId")
            if found is None:
                return 200, answers.refused("51603", "Order does not exist")
            return 200, answers.ok([dict(found)])

    @signed
    def cancel_algos(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``POST /api/v5/trade/cancel-algos``: cancel each live algo order named."""
        outcomes = []
        with self.lock:
            for entry in request.json if isinstance(request.json, list) else []:
                algo = self._find(self.algo_orders, entry, "algoId", "algoClOrdId")
                code, msg = "0", ""
                if algo is None or algo["state"] != "live":
                    code, msg = "51400", "Cancellation failed as the order does not exist."
                else:
                    algo.update(state="canceled", uTime=str(self.now_ms))
                ids = {k: (algo or entry).get(k, "") for k in ("algoId", "algoClOrdId")}
                outcomes.append({**ids, "sCode": code, "sMsg": msg, "clOrdId": "", "tag": ""})
        return self._outcome(outcomes)

    @signed
    def algos_pending(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /api/v5/trade/orders-algo-pending``: the live algo orders of the
        ``ordType`` asked (several separated by commas)."""
        params = request.params
        if not params.get("ordType"):
            return 200, answers.refused("50014", "Parameter ordType can not be empty.")
        kinds = str(params["ordType"]).split(",")
        with self.lock:
            listed = [
                dict(algo)
                for algo in reversed(self.algo_orders)
                if algo["state"] == "live"
                and algo["ordType"] in kinds
                and params.get("instId", algo["instId"]) == algo["instId"]
                and params.get("algoId", algo["algoId"]) == algo["algoId"]
            ]
        return 200, answers.ok(listed)

    @signed
    def fills(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /api/v5/trade/fills`` and ``/fills-history``: the account's fills,
        newest first; the history needs ``instType``."""
        params = request.params
        if request.path.endswith("history") and params.get("instType") != "SWAP":
            return 200, answers.refused("50014", "Parameter instType can not be empty.")
        begin = int(params.get("begin", 0))
        end = int(params.get("end", self.now_ms))
        with self.lock:
            listed = [
                dict(fill)
                for fill in reversed(self.fill_list)
                if begin <= int(fill["ts"]) <= end
                and params.get("instId", fill["instId"]) == fill["instId"]
                and params.get("ordId", fill["ordId"]) == fill["ordId"]
            ]
        return 200, answers.ok(listed[: int(params.get("limit", 100))])

    # test hooks

    def trigger_crossed(self) -> list[dict[str, Any]]:
        """Trigger the live algo orders whose trigger the price has crossed, as OKX would:
        each places a market order filled at the price (or fails with nothing to reduce).
        Return the algo orders triggered."""
        triggered = []
        with self.lock:
            for algo in self.algo_orders:
                if algo["state"] != "live":
                    continue
                symbol = self._symbol(algo["instId"]) or ""
                price = self.price(symbol)
                stop = algo["slTriggerPx"] != ""
                trigger = Decimal(algo["slTriggerPx"] if stop else algo["tpTriggerPx"])
                # A sell stop waits for the price to fall, a sell target for it to rise.
                if not crossed(trigger, price, rising=(algo["side"] == "sell") != stop):
                    continue
                self._trigger(algo, symbol, price, "sl" if stop else "tp")
                triggered.append(dict(algo))
        return triggered

    # helpers (called with ``self.lock`` held where they read or change the account)

    def _place(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Fill one market order of a create request; return its outcome entry."""
        client_id = str(entry.get("clOrdId") or "")
        with self.lock:
            try:
                symbol, quantity, side = self._checked(
                    entry, "market", client_id, self.orders, "clOrdId"
                )
            except _Refused as refused:
                return self._no(refused.refusal, clOrdId=client_id, ordId="")
            order = self._new_order(entry, symbol, quantity, side, client_id)
            refusal = self._execute(order, reduce_only=entry.get("reduceOnly") in (True, "true"))
            if refusal is not None:
                return self._no(refusal, clOrdId=client_id, ordId="")
            self.orders.append(order)
        ids = {"clOrdId": client_id, "ordId": order["ordId"]}
        return {**ids, "sCode": "0", "sMsg": "Order placed", "tag": "", "ts": str(self.now_ms)}

    def _rest(self, entry: dict[str, Any]) -> dict[str, Any]:
        """Rest one conditional order of an algo request; return its outcome entry."""
        client_id = str(entry.get("algoClOrdId") or "")
        with self.lock:
            try:
                symbol, quantity, side = self._checked(
                    entry, "conditional", client_id, self.algo_orders, "algoClOrdId"
                )
            except _Refused as refused:
                return self._no(refused.refusal, algoClOrdId=client_id, algoId="")
            refusal = self._passed_trigger(entry, self.price(symbol))
            if refusal is not None:
                return self._no(refusal, algoClOrdId=client_id, algoId="")
            algo = self._new_algo(entry, symbol, quantity, side, client_id)
            self.algo_orders.append(algo)
        ids = {"algoClOrdId": client_id, "algoId": algo["algoId"], "clOrdId": ""}
        return {**ids, "sCode": "0", "sMsg": "", "tag": ""}

    def _checked(
        self,
        entry: dict[str, Any],
        kind: str,
        client_id: str,
        placed: list[dict[str, Any]],
        id_key: str,
    ) -> tuple[str, Decimal, str]:
        """Return (symbol, contracts, position side) of an order request; raise OKX's
        refusal of its instrument, type, size, position side or client id."""
        symbol = self._symbol(str(entry.get("instId", "")))
        if symbol is None:
            raise _Refused("51001", "Instrument ID does not exist.")
        if entry.get("ordType") != kind:
            raise _Refused("51000", "Parameter ordType error")
        quantity = Decimal(str(entry.get("sz") or "0"))
        if quantity < Decimal(self.min_size[symbol]):
            raise _Refused("51020", "Order amount should be greater than the min available amount.")
        if quantity % Decimal(INSTRUMENTS[symbol][1]):
            raise _Refused("51121", "Order count should be the integer multiples of the lot size.")
        side = entry.get("posSide") or NET
        if side not in ((LONG, SHORT) if self.account.hedge_mode else (NET,)):
            raise _Refused("51000", "Parameter posSide error")
        if client_id and any(order[id_key] == client_id for order in placed):
            raise _Refused("51016", "Duplicated clOrdId")
        return symbol, quantity, side

    def _passed_trigger(self, entry: dict[str, Any], price: Decimal) -> Refusal | None:
        """Return OKX's refusal of a stop or target already passed: a sell stop must rest
        under the price and a sell target over it (a buy's mirrored)."""
        sell = entry.get("side") == "sell"
        if entry.get("slTriggerPx"):
            trigger = Decimal(str(entry["slTriggerPx"]))
            if sell and trigger >= price:
                return "51280", "SL trigger price can not be higher than the last price"
            if not sell and trigger <= price:
                return "51278", "SL trigger price can not be lower than the last price"
        elif entry.get("tpTriggerPx"):
            trigger = Decimal(str(entry["tpTriggerPx"]))
            if sell and trigger <= price:
                return "51279", "TP trigger price can not be lower than the last price"
            if not sell and trigger >= price:
                return "51277", "TP trigger price can not be higher than the last price"
        else:
            return "51000", "Parameter slTriggerPx error"
        return None

    def _execute(self, order: dict[str, Any], *, reduce_only: bool) -> Refusal | None:
        """Fill ``order`` at the price; return OKX's refusal instead when it cannot."""
        symbol = self._symbol(order["instId"]) or ""
        quantity = Decimal(order["sz"])
        plan = self.account.plan(
            symbol, order["side"], quantity, position_side=order["posSide"], reduce_only=reduce_only
        )
        if plan == NOTHING_TO_REDUCE:
            return NO_POSITION
        if isinstance(plan, str):
            return "51148", "ReduceOnly cannot increase the position quantity."
        price = self.price(symbol)
        if (
            plan.opens
            and self.account.margin_needed(symbol, quantity, price) > self.account.available()
        ):
            return "51008", "Order failed. Insufficient USDT margin in account"
        realized, fee = self.account.fill(plan, price)
        self._filled(order, plan, price, realized, fee)
        return None

    def _filled(
        self, order: dict[str, Any], plan: Plan, price: Decimal, realized: Decimal, fee: Decimal
    ) -> None:
        trade_id = str(next(self._ids))
        now = str(self.now_ms)
        done = {"fillPx": text(price), "fillSz": text(plan.quantity), "fillTime": now}
        order.update(
            done,
            state="filled",
            accFillSz=text(plan.quantity),
            avgPx=text(price),
            fee=text(-fee),
            pnl=text(realized),
            tradeId=trade_id,
            uTime=now,
        )
        self.fill_list.append(
            {
                **FILL_FIELDS,
                **{k: order[k] for k in ("instId", "ordId", "clOrdId", "side", "posSide")},
                **done,
                "tradeId": trade_id,
                "billId": str(next(self._ids)),
                "fee": text(-fee),
                "feeRate": text(-self.account.fee_rate),
                "fillPnl": text(realized),
                "fillMarkPx": text(price),
                "ts": now,
            }
        )

    def _trigger(self, algo: dict[str, Any], symbol: str, price: Decimal, kind: str) -> None:
        entry = {k: algo[k] for k in ("side", "tdMode", "reduceOnly")}
        order = self._new_order(entry, symbol, Decimal(algo["sz"]), algo["posSide"], "")
        order.update(algoId=algo["algoId"], algoClOrdId=algo["algoClOrdId"])
        now = str(self.now_ms)
        if self._execute(order, reduce_only=algo["reduceOnly"] == "true") is not None:
            algo.update(state="order_failed", failCode=NO_POSITION[0], uTime=now)
            return
        self.orders.append(order)
        algo.update(
            state="effective",
            ordId=order["ordId"],
            ordIdList=[order["ordId"]],
            actualSz=algo["sz"],
            actualPx=text(price),
            actualSide=kind,
            triggerTime=now,
            uTime=now,
        )

    def _new_order(
        self, entry: dict[str, Any], symbol: str, quantity: Decimal, side: str, client_id: str
    ) -> dict[str, Any]:
        ids = {"ordId": str(next(self._ids)), "clOrdId": client_id}
        return {**ORDER_FIELDS, **ids, **self._common(entry, symbol, quantity, side)}

    def _new_algo(
        self, entry: dict[str, Any], symbol: str, quantity: Decimal, side: str, client_id: str
    ) -> dict[str, Any]:
        triggers = "slTriggerPx slOrdPx slTriggerPxType tpTriggerPx tpOrdPx tpTriggerPxType"
        return {
            **ALGO_FIELDS,
            **{key: str(entry[key]) for key in triggers.split() if key in entry},
            "algoId": str(next(self._ids)),
            "algoClOrdId": client_id,
            **self._common(entry, symbol, quantity, side),
            "last": text(self.price(symbol)),
        }

    def _common(
        self, entry: dict[str, Any], symbol: str, quantity: Decimal, side: str
    ) -> dict[str, Any]:
        """Return the fields an order and an algo order share, as OKX writes them."""
        now = str(self.now_ms)
        return {
            "instId": self._inst_id(symbol),
            "side": entry.get("side"),
            "posSide": side,
            "sz": text(quantity),
            "tdMode": entry.get("tdMode", "cross"),
            "reduceOnly": "true" if entry.get("reduceOnly") in (True, "true") else "false",
            "lever": str(self.account.leverage_of(symbol)),
            "cTime": now,
            "uTime": now,
        }

    def _position(self, symbol: str, side: str) -> dict[str, Any]:
        held = self.account.positions[(symbol, side)]
        price, leverage = self.price(symbol), self.account.leverage_of(symbol)
        size = self.contract_size(symbol)
        entry = answers.position(
            self._inst_id(symbol), side, held.amount, held.entry_price, price, leverage
        )
        notional = abs(held.amount) * size * price
        return {
            **entry,
            "upl": text((price - held.entry_price) * held.amount * size),
            "imr": text(abs(held.amount) * size * held.entry_price / leverage),
            "notionalUsd": text(notional),
            "cTime": str(self.now_ms),
            "uTime": str(self.now_ms),
        }

    def _outcome(self, outcomes: list[dict[str, Any]]) -> tuple[int, Any]:
        """Return OKX's answer to orders: all placed, all refused (code 1), or some (2)."""
        failed = sum(outcome["sCode"] != "0" for outcome in outcomes)
        if not failed:
            return 200, answers.ok(outcomes)
        if failed == len(outcomes):
            return 200, answers.refused("1", "All operations failed", outcomes)
        return 200, answers.refused("2", "Batch operation partially succeeded", outcomes)

    def _no(self, refusal: Refusal, **ids: str) -> dict[str, Any]:
        return {**ids, "sCode": refusal[0], "sMsg": refusal[1], "tag": "", "ts": str(self.now_ms)}

    def _find(
        self,
        orders: list[dict[str, Any]],
        params: dict[str, Any],
        id_key: str,
        client_key: str,
    ) -> dict[str, Any] | None:
        """Find an order by its id or, without one, its client id (OKX looks the id up
        first); a lookup naming neither finds nothing."""
        key = id_key if params.get(id_key) else client_key
        wanted, market = params.get(key), params.get("instId")
        for order in orders:
            if wanted and order.get(key) == wanted and market in (None, order["instId"]):
                return order
        return None

    def _symbol(self, inst_id: str) -> str | None:
        symbol = inst_id.removesuffix("-USDT-SWAP") + "USDT"
        return symbol if inst_id.endswith("-USDT-SWAP") and symbol in self.symbols else None

    @staticmethod
    def _inst_id(symbol: str) -> str:
        return f"{symbol.removesuffix('USDT')}-USDT-SWAP"

    def refuse_unsigned(self, request: RecordedRequest) -> tuple[int, Any] | None:
        if not (self.api_key and self.api_secret):
            return None
        headers = request.headers
        if headers.get("OK-ACCESS-KEY") != self.api_key:
            return 401, answers.refused("50111", "Invalid OK-ACCESS-KEY")
        if headers.get("OK-ACCESS-PASSPHRASE") != (self.passphrase or ""):
            return 401, answers.refused("50105", "OK-ACCESS-PASSPHRASE incorrect")
        path = request.path + (f"?{request.query}" if request.query else "")
        prehash = headers.get("OK-ACCESS-TIMESTAMP", "") + request.method + path + request.body
        expected = hmac_sha256(self.api_secret, prehash)
        if not same_signature(expected, headers.get("OK-ACCESS-SIGN", ""), encoding="base64"):
            return 401, answers.refused("50113", "Invalid Sign")
        return None
