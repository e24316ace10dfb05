"""A real exchange account through ccxt: USDT-margined perpetual swaps.

Supported exchanges: ``binanceusdm`` (Binance USDT-M futures), ``bybit`` and ``okx``.
Each order carries our client order id in the exchange's own idempotency field
(``CLIENT_ID_PARAMS``: ccxt passes binance's ``clientOrderId`` on as ``newClientOrderId``,
or ``clientAlgoId`` for conditional orders; bybit's is ``orderLinkId``, okx's ``clOrdId``,
and ``algoClOrdId`` for its algo orders), and a lost answer is recovered by that id
before anything is sent again: with ccxt's ``fetch_order``, or on bybit, whose
``fetch_order`` cannot look up by ``orderLinkId`` alone, from its order lists. An entry
whose answer holds its ids and no fill (bybit's, okx's) is confirmed the same way.

The account's position mode is read once per adapter (``hedged``): in hedge mode every
order carries ccxt's ``hedged``, which ccxt turns into the exchange's position side
(Binance's ``positionSide``, Bybit's ``positionIdx``, OKX's ``posSide``); in one-way mode
none does, and a strategy's hedging is not used (``traders.services.executions``). Bybit
keeps the mode per symbol and no endpoint tells it: an order there carries ``hedged``
when the symbol's position slots say so (positionIdx 1 and 2), read once per symbol.

Stop loss and take profit are separate reduce-only market orders with ccxt's
``stopLossPrice`` / ``takeProfitPrice`` (binanceusdm ignores the ``stopLoss`` /
``takeProfit`` dicts that bybit and okx attach natively). On binanceusdm, ccxt 4.5 sends
them as conditional orders to ``POST /fapi/v1/algoOrder`` (``algoType=CONDITIONAL``,
``type=STOP_MARKET`` or ``TAKE_PROFIT_MARKET``, ``triggerPrice``, ``reduceOnly``,
``clientAlgoId``), looks them up on ``GET /fapi/v1/algoOrder`` and cancels them on
``DELETE /fapi/v1/algoOrder``. Plain orders go to ``/fapi/v1/order``; leverage to
``POST /fapi/v1/leverage``; balance from ``GET /fapi/v3/account``; positions from
``GET /fapi/v3/positionRisk`` (after ``GET /fapi/v1/leverageBracket``); fees from
``GET /fapi/v1/userTrades``. Each exchange is exercised end to end against its fake in
the tests (``tests/fakes``: ``exchange_server``, ``bybit_server``, ``okx_server``).

ccxt errors are translated: ``ccxt.OperationFailed`` (its ``NetworkError``: timeouts,
dropped connections, 429, 5xx; and exchange codes meaning "internal error, try again",
such as Binance's -1001) becomes ``ExchangeUnavailable``, ``ccxt.OrderNotFound``
``OrderNotFound``, a refused key (``ccxt.AuthenticationError``) ``AccessRefused``,
anything else (refusals) ``OrderRejected``. Error
messages and ccxt's debug log of requests are scrubbed of the credentials and of request
signatures. An API URL override (``TRADER_EXCHANGE_API_URL``) must obey the outbound
policy (``arena.outbound``), and no redirect is followed.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from decimal import Decimal
from typing import Any, TypeVar

import ccxt

from arena.outbound import OutboundRefused, ccxt_session, check_url
from strategies.market.live import override_api_urls
from strategies.market.symbols import from_ccxt, to_ccxt
from traders.exchanges.base import (
    BUY,
    STOP_LOSS,
    TAKE_PROFIT,
    AccessRefused,
    ExchangePosition,
    ExchangeUnavailable,
    Fill,
    OrderNotFound,
    OrderRejected,
    OrderResult,
    RestingOrder,
)
from traders.risk import Funds, MarketRules

SUPPORTED: tuple[str, ...] = ("binanceusdm", "bybit", "okx")
CLIENT_ID_PARAMS: dict[str, str] = {
    "binanceusdm": "clientOrderId",
    "bybit": "orderLinkId",
    "okx": "clOrdId",
}
# The client order id field of a conditional (stop, target) order where it differs:
# OKX's algo orders carry algoClOrdId, by which they are looked up and cancelled.
CONDITIONAL_ID_PARAMS: dict[str, str] = {"okx": "algoClOrdId"}
# What lists the conditional orders resting in a market: ccxt's ``trigger``; on OKX, the
# algo order type its stops and targets are placed as.
RESTING_PARAMS: dict[str, dict[str, Any]] = {"okx": {"trigger": True, "ordType": "conditional"}}
# Error codes that say "try again" which ccxt 4.5 maps to a plain refusal: Bybit's 10016
# ("System error. Please try again later."). Each client maps them to ccxt's
# ExchangeNotAvailable, as it does the exchange's other "try again" codes.
RETRY_LATER_CODES: dict[str, tuple[str, ...]] = {"bybit": ("10016",)}
SETTLE = "USDT"
DEFAULT_TIMEOUT_S = 10.0
MAX_ERROR_CHARS = 500
_SIGNATURE = re.compile(r"(signature|sign|X-MBX-APIKEY|apiKey)=[^&\s\"']+", re.IGNORECASE)
# Request headers carrying an API key, a passphrase or a signature (binance, bybit, okx).
_SECRET_HEADERS = re.compile(
    r"('(?:X-MBX-APIKEY|X-BAPI-API-KEY|X-BAPI-SIGN|OK-ACCESS-KEY|OK-ACCESS-SIGN|"
    r"OK-ACCESS-PASSPHRASE)':\s*')[^']*(')",
    re.IGNORECASE,
)


# ccxt logs each request's headers (the API key) and each answer at DEBUG on the
# instance's logger: every instance gets one that masks the credentials first.
WIRE_LOGGER = logging.getLogger("traders.exchanges.wire")


class _ScrubbingLogger(logging.LoggerAdapter):
    """Log through ``WIRE_LOGGER`` with credentials and signatures masked."""

    def __init__(self, scrub: Callable[[str], str]) -> None:
        super().__init__(WIRE_LOGGER, {})
        self._scrub = scrub

    def log(self, level: int, msg: object, *args: object, **kwargs: Any) -> None:
        if self.isEnabledFor(level):
            text = str(msg) % args if args else str(msg)
            self.logger.log(level, self._scrub(text), **kwargs)


T = TypeVar("T")


def _bybit_symbol_hedged(client: ccxt.Exchange, symbol: str) -> bool:
    """Say whether Bybit trades ``symbol`` in hedge mode: its position slots, which Bybit
    lists for a symbol whether they hold anything or not, name positionIdx 1 and 2."""
    return any(position.get("hedged") for position in client.fetch_positions([symbol]))


def _fetched_order(client: ccxt.Exchange, symbol: str, params: dict[str, Any]) -> dict:
    """Look an order up by the client order id in ``params`` (ccxt's ``fetch_order``)."""
    return client.fetch_order(None, symbol, params)


def _listed_order(client: ccxt.Exchange, symbol: str, params: dict[str, Any]) -> dict:
    """Look an order up on Bybit by the orderLinkId in ``params``: its open orders, then
    its closed and cancelled ones. (ccxt's ``fetch_order`` would send ``orderId=None``
    beside it, which finds nothing, so the order would be sent again and refused as a
    duplicate, 110072.)"""
    for listed in (client.fetch_open_orders, client.fetch_canceled_and_closed_orders):
        found = listed(symbol, None, None, params)
        if found:
            return found[0]
    raise ccxt.OrderNotFound(f"no order {params['orderLinkId']}")


def _client_id(order: Mapping[str, Any]) -> str:
    """Return an order's client order id: ccxt's, or, for an OKX algo order, whose
    clOrdId stays empty, its algoClOrdId."""
    info = order.get("info") or {}
    return order.get("clientOrderId") or str(info.get("algoClOrdId") or "")


def _decimal(value: Any) -> Decimal | None:
    if value is None or value == "":
        return None
    return Decimal(str(value))


def _reported_fee(order: Mapping[str, Any]) -> Decimal | None:
    """Return the sum of the fees an order answer reports, None when it reports none."""
    fees = order.get("fees") or ([order["fee"]] if order.get("fee") else [])
    known = [_decimal(fee.get("cost")) for fee in fees if fee and fee.get("cost") is not None]
    if not known:
        return None
    return sum((value for value in known if value is not None), Decimal("0"))


class CcxtExchange:
    """One account on a ccxt exchange (USDT-margined perpetuals)."""

    def __init__(
        self,
        exchange_id: str,
        *,
        api_key: str,
        secret: str,
        password: str = "",
        sandbox: bool = False,
        api_url: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        if exchange_id not in SUPPORTED:
            raise ValueError(f"unsupported exchange {exchange_id!r}: one of {SUPPORTED}")
        self.name = exchange_id
        config: dict[str, Any] = {
            "apiKey": api_key,
            "secret": secret,
            "timeout": int(timeout_s * 1000),
            "enableRateLimit": True,
            # No broker tag: ccxt would give OKX's algo orders a clOrdId of its own.
            "options": {"defaultType": "swap", "fetchCurrencies": False, "brokerId": None},
        }
        if password:
            config["password"] = password
        self._secrets = tuple(value for value in (api_key, secret, password) if value)
        config["logger"] = _ScrubbingLogger(self._scrub)
        config["session"] = ccxt_session()
        self.client: ccxt.Exchange = getattr(ccxt, exchange_id)(config)
        for code in RETRY_LATER_CODES.get(exchange_id, ()):
            self.client.exceptions["exact"][code] = ccxt.ExchangeNotAvailable
        if sandbox:
            self._use_practice_account()
        if api_url:
            try:
                check_url(api_url)
            except OutboundRefused as exc:
                raise OrderRejected(f"the exchange API URL {api_url} is refused: {exc}") from None
            self.client.urls["api"] = override_api_urls(self.client.urls["api"], api_url)
        self._id_param = CLIENT_ID_PARAMS[exchange_id]
        self._hedged: bool | None = None
        self._hedged_symbols: dict[str, bool] = {}

    def _use_practice_account(self) -> None:
        """Trade the exchange's practice account: Binance's demo trading (its futures
        testnet is gone, and ccxt refuses to sign for it), Bybit's testnet, OKX's demo
        trading (ccxt's sandbox mode for both)."""
        if self.name == "binanceusdm":
            self.client.enable_demo_trading(True)
        else:
            self.client.set_sandbox_mode(True)

    # reads

    def market(self, symbol: str) -> MarketRules:
        """Return the amount step, price tick, minimum amount and value, contract size and
        maximum leverage of ``symbol``, from the market's own limits and precision."""
        market = self._market(symbol)
        precision = market.get("precision") or {}
        limits = market.get("limits") or {}
        step = self._step(precision.get("amount"))
        tick = self._step(precision.get("price"))
        min_amount = _decimal((limits.get("amount") or {}).get("min")) or step
        max_leverage = (limits.get("leverage") or {}).get("max")
        return MarketRules(
            amount_step=step,
            price_tick=tick,
            min_amount=min_amount,
            contract_size=_decimal(market.get("contractSize")) or Decimal("1"),
            max_leverage=int(max_leverage) if max_leverage else None,
            min_notional=_decimal((limits.get("cost") or {}).get("min")),
        )

    def price(self, symbol: str) -> Decimal:
        """Return the last traded price of ``symbol``."""
        ticker = self._call(f"{symbol} price", lambda c: c.fetch_ticker(to_ccxt(symbol)))
        for key in ("last", "close", "mark"):
            value = _decimal(ticker.get(key))
            if value is not None and value > 0:
                return value
        raise OrderRejected(f"{self.name} gave no price for {symbol}")

    def balance(self) -> Funds:
        """Return available balance, total equity and wallet balance in USDT."""
        balance = self._call("balance", lambda c: c.fetch_balance())
        settle = balance.get(SETTLE) or {}
        info = balance.get("info") or {}
        wallet = info.get("totalWalletBalance") if isinstance(info, Mapping) else None
        return Funds(
            available=_decimal(settle.get("free")),
            equity=_decimal(settle.get("total")),
            wallet=_decimal(wallet),
        )

    def positions(self) -> list[ExchangePosition]:
        """Return the account's open positions in USDT-margined perpetuals."""
        raw = self._call("positions", lambda c: c.fetch_positions())
        positions = []
        for entry in raw:
            contracts = _decimal(entry.get("contracts"))
            symbol = entry.get("symbol") or ""
            if not contracts or contracts == 0 or not symbol.endswith(f":{SETTLE}"):
                continue
            side = entry.get("side") or ("long" if contracts > 0 else "short")
            leverage = entry.get("leverage")
            positions.append(
                ExchangePosition(
                    symbol=from_ccxt(symbol),
                    side=side,
                    quantity=abs(contracts),
                    entry_price=_decimal(entry.get("entryPrice")) or Decimal("0"),
                    leverage=int(leverage) if leverage else None,
                    liquidation_price=_decimal(entry.get("liquidationPrice")),
                )
            )
        return positions

    def resting_orders(self, symbol: str) -> list[RestingOrder]:
        """Return the conditional orders resting in ``symbol``; each is a stop or a
        target by where its trigger rests from the price (a sell below it is a stop)."""
        params = RESTING_PARAMS.get(self.name, {"trigger": True})
        raw = self._call(
            f"{symbol} resting orders",
            lambda c: c.fetch_open_orders(to_ccxt(symbol), None, None, dict(params)),
        )
        if not raw:
            return []
        price = self.price(symbol)
        resting = []
        for order in raw:
            trigger = _decimal(
                order.get("triggerPrice")
                or order.get("stopLossPrice")
                or order.get("takeProfitPrice")
            )
            side = order.get("side") or ""
            below = trigger is not None and trigger < price
            resting.append(
                RestingOrder(
                    symbol=symbol,
                    client_order_id=_client_id(order),
                    side=side,
                    kind=STOP_LOSS if below == (side != BUY) else TAKE_PROFIT,
                    trigger_price=trigger,
                    quantity=_decimal(order.get("amount")) or Decimal("0"),
                )
            )
        return resting

    def fills(self, symbol: str) -> list[Fill]:
        """Return the account's recent trades in ``symbol`` (ccxt's ``fetch_my_trades``),
        oldest first."""
        trades = self._call(f"{symbol} trades", lambda c: c.fetch_my_trades(to_ccxt(symbol)))
        fills = []
        for trade in trades:
            fee = trade.get("fee") or {}
            settled = fee.get("currency") in (None, SETTLE) and fee.get("cost") is not None
            fills.append(
                Fill(
                    order_id=str(trade.get("order") or ""),
                    side=trade.get("side") or "",
                    price=_decimal(trade.get("price")) or Decimal("0"),
                    quantity=_decimal(trade.get("amount")) or Decimal("0"),
                    fee=Decimal(str(fee["cost"])) if settled else Decimal("0"),
                    at_ms=int(trade.get("timestamp") or 0),
                )
            )
        return sorted(fills, key=lambda fill: fill.at_ms)

    def hedged(self, symbol: str) -> bool:
        """Say whether the account trades ``symbol`` in hedge mode, read once from the
        exchange: the account's mode (``fetch_position_mode``), or on Bybit, which keeps
        the mode per coin and has no such call, the coin's own."""
        if self.name == "bybit":
            if symbol not in self._hedged_symbols:
                self._hedged_symbols[symbol] = self._call(
                    f"{symbol} position mode", lambda c: _bybit_symbol_hedged(c, to_ccxt(symbol))
                )
            return self._hedged_symbols[symbol]
        if self._hedged is None:
            self._hedged = self._call(
                "position mode", lambda c: bool(c.fetch_position_mode().get("hedged"))
            )
        return self._hedged

    def fetch_order(
        self, symbol: str, client_order_id: str, *, conditional: bool = False
    ) -> OrderResult:
        """Look an order up by client order id; raise ``OrderNotFound`` when there is none."""
        params: dict[str, Any] = {self._id_param: client_order_id}
        if conditional:
            params["trigger"] = True
        lookup = _listed_order if self.name == "bybit" else _fetched_order
        order = self._call(f"order {client_order_id}", lambda c: lookup(c, to_ccxt(symbol), params))
        return self._result(symbol, order, client_order_id)

    # writes

    def set_leverage(self, symbol: str, leverage: int) -> None:
        """Set the leverage of ``symbol``."""
        try:
            self._call(f"{symbol} leverage", lambda c: c.set_leverage(leverage, to_ccxt(symbol)))
        except OrderRejected as exc:
            # bybit answers an error when the leverage is already what was asked.
            if "not modified" not in str(exc).lower():
                raise

    def market_order(
        self,
        symbol: str,
        side: str,
        quantity: Decimal,
        *,
        client_order_id: str,
        reduce_only: bool = False,
    ) -> OrderResult:
        """Send a market order with ``client_order_id``; return its fill and fee."""
        params: dict[str, Any] = {self._id_param: client_order_id, **self._mode_params(symbol)}
        if reduce_only:
            params["reduceOnly"] = True
        order = self._call(
            f"{side} {symbol} market order",
            lambda c: c.create_order(to_ccxt(symbol), "market", side, str(quantity), None, params),
        )
        if order.get("status") is None:
            return self._confirmed(symbol, client_order_id)
        return self._result(symbol, order, client_order_id)

    def _confirmed(self, symbol: str, client_order_id: str) -> OrderResult:
        """Return the fill of a market order whose answer held its ids alone (Bybit's,
        OKX's), looked up by its client order id; one not found yet is left to the next
        attempt, which looks it up again before sending anything."""
        try:
            return self.fetch_order(symbol, client_order_id)
        except OrderNotFound:
            raise ExchangeUnavailable(
                f"market order {client_order_id} was accepted; its fill is not known yet"
            ) from None

    def protective_order(
        self,
        symbol: str,
        side: str,
        quantity: Decimal,
        *,
        kind: str,
        trigger_price: Decimal,
        client_order_id: str,
    ) -> OrderResult:
        """Place a reduce-only stop-market or take-profit-market order."""
        price_key = "stopLossPrice" if kind == STOP_LOSS else "takeProfitPrice"
        params = {
            CONDITIONAL_ID_PARAMS.get(self.name, self._id_param): client_order_id,
            "reduceOnly": True,
            price_key: str(trigger_price),
            **self._mode_params(symbol),
        }
        order = self._call(
            f"{kind} order for {symbol}",
            lambda c: c.create_order(to_ccxt(symbol), "market", side, str(quantity), None, params),
        )
        return self._result(symbol, order, client_order_id, with_fee=False)

    def cancel_order(
        self, symbol: str, client_order_id: str, *, conditional: bool = False
    ) -> OrderResult:
        """Cancel a resting order by client order id."""
        params: dict[str, Any] = {self._id_param: client_order_id}
        if conditional:
            params["trigger"] = True
        order = self._call(
            f"cancel {client_order_id}",
            lambda c: c.cancel_order(None, to_ccxt(symbol), params),
        )
        result = self._result(symbol, order, client_order_id, with_fee=False)
        if result.status != "canceled":
            result = OrderResult(
                result.order_id, client_order_id, "canceled", result.filled, None, result.fee
            )
        return result

    # helpers

    def _mode_params(self, symbol: str) -> dict[str, Any]:
        """Return what an order in ``symbol`` carries for the position mode: in hedge mode,
        ccxt's ``hedged``, which it turns into the position side of the order (Binance's
        positionSide, dropping reduceOnly, which hedge mode refuses; Bybit's positionIdx;
        OKX's posSide); in one-way mode nothing."""
        return {"hedged": True} if self.hedged(symbol) else {}

    def _market(self, symbol: str) -> dict[str, Any]:
        self._call("markets", lambda c: c.load_markets())
        try:
            return self.client.market(to_ccxt(symbol))
        except ccxt.BadSymbol as exc:
            raise OrderRejected(f"{self.name} has no market {symbol}") from exc

    def _step(self, precision: Any) -> Decimal:
        value = _decimal(precision)
        if value is None:
            return Decimal("1")
        if self.client.precisionMode == ccxt.DECIMAL_PLACES:
            return Decimal(1).scaleb(-int(value))
        return value

    def _result(
        self, symbol: str, order: Mapping[str, Any], client_order_id: str, *, with_fee: bool = True
    ) -> OrderResult:
        status = {
            "closed": "filled",
            "open": "open",
            "canceled": "canceled",
            "expired": "canceled",
            "rejected": "rejected",
        }.get(order.get("status") or "", "open")
        filled = _decimal(order.get("filled")) or Decimal("0")
        average = _decimal(order.get("average"))
        if average is None and filled > 0:
            cost = _decimal(order.get("cost"))
            average = cost / filled if cost else _decimal(order.get("price"))
        order_id = str(order.get("id") or "")
        fee = self._fee(symbol, order, order_id) if with_fee and filled > 0 else Decimal("0")
        return OrderResult(
            order_id=order_id,
            client_order_id=order.get("clientOrderId") or client_order_id,
            status=status,
            filled=filled,
            average_price=average,
            fee=fee,
        )

    def _fee(self, symbol: str, order: Mapping[str, Any], order_id: str) -> Decimal:
        """Return the fee of a filled order: as its answer reports it, else, on Binance,
        from its trades; else none."""
        reported = _reported_fee(order)
        if reported is not None:
            return reported
        if self.name != "binanceusdm" or not order_id:
            return Decimal("0")
        # Binance's order answer has no fee: its trades carry the commission.
        trades = self._call(
            f"trades of order {order_id}",
            lambda c: c.fetch_my_trades(to_ccxt(symbol), params={"orderId": order_id}),
        )
        total = Decimal("0")
        for trade in trades:
            fee = trade.get("fee") or {}
            if fee.get("currency") in (None, SETTLE) and fee.get("cost") is not None:
                total += Decimal(str(fee["cost"]))
        return total

    def _call(self, what: str, call: Callable[[ccxt.Exchange], T]) -> T:
        try:
            return call(self.client)
        except ccxt.OrderNotFound as exc:
            raise OrderNotFound(self._scrub_error(f"{what}: {exc}")) from None
        except ccxt.OperationFailed as exc:
            # NetworkError (timeouts, dropped connections, 429, 5xx) and the exchange's own
            # "internal error, try again" codes: the request may or may not have landed.
            raise ExchangeUnavailable(
                self._scrub_error(f"{what}: {type(exc).__name__}: {exc}")
            ) from None
        except ccxt.AuthenticationError as exc:
            raise AccessRefused(self._scrub_error(f"{what}: {type(exc).__name__}: {exc}")) from None
        except ccxt.BaseError as exc:
            raise OrderRejected(self._scrub_error(f"{what}: {type(exc).__name__}: {exc}")) from None

    def _scrub(self, text: str) -> str:
        for secret in self._secrets:
            text = text.replace(secret, "***")
        text = _SIGNATURE.sub(r"\1=***", text)
        return _SECRET_HEADERS.sub(r"\1***\2", text)

    def _scrub_error(self, text: str) -> str:
        text = self._scrub(text)
        if len(text) > MAX_ERROR_CHARS:
            text = text[: MAX_ERROR_CHARS - 3] + "..."
        return text
