"""A fake Binance USDT-M futures exchange: a real HTTP server on 127.0.0.1 for tests.

ccxt is pointed at it by moving every entry of ``exchange.urls['api']`` to ``fake.url``
while keeping the paths (``LiveSource(api_urls=fake.url)`` does exactly that). Nothing
leaves the machine.

Market data comes from the bundled dataset (``strategies/data/market``, read here with the
csv module, independently of ``strategies.market.dataset``) as it stood at the fake's
``now``: klines up to and including the candle that is still open at ``now`` (served with
its final dataset values, so a client that fails to drop the open candle sees the future
and tests notice), tickers and prices from the last closed 15m candle (or the finest
timeframe that has one), ``lastFundingRate`` = the last rate settled at or before ``now``.
Daily klines are six 4h candles from 00:00 UTC, as Binance aligns them.

The dataset has no open interest; the fake makes one up, deterministically: by default the
volume of the 24 hourly candles closed by the instant (in contracts), or whatever the
``open_interest(symbol, timestamp_ms)`` callable given to the constructor returns.

Endpoints (``ROUTES``): ``GET /fapi/v1/exchangeInfo``, ``/fapi/v1/time``,
``/fapi/v1/klines``, ``/fapi/v1/ticker/24hr``, ``/fapi/v1/ticker/price``,
``/fapi/v1/premiumIndex``, ``/fapi/v1/fundingRate``, ``/fapi/v1/openInterest`` and
``/futures/data/openInterestHist``. The HTTP side, the clock and the dataset come from
``tests.fakes.venue.FakeVenue``: every request is recorded in ``requests``; faults can be
queued per path (``fail_next``, ``delay_next``, ``drop_next``); ``max_in_flight`` tells
how many requests were ever served at once.

Trading (one account, USDT margin, in one-way position mode unless ``hedge_mode``):
``GET /fapi/v1/positionSide/dual`` (the mode), ``POST /fapi/v1/leverage``, ``GET
/fapi/v1/leverageBracket``, ``GET /fapi/v3/account`` and ``/fapi/v2/balance``, ``GET
/fapi/v3/positionRisk`` and ``/fapi/v2/positionRisk``, ``POST|GET|DELETE
/fapi/v1/order`` (market orders only; ``GET`` finds an order by ``origClientOrderId`` or
``orderId``), ``POST|GET|DELETE /fapi/v1/algoOrder`` (the conditional ``STOP_MARKET``
and ``TAKE_PROFIT_MARKET`` orders ccxt sends for ``stopLossPrice`` /
``takeProfitPrice``, keyed by ``clientAlgoId``; they rest until ``trigger_crossed``
triggers those the price reached), ``GET /fapi/v1/openAlgoOrders`` and ``GET
/fapi/v1/userTrades``. Market orders fill at once at the current price (the last closed
15m close, or the one ``set_price`` gave) with a taker fee of ``fee_rate``; a reused
client order id is refused (-4116), a reduce-only order needs a position to reduce
(-2022), an order needs its margin (-2019), a stop that would trigger at once is refused
(-2021), an unknown order is -2013. As on Binance, an order's ``positionSide`` must
match the mode (-4061): ``BOTH`` (or none) in one-way mode, ``LONG`` or ``SHORT`` in
hedge mode, where ``reduceOnly`` is refused (-1106) and the side closes what it does not
open; positions are kept per coin and position side. With ``api_key`` and ``api_secret``
set, private endpoints check the ``X-MBX-APIKEY`` header and the HMAC-SHA256 signature
as Binance does. Every order placed is kept in ``orders`` / ``algo_orders``;
``order_requests()`` lists the order requests as received (accepted or not). Two more
faults serve order tests: ``reject_next`` answers with a Binance error code,
``drop_after_next`` processes the request (the order is placed) and then closes the
connection without an answer.

To add endpoints: write a method ``(self, request) -> (status, body)``, register it in
``ROUTES`` (or ``fake.routes`` for one instance), decorate it with ``signed`` when it
needs the signature of a private endpoint, and keep any state on the instance under
``self.lock``.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Callable
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

from tests.fakes.venue import (
    DATA_DIR,
    DEFAULT_NOW,
    INTERVAL_MS,
    SYMBOLS,
    DatasetMarket,
    FakeVenue,
    Position,
    RecordedRequest,
    hmac_sha256,
    open_funds,
    same_signature,
    signed,
)

__all__ = ["FakeExchange", "RecordedRequest"]

KLINE_INTERVALS = ("15m", "1h", "4h", "1d")
FUNDING_INTERVAL_MS = 8 * 60 * 60_000

# (tick size, step size) roughly as Binance lists them; only the order endpoints care.
MODE_MISMATCH = {"code": -4061, "msg": "Order's position side does not match user's setting."}
# Each market's minimum order value (its MIN_NOTIONAL filter), as Binance lists them:
# 100 USDT for BTCUSDT, 20 for ETHUSDT, 5 for most others. A smaller opening is refused
# (-4164); a reduce-only order is not.
MIN_NOTIONAL: dict[str, str] = {"BTCUSDT": "100", "ETHUSDT": "20"}
DEFAULT_MIN_NOTIONAL = "5"
PRECISION: dict[str, tuple[str, str]] = {
    "BTCUSDT": ("0.10", "0.001"),
    "ETHUSDT": ("0.01", "0.001"),
    "SOLUSDT": ("0.0100", "1"),
    "XRPUSDT": ("0.0001", "0.1"),
    "DOGEUSDT": ("0.000010", "1"),
    "AVAXUSDT": ("0.0010", "1"),
    "LINKUSDT": ("0.001", "0.01"),
}
# Markets listed in exchangeInfo without data: a clients must filter them out.
EXTRA_MARKETS: tuple[dict[str, str], ...] = (
    {"symbol": "BTCUSDC", "base": "BTC", "quote": "USDC", "contractType": "PERPETUAL"},
    {"symbol": "BTCUSDT_241227", "base": "BTC", "quote": "USDT", "contractType": "CURRENT_QUARTER"},
)

NO_SUCH_ORDER = {"code": -2013, "msg": "Order does not exist."}
UNKNOWN_ORDER = {"code": -2011, "msg": "Unknown order sent."}


class FakeExchange(FakeVenue):
    """A Binance USDT-M lookalike serving the dataset at ``now``; use as a context manager."""

    ROUTES: dict[tuple[str, str], str] = {
        ("GET", "/fapi/v1/exchangeInfo"): "exchange_info",
        ("GET", "/fapi/v1/time"): "server_time",
        ("GET", "/fapi/v1/klines"): "klines",
        ("GET", "/fapi/v1/ticker/24hr"): "ticker_24hr",
        ("GET", "/fapi/v1/ticker/price"): "ticker_price",
        ("GET", "/fapi/v1/premiumIndex"): "premium_index",
        ("GET", "/fapi/v1/fundingRate"): "funding_rate_history",
        ("GET", "/fapi/v1/openInterest"): "open_interest",
        ("GET", "/futures/data/openInterestHist"): "open_interest_hist",
        ("POST", "/fapi/v1/leverage"): "change_leverage",
        ("GET", "/fapi/v1/leverageBracket"): "leverage_bracket",
        ("GET", "/fapi/v1/positionSide/dual"): "position_mode",
        ("GET", "/fapi/v3/account"): "account",
        ("GET", "/fapi/v2/balance"): "balance",
        ("GET", "/fapi/v3/positionRisk"): "position_risk",
        ("GET", "/fapi/v2/positionRisk"): "position_risk",
        ("POST", "/fapi/v1/order"): "new_order",
        ("GET", "/fapi/v1/order"): "query_order",
        ("DELETE", "/fapi/v1/order"): "cancel_order",
        ("POST", "/fapi/v1/algoOrder"): "new_algo_order",
        ("GET", "/fapi/v1/algoOrder"): "query_algo_order",
        ("DELETE", "/fapi/v1/algoOrder"): "cancel_algo_order",
        ("GET", "/fapi/v1/openAlgoOrders"): "open_algo_orders",
        ("GET", "/fapi/v1/userTrades"): "user_trades",
    }
    ORDER_PATHS = ("/fapi/v1/order", "/fapi/v1/algoOrder")

    def __init__(
        self,
        now: datetime = DEFAULT_NOW,
        *,
        symbols: tuple[str, ...] = SYMBOLS,
        open_interest: Callable[[str, int], float] | None = None,
        data_dir: Path = DATA_DIR,
    ) -> None:
        super().__init__(now, symbols=symbols, data_dir=data_dir)
        # Serve klines up to ``now`` whatever endTime says, the forming candle included.
        self.ignore_end_time = False
        self.open_interest_at = open_interest or self._volume_open_interest
        # The trading account; credentials are checked only when both are set.
        self.api_key: str | None = None
        self.api_secret: str | None = None
        self.wallet_balance = Decimal("10000")
        self.fee_rate = Decimal("0.0004")
        self.max_leverage = 125
        self.leverage: dict[str, int] = {}
        self.hedge_mode = False
        # By (coin, position side): BOTH in one-way mode, LONG and SHORT in hedge mode.
        self.positions: dict[tuple[str, str], Position] = {}
        self.orders: list[dict[str, Any]] = []
        self.algo_orders: list[dict[str, Any]] = []
        self.trades: list[dict[str, Any]] = []
        self._ids = itertools.count(1001)

    def error_body(self, status: int) -> dict[str, Any]:
        """Return Binance's error for an HTTP ``status``: -1001 "internal error" for 5xx,
        -1003 "too many requests" for 429, -5000 for a path it does not serve, -1100
        "illegal characters" otherwise."""
        if status >= 500:
            return {"code": -1001, "msg": "Internal error; unable to process your request."}
        if status == 429:
            return {"code": -1003, "msg": "Too many requests."}
        if status == 404:
            return {"code": -5000, "msg": "Path not found."}
        return {"code": -1100, "msg": "Illegal characters found in a parameter."}

    def reject_next(
        self,
        path: str,
        *,
        code: int = -2021,
        msg: str = "Order would immediately trigger.",
        times: int = 1,
    ) -> None:
        """Refuse the next ``times`` requests to ``path`` with a Binance error; place nothing."""
        self.fail_next(path, 400, times, body={"code": code, "msg": msg})

    def exchange_info(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /fapi/v1/exchangeInfo``: the dataset pairs as USDT perpetuals."""
        entries = [
            _market_info(
                symbol, symbol[:-4], "USDT", "PERPETUAL", *PRECISION.get(symbol, ("0.0001", "1"))
            )
            for symbol in self.symbols
        ]
        entries += [
            _market_info(m["symbol"], m["base"], m["quote"], m["contractType"], "0.10", "0.001")
            for m in EXTRA_MARKETS
        ]
        assets = [{"asset": "USDT", "marginAvailable": True, "autoAssetExchange": "0"}]
        return 200, {
            "timezone": "UTC",
            "serverTime": self.now_ms,
            "futuresType": "U_MARGINED",
            "rateLimits": [],
            "exchangeFilters": [],
            "assets": assets,
            "symbols": entries,
        }

    def server_time(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /fapi/v1/time`` with the fake's ``now``."""
        return 200, {"serverTime": self.now_ms}

    def klines(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /fapi/v1/klines``: candles opened at or before min(endTime, now)."""
        market, error = self._market(request)
        if market is None:
            return error
        interval = request.params.get("interval", "")
        if interval not in KLINE_INTERVALS:
            return 400, {"code": -1120, "msg": "Invalid interval."}
        limit = min(int(request.params.get("limit", 500)), 1500)
        end = min(int(request.params.get("endTime", self.now_ms)), self.now_ms)
        if self.ignore_end_time:
            end = self.now_ms
        rows = market.klines[interval]
        stop = bisect_right(market.open_times[interval], end)
        if "startTime" in request.params:
            start = bisect_right(market.open_times[interval], int(request.params["startTime"]) - 1)
            chosen = rows[start : min(stop, start + limit)]
        else:
            chosen = rows[max(0, stop - limit) : stop]
        step = INTERVAL_MS[interval]
        return 200, [
            [t, o, h, low, c, v, t + step - 1, f"{float(v) * float(c):.4f}", 0, "0", "0", "0"]
            for t, o, h, low, c, v in chosen
        ]

    def ticker_24hr(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /fapi/v1/ticker/24hr`` for one symbol or (without one) all."""
        return self._one_or_all(request, self._ticker)

    def ticker_price(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /fapi/v1/ticker/price`` for one symbol or all."""
        return self._one_or_all(
            request,
            lambda symbol: {
                "symbol": symbol,
                "price": str(self.price(symbol)),
                "time": self.now_ms,
            },
        )

    def premium_index(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /fapi/v1/premiumIndex`` (mark price and last settled funding rate)."""
        return self._one_or_all(request, self._premium)

    def funding_rate_history(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /fapi/v1/fundingRate``: settled rates up to min(endTime, now)."""
        market, error = self._market(request)
        if market is None:
            return error
        limit = min(int(request.params.get("limit", 100)), 1000)
        end = min(int(request.params.get("endTime", self.now_ms)), self.now_ms)
        start = int(request.params.get("startTime", 0))
        entries = [
            {
                "symbol": request.params["symbol"],
                "fundingTime": t,
                "fundingRate": rate,
                "markPrice": "",
            }
            for t, rate in zip(market.funding_times, market.funding_rates, strict=True)
            if start <= t <= end
        ]
        return 200, entries[:limit] if "startTime" in request.params else entries[-limit:]

    def open_interest(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /fapi/v1/openInterest`` at ``now``."""
        market, error = self._market(request)
        if market is None:
            return error
        symbol = request.params["symbol"]
        value = self.open_interest_at(symbol, self.now_ms)
        return 200, {"symbol": symbol, "openInterest": f"{value:.3f}", "time": self.now_ms}

    def open_interest_hist(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /futures/data/openInterestHist``: one point per period up to now."""
        market, error = self._market(request)
        if market is None:
            return error
        period = request.params.get("period", "")
        if period not in INTERVAL_MS:
            return 400, {"code": -1130, "msg": "Data sent for parameter 'period' is not valid."}
        step = INTERVAL_MS[period]
        limit = min(int(request.params.get("limit", 30)), 500)
        end = min(int(request.params.get("endTime", self.now_ms)), self.now_ms)
        last = end // step * step
        symbol = request.params["symbol"]
        price = float(self.price(symbol))
        points = []
        for index in range(limit - 1, -1, -1):
            timestamp = last - index * step
            value = self.open_interest_at(symbol, timestamp)
            points.append(
                {
                    "symbol": symbol,
                    "sumOpenInterest": f"{value:.8f}",
                    "sumOpenInterestValue": f"{value * price:.8f}",
                    "timestamp": timestamp,
                }
            )
        return 200, points

    # trading endpoints (private: signed like Binance when credentials are set)

    @signed
    def change_leverage(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``POST /fapi/v1/leverage``: set the leverage of one symbol."""
        market, error = self._market(request)
        if market is None:
            return error
        leverage = int(request.params.get("leverage", "0"))
        if not 1 <= leverage <= self.max_leverage:
            return 400, {"code": -4028, "msg": f"Leverage {leverage} is not valid"}
        symbol = request.params["symbol"]
        with self.lock:
            self.leverage[symbol] = leverage
        return 200, {"leverage": leverage, "maxNotionalValue": "1000000", "symbol": symbol}

    @signed
    def leverage_bracket(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /fapi/v1/leverageBracket``: one bracket per symbol."""
        bracket = {
            "bracket": 1,
            "initialLeverage": self.max_leverage,
            "notionalCap": 1000000,
            "notionalFloor": 0,
            "maintMarginRatio": 0.004,
            "cum": 0.0,
        }
        return 200, [{"symbol": symbol, "brackets": [bracket]} for symbol in self.symbols]

    @signed
    def account(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /fapi/v3/account``: the USDT wallet, margins and open positions."""
        with self.lock:
            wallet, unrealized, margin = self._funds()
            positions = [self._position_info(k, p) for k, p in self.positions.items() if p.amount]
        available = wallet + unrealized - margin
        asset = {
            "asset": "USDT",
            "walletBalance": str(wallet),
            "unrealizedProfit": str(unrealized),
            "marginBalance": str(wallet + unrealized),
            "maintMargin": "0",
            "initialMargin": str(margin),
            "positionInitialMargin": str(margin),
            "openOrderInitialMargin": "0",
            "crossWalletBalance": str(wallet),
            "crossUnPnl": str(unrealized),
            "availableBalance": str(available),
            "maxWithdrawAmount": str(available),
            "updateTime": self.now_ms,
        }
        return 200, {
            "totalInitialMargin": str(margin),
            "totalMaintMargin": "0",
            "totalWalletBalance": str(wallet),
            "totalUnrealizedProfit": str(unrealized),
            "totalMarginBalance": str(wallet + unrealized),
            "totalPositionInitialMargin": str(margin),
            "totalOpenOrderInitialMargin": "0",
            "totalCrossWalletBalance": str(wallet),
            "totalCrossUnPnl": str(unrealized),
            "availableBalance": str(available),
            "maxWithdrawAmount": str(available),
            "assets": [asset],
            "positions": positions,
        }

    @signed
    def balance(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /fapi/v2/balance``: the USDT balance."""
        with self.lock:
            wallet, unrealized, margin = self._funds()
        available = wallet + unrealized - margin
        return 200, [
            {
                "accountAlias": "fake",
                "asset": "USDT",
                "balance": str(wallet),
                "crossWalletBalance": str(wallet),
                "crossUnPnl": str(unrealized),
                "availableBalance": str(available),
                "maxWithdrawAmount": str(available),
                "marginAvailable": True,
                "updateTime": self.now_ms,
            }
        ]

    @signed
    def position_risk(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /fapi/v3/positionRisk`` (and v2): the open positions."""
        wanted = request.params.get("symbol")
        with self.lock:
            return 200, [
                self._position_info(key, position)
                for key, position in self.positions.items()
                if position.amount and wanted in (None, key[0])
            ]

    @signed
    def new_order(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``POST /fapi/v1/order``: fill a market order at once at the current price."""
        market, error = self._market(request)
        if market is None:
            return error
        params = request.params
        if params.get("type") != "MARKET":
            return 400, {"code": -1116, "msg": "Invalid orderType."}
        symbol, side = params["symbol"], params.get("side", "")
        quantity, error = self._quantity(symbol, params.get("quantity", ""))
        if quantity is None:
            return error
        position_side, reduce_only, error = self._position_side(params)
        if error is not None:
            return error
        with self.lock:
            client_id = params.get("newClientOrderId") or f"fake{next(self._ids)}"
            if any(order["clientOrderId"] == client_id for order in self.orders):
                return 400, {"code": -4116, "msg": "ClientOrderId is duplicated."}
            return self._market_fill(symbol, side, quantity, position_side, reduce_only, client_id)

    def _market_fill(
        self,
        symbol: str,
        side: str,
        quantity: Decimal,
        position_side: str,
        reduce_only: bool,
        client_id: str,
    ) -> tuple[int, Any]:
        """Fill a market order at the current price (with ``self.lock`` held); return
        Binance's answer or its refusal."""
        price = self.price(symbol)
        position = self.positions.setdefault((symbol, position_side), Position())
        signed = quantity if side == "BUY" else -quantity
        if reduce_only:
            if position.amount == 0 or (position.amount > 0) == (signed > 0):
                return 400, {"code": -2022, "msg": "ReduceOnly Order is rejected."}
            quantity = min(quantity, abs(position.amount))
            signed = quantity if side == "BUY" else -quantity
        else:
            refused = self._opening_refused(symbol, quantity, price)
            if refused is not None:
                return refused
        order_id = next(self._ids)
        realized = position.fill(signed, price)
        fee = quantity * price * self.fee_rate
        self.wallet_balance += realized - fee
        self.trades.append(
            {
                "symbol": symbol,
                "id": next(self._ids),
                "orderId": order_id,
                "side": side,
                "price": str(price),
                "qty": str(quantity),
                "realizedPnl": str(realized),
                "quoteQty": str(quantity * price),
                "commission": str(fee),
                "commissionAsset": "USDT",
                "time": self.now_ms,
                "positionSide": position_side,
                "buyer": side == "BUY",
                "maker": False,
            }
        )
        order = {
            "orderId": order_id,
            "symbol": symbol,
            "status": "FILLED",
            "clientOrderId": client_id,
            "price": "0",
            "avgPrice": str(price),
            "origQty": str(quantity),
            "executedQty": str(quantity),
            "cumQty": str(quantity),
            "cumQuote": str(quantity * price),
            "timeInForce": "GTC",
            "type": "MARKET",
            "reduceOnly": reduce_only,
            "closePosition": False,
            "side": side,
            "positionSide": "BOTH",
            "stopPrice": "0",
            "workingType": "CONTRACT_PRICE",
            "priceProtect": False,
            "origType": "MARKET",
            "priceMatch": "NONE",
            "selfTradePreventionMode": "NONE",
            "goodTillDate": 0,
            "updateTime": self.now_ms,
        }
        self.orders.append(order)
        return 200, dict(order)

    def _opening_refused(
        self, symbol: str, quantity: Decimal, price: Decimal
    ) -> tuple[int, Any] | None:
        """Return Binance's refusal of an opening below the market's minimum value or
        beyond the margin available, else None."""
        notional = quantity * price
        least = MIN_NOTIONAL.get(symbol, DEFAULT_MIN_NOTIONAL)
        if notional < Decimal(least):
            return 400, {
                "code": -4164,
                "msg": f"Order's notional must be no smaller than {least} "
                "(unless you choose reduce only).",
            }
        wallet, unrealized, margin = self._funds()
        needed = notional / self.leverage.get(symbol, 20) + notional * self.fee_rate
        if needed > wallet + unrealized - margin:
            return 400, {"code": -2019, "msg": "Margin is insufficient."}
        return None

    def trigger_crossed(self) -> list[dict[str, Any]]:
        """Trigger the resting conditional orders whose trigger the current price (the
        last closed 15m close at ``now``, or the one ``set_price`` gave) has reached, as
        Binance's algo service does: a sell stop at or above the price, a sell target at
        or below it (buys mirrored). Each places a market order (the algo order's
        ``actualOrderId``) that fills at the price; the algo order ends ``FINISHED``, or
        ``REJECTED`` when its reduce-only order finds no position to reduce. Return the
        algo orders triggered."""
        triggered = []
        with self.lock:
            for algo in self.algo_orders:
                if algo["algoStatus"] != "NEW" or not self._crossed(algo):
                    continue
                status, answer = self._market_fill(
                    algo["symbol"],
                    algo["side"],
                    Decimal(algo["quantity"]),
                    algo["positionSide"],
                    algo["reduceOnly"],
                    f"autoalgo{algo['algoId']}",
                )
                filled = status == 200
                algo.update(
                    algoStatus="FINISHED" if filled else "REJECTED",
                    actualOrderId=str(answer["orderId"]) if filled else "",
                    actualPrice=answer["avgPrice"] if filled else "0.00000",
                    triggerTime=self.now_ms,
                    updateTime=self.now_ms,
                )
                triggered.append(dict(algo))
        return triggered

    def _crossed(self, algo: dict[str, Any]) -> bool:
        price = self.price(algo["symbol"])
        trigger = Decimal(algo["triggerPrice"])
        falls_to = (algo["orderType"] == "STOP_MARKET") == (algo["side"] == "SELL")
        return price <= trigger if falls_to else price >= trigger

    @signed
    def query_order(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /fapi/v1/order`` by ``origClientOrderId`` or ``orderId``."""
        with self.lock:
            order = self._order(request)
            return (400, NO_SUCH_ORDER) if order is None else (200, dict(order))

    @signed
    def cancel_order(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``DELETE /fapi/v1/order``: market orders are filled, so -2011 when found."""
        with self.lock:
            order = self._order(request)
        return 400, NO_SUCH_ORDER if order is None else UNKNOWN_ORDER

    @signed
    def new_algo_order(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``POST /fapi/v1/algoOrder``: rest a conditional stop or take-profit order."""
        market, error = self._market(request)
        if market is None:
            return error
        params = request.params
        order_type = params.get("type", "")
        if params.get("algoType") != "CONDITIONAL" or order_type not in (
            "STOP_MARKET",
            "TAKE_PROFIT_MARKET",
        ):
            return 400, {"code": -1116, "msg": "Invalid orderType."}
        symbol, side = params["symbol"], params.get("side", "")
        quantity, error = self._quantity(symbol, params.get("quantity", ""))
        if quantity is None:
            return error
        position_side, reduce_only, error = self._position_side(params)
        if error is not None:
            return error
        trigger = Decimal(params.get("triggerPrice", "0"))
        with self.lock:
            client_id = params.get("clientAlgoId") or f"fake{next(self._ids)}"
            if any(order["clientAlgoId"] == client_id for order in self.algo_orders):
                return 400, {"code": -4116, "msg": "ClientOrderId is duplicated."}
            price = self.price(symbol)
            # A sell stop rests below the price and a sell target above it; buys mirrored.
            rests_below = (order_type == "STOP_MARKET") == (side == "SELL")
            if trigger <= 0 or (trigger < price) != rests_below or trigger == price:
                return 400, {"code": -2021, "msg": "Order would immediately trigger."}
            order = {
                "algoId": next(self._ids),
                "clientAlgoId": client_id,
                "algoType": "CONDITIONAL",
                "orderType": order_type,
                "symbol": symbol,
                "side": side,
                "positionSide": position_side,
                "timeInForce": "GTC",
                "quantity": str(quantity),
                "algoStatus": "NEW",
                "actualOrderId": "",
                "actualPrice": "0.00000",
                "triggerPrice": str(trigger),
                "price": "0",
                "icebergQuantity": None,
                "selfTradePreventionMode": "EXPIRE_MAKER",
                "workingType": params.get("workingType", "CONTRACT_PRICE"),
                "priceMatch": "NONE",
                "closePosition": False,
                "priceProtect": False,
                "reduceOnly": reduce_only,
                "createTime": self.now_ms,
                "updateTime": self.now_ms,
                "triggerTime": 0,
                "goodTillDate": 0,
            }
            self.algo_orders.append(order)
            return 200, dict(order)

    @signed
    def query_algo_order(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /fapi/v1/algoOrder`` by ``clientAlgoId`` or ``algoId``."""
        with self.lock:
            order = self._algo_order(request)
            return (400, NO_SUCH_ORDER) if order is None else (200, dict(order))

    @signed
    def open_algo_orders(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /fapi/v1/openAlgoOrders``: the resting conditional orders, of one
        symbol when it is named."""
        wanted = request.params.get("symbol")
        with self.lock:
            return 200, [
                dict(order)
                for order in self.algo_orders
                if order["algoStatus"] == "NEW" and wanted in (None, order["symbol"])
            ]

    @signed
    def cancel_algo_order(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``DELETE /fapi/v1/algoOrder``: cancel a resting conditional order."""
        with self.lock:
            order = self._algo_order(request)
            if order is None:
                return 400, NO_SUCH_ORDER
            if order["algoStatus"] != "NEW":
                return 400, UNKNOWN_ORDER
            order["algoStatus"] = "CANCELED"
            order["updateTime"] = self.now_ms
            return 200, {
                "algoId": order["algoId"],
                "clientAlgoId": order["clientAlgoId"],
                "code": "200",
                "msg": "success",
            }

    @signed
    def user_trades(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /fapi/v1/userTrades`` for a symbol, optionally one order's trades."""
        symbol = request.params.get("symbol")
        order_id = request.params.get("orderId")
        with self.lock:
            return 200, [
                dict(trade)
                for trade in self.trades
                if trade["symbol"] == symbol and order_id in (None, str(trade["orderId"]))
            ]

    # trading helpers (called with ``self.lock`` held where they read the account)

    def refuse_unsigned(self, request: RecordedRequest) -> tuple[int, Any] | None:
        if not (self.api_key and self.api_secret):
            return None
        if request.headers.get("X-MBX-APIKEY") != self.api_key:
            return 401, {"code": -2015, "msg": "Invalid API-key, IP, or permissions for action."}
        payload = request.query if request.method in ("GET", "DELETE") else request.body
        unsigned, _, signature = payload.rpartition("&signature=")
        expected = hmac_sha256(self.api_secret, unsigned)
        if not same_signature(expected, signature, encoding="hex"):
            return 400, {"code": -1022, "msg": "Signature for this request is not valid."}
        return None

    def _quantity(self, symbol: str, raw: str) -> tuple[Decimal | None, tuple[int, Any]]:
        step = Decimal(PRECISION.get(symbol, ("0.0001", "1"))[1])
        try:
            quantity = Decimal(raw)
        except ArithmeticError:
            quantity = Decimal("0")
        if quantity <= 0:
            return None, (400, {"code": -1102, "msg": "Parameter 'quantity' was empty."})
        if quantity % step:
            return None, (
                400,
                {"code": -1111, "msg": "Precision is over the maximum defined for this asset."},
            )
        return quantity, (200, None)

    def _funds(self) -> tuple[Decimal, Decimal, Decimal]:
        """Return (wallet balance, unrealised P&L, initial margin)."""
        unrealized, margin = open_funds(
            ((symbol, position) for (symbol, _), position in self.positions.items()),
            self.price,
            lambda symbol: self.leverage.get(symbol, 20),
        )
        return self.wallet_balance, unrealized, margin

    def _position_side(self, params: dict[str, str]) -> tuple[str, bool, Any]:
        """Return an order's position side, whether it reduces a position, and Binance's
        refusal when either does not fit the account's position mode (else None)."""
        position_side = params.get("positionSide", "BOTH")
        side = params.get("side", "")
        if self.hedge_mode:
            if position_side not in ("LONG", "SHORT"):
                return "", False, (400, MODE_MISMATCH)
            if "reduceOnly" in params:
                return (
                    "",
                    False,
                    (
                        400,
                        {"code": -1106, "msg": "Parameter 'reduceOnly' sent when not required."},
                    ),
                )
            return position_side, (position_side == "LONG") == (side == "SELL"), None
        if position_side != "BOTH":
            return "", False, (400, MODE_MISMATCH)
        return position_side, params.get("reduceOnly") == "true", None

    @signed
    def position_mode(self, request: RecordedRequest) -> tuple[int, Any]:
        """Answer ``GET /fapi/v1/positionSide/dual``: whether the account is in hedge mode."""
        return 200, {"dualSidePosition": self.hedge_mode}

    def _position_info(self, key: tuple[str, str], position: Position) -> dict[str, Any]:
        symbol, position_side = key
        price = self.price(symbol)
        leverage = self.leverage.get(symbol, 20)
        notional = position.amount * price
        margin = abs(notional) / leverage
        return {
            "symbol": symbol,
            "positionSide": position_side,
            "positionAmt": str(position.amount),
            "entryPrice": str(position.entry_price),
            "breakEvenPrice": str(position.entry_price),
            "markPrice": str(price),
            "unRealizedProfit": str((price - position.entry_price) * position.amount),
            "liquidationPrice": "0",
            "isolatedMargin": "0",
            "notional": str(notional),
            "marginAsset": "USDT",
            "isolatedWallet": "0",
            "initialMargin": str(margin),
            "maintMargin": "0",
            "positionInitialMargin": str(margin),
            "openOrderInitialMargin": "0",
            "adl": 0,
            "bidNotional": "0",
            "askNotional": "0",
            "leverage": str(leverage),
            "marginType": "cross",
            "updateTime": self.now_ms,
        }

    def _order(self, request: RecordedRequest) -> dict[str, Any] | None:
        return self._find(self.orders, request, "origClientOrderId", "clientOrderId")

    def _algo_order(self, request: RecordedRequest) -> dict[str, Any] | None:
        return self._find(self.algo_orders, request, "clientAlgoId", "clientAlgoId", "algoId")

    @staticmethod
    def _find(
        orders: list[dict[str, Any]],
        request: RecordedRequest,
        by: str,
        key: str,
        id_key: str = "orderId",
    ) -> dict[str, Any] | None:
        wanted = request.params.get(by) or request.params.get(key)
        order_id = request.params.get(id_key) or request.params.get("orderId")
        for order in orders:
            if order["symbol"] != request.params.get("symbol"):
                continue
            if wanted is not None and order.get(key) == wanted:
                return order
            if wanted is None and order_id is not None and str(order.get(id_key)) == order_id:
                return order
        return None

    # helpers

    def _market(self, request: RecordedRequest) -> tuple[DatasetMarket | None, tuple[int, Any]]:
        market = self.dataset.get(request.params.get("symbol", ""))
        if market is None:
            return None, (400, {"code": -1121, "msg": "Invalid symbol."})
        return market, (200, None)

    def _one_or_all(
        self, request: RecordedRequest, describe: Callable[[str], dict[str, Any]]
    ) -> tuple[int, Any]:
        """Answer ``describe(symbol)`` for the symbol asked, or a list of it for every
        symbol when the request names none."""
        if "symbol" not in request.params:
            return 200, [describe(symbol) for symbol in self.symbols]
        market, error = self._market(request)
        if market is None:
            return error
        return 200, describe(request.params["symbol"])

    def _ticker(self, symbol: str) -> dict[str, Any]:
        day_ago = self.now_ms - INTERVAL_MS["1d"]
        rows = self.day_rows(symbol)
        first_open, last_close = float(rows[0][1]), float(rows[-1][4])
        volume = sum(float(row[5]) for row in rows)
        quote_volume = sum(float(row[5]) * float(row[4]) for row in rows)
        change = last_close - first_open
        return {
            "symbol": symbol,
            "priceChange": f"{change:.8f}",
            "priceChangePercent": f"{(change / first_open * 100) if first_open else 0:.3f}",
            "weightedAvgPrice": f"{quote_volume / volume if volume else 0:.8f}",
            "lastPrice": str(self.price(symbol)),
            "lastQty": "0",
            "openPrice": rows[0][1],
            "highPrice": repr(max(float(row[2]) for row in rows)),
            "lowPrice": repr(min(float(row[3]) for row in rows)),
            "volume": f"{volume:.8f}",
            "quoteVolume": f"{quote_volume:.8f}",
            "openTime": day_ago,
            "closeTime": self.now_ms,
            "firstId": 1,
            "lastId": 1,
            "count": 1,
        }

    def _premium(self, symbol: str) -> dict[str, Any]:
        market = self.dataset[symbol]
        settled = bisect_right(market.funding_times, self.now_ms)
        rate = market.funding_rates[settled - 1] if settled else "0"
        price = str(self.price(symbol))
        return {
            "symbol": symbol,
            "markPrice": price,
            "indexPrice": price,
            "estimatedSettlePrice": price,
            "lastFundingRate": rate,
            "interestRate": "0.00010000",
            "nextFundingTime": (self.now_ms // FUNDING_INTERVAL_MS + 1) * FUNDING_INTERVAL_MS,
            "time": self.now_ms,
        }

    def _volume_open_interest(self, symbol: str, timestamp: int) -> float:
        market = self.dataset[symbol]
        closed = bisect_right(market.open_times["1h"], timestamp - INTERVAL_MS["1h"])
        prefix = market.hourly_volume_prefix
        return prefix[closed] - prefix[max(0, closed - 24)]


def _market_info(
    symbol: str, base: str, quote: str, contract_type: str, tick: str, step: str
) -> dict[str, Any]:
    return {
        "symbol": symbol,
        "pair": symbol.split("_")[0],
        "contractType": contract_type,
        "deliveryDate": 4133404800000 if contract_type == "PERPETUAL" else 1735286400000,
        "onboardDate": 1569398400000,
        "status": "TRADING",
        "baseAsset": base,
        "quoteAsset": quote,
        "marginAsset": quote,
        "pricePrecision": max(0, len(tick.split(".")[1]) if "." in tick else 0),
        "quantityPrecision": max(0, len(step.split(".")[1]) if "." in step else 0),
        "baseAssetPrecision": 8,
        "quotePrecision": 8,
        "underlyingType": "COIN",
        "filters": [
            {
                "filterType": "PRICE_FILTER",
                "minPrice": tick,
                "maxPrice": "1000000",
                "tickSize": tick,
            },
            {"filterType": "LOT_SIZE", "minQty": step, "maxQty": "100000000", "stepSize": step},
            {
                "filterType": "MARKET_LOT_SIZE",
                "minQty": step,
                "maxQty": "10000000",
                "stepSize": step,
            },
            {
                "filterType": "MIN_NOTIONAL",
                "notional": MIN_NOTIONAL.get(symbol, DEFAULT_MIN_NOTIONAL),
            },
        ],
        "orderTypes": [
            "LIMIT",
            "MARKET",
            "STOP",
            "STOP_MARKET",
            "TAKE_PROFIT",
            "TAKE_PROFIT_MARKET",
        ],
        "timeInForce": ["GTC", "IOC", "FOK", "GTX"],
    }
