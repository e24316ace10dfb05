"""The shapes of Bybit v5's answers, for the fake Bybit (``tests.fakes.bybit_server``).

Each function builds one answer, or one entry of a list, with the fields Bybit sends
(ccxt's recorded answers in ``ts/src/test/static/response/bybit.json`` and the comments
of ccxt's ``bybit.py`` show them): the envelope, a linear instrument, a ticker, the
unified wallet, a position slot, and the fields of an order and of a fill that the fake
leaves as they are before anything fills. Numbers are strings, as Bybit writes them;
``positionIdx`` and ``triggerDirection`` are integers.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from tests.fakes.perp import LONG, NET, SHORT, fields, text
from tests.fakes.venue import Row

# (tickSize, qtyStep = minOrderQty, maxLeverage) roughly as Bybit lists its linear perpetuals;
# every one takes orders from 5 USDT (minNotionalValue).
INSTRUMENTS: dict[str, tuple[str, str, str]] = {
    "BTCUSDT": ("0.10", "0.001", "100.00"),
    "ETHUSDT": ("0.01", "0.01", "100.00"),
    "SOLUSDT": ("0.010", "0.1", "100.00"),
    "XRPUSDT": ("0.0001", "1", "75.00"),
    "DOGEUSDT": ("0.00001", "1", "75.00"),
    "AVAXUSDT": ("0.001", "0.1", "50.00"),
    "LINKUSDT": ("0.001", "0.1", "50.00"),
}
MIN_NOTIONAL = "5"
OPEN_STATUSES = ("New", "PartiallyFilled", "Untriggered")
POSITION_IDX = {NET: 0, LONG: 1, SHORT: 2}
# The fields Bybit shows on a market order of the fake's, and on its fills, as they are
# before anything fills (ccxt's recorded fetchClosedOrder and fetchMyTrades answers).
ORDER_FIELDS: dict[str, Any] = {
    **fields(
        "avgPrice triggerPrice triggerBy stopOrderType takeProfit stopLoss tpslMode "
        "lastPriceOnCreated smpOrderId placeType isLeverage blockTradeId orderIv",
        "",
    ),
    **fields("price cumExecQty cumExecValue cumExecFee leavesValue", "0"),
    "orderType": "Market",
    "orderStatus": "New",
    "cumFeeDetail": {},
    "timeInForce": "IOC",
    "closeOnTrigger": False,
    "triggerDirection": 0,
    "cancelType": "UNKNOWN",
    "rejectReason": "EC_NoError",
    "createType": "CreateByUser",
    "smpType": "None",
    "smpGroup": 0,
}
EXECUTION_FIELDS: dict[str, Any] = {
    **fields("indexPrice underlyingPrice blockTradeId markIv tradeIv", ""),
    **fields("feeCurrency marketUnit", ""),
    "orderType": "Market",
    "execType": "Trade",
    "isMaker": False,
    "leavesQty": "0",
}
POSITION_FIELDS: dict[str, Any] = {
    **fields("liqPrice bustPrice takeProfit stopLoss", ""),
    **fields("positionMM positionBalance cumRealisedPnl trailingStop", "0"),
    "tradeMode": 0,
    "autoAddMargin": 0,
    "positionStatus": "Normal",
    "riskId": 1,
    "riskLimitValue": "2000000",
    "tpslMode": "Full",
    "isReduceOnly": False,
}


def envelope(code: int, message: str, result: Any, now_ms: int) -> dict[str, Any]:
    """Return Bybit's envelope around ``result`` (``retCode`` 0 when all went well)."""
    return {"retCode": code, "retMsg": message, "result": result, "retExtInfo": {}, "time": now_ms}


def instrument(symbol: str, min_notional: str, settle: str = "USDT") -> dict[str, Any]:
    """Return a linear perpetual as ``/v5/market/instruments-info`` lists it."""
    tick, step, leverage = INSTRUMENTS.get(symbol, ("0.10", "0.001", "100.00"))
    return {
        "symbol": symbol,
        "contractType": "LinearPerpetual",
        "status": "Trading",
        "baseCoin": symbol.removesuffix("USDT").removesuffix("PERP"),
        "quoteCoin": settle,
        "settleCoin": settle,
        "launchTime": "1585526400000",
        "deliveryTime": "0",
        "deliveryFeeRate": "",
        "priceScale": str(len(tick.split(".")[1])),
        "leverageFilter": {"minLeverage": "1", "maxLeverage": leverage, "leverageStep": "0.01"},
        "priceFilter": {"minPrice": tick, "maxPrice": "1999999.80", "tickSize": tick},
        "lotSizeFilter": {
            "maxOrderQty": "1190.000",
            "maxMktOrderQty": "500.000",
            "minOrderQty": step,
            "qtyStep": step,
            "postOnlyMaxOrderQty": "1190.000",
            "minNotionalValue": min_notional,
        },
        "unifiedMarginTrade": True,
        "fundingInterval": 480,
        "copyTrading": "both",
        "upperFundingRate": "0.00375",
        "lowerFundingRate": "-0.00375",
    }


def ticker(symbol: str, price: Decimal, rows: list[Row]) -> dict[str, Any]:
    """Return a linear ticker: ``price`` last, the 24 hours of ``rows`` for the rest."""
    volume = sum(Decimal(row[5]) for row in rows)
    return {
        "symbol": symbol,
        "lastPrice": text(price),
        "markPrice": text(price),
        "indexPrice": text(price),
        "prevPrice24h": rows[0][1],
        "price24hPcnt": "0",
        "highPrice24h": max((row[2] for row in rows), key=Decimal),
        "lowPrice24h": min((row[3] for row in rows), key=Decimal),
        "prevPrice1h": rows[-1][1],
        "volume24h": text(volume),
        "turnover24h": text(volume * price),
        "bid1Price": text(price),
        "ask1Price": text(price),
        **fields("openInterest openInterestValue nextFundingTime deliveryTime", "0"),
        **fields("predictedDeliveryPrice basisRate basis deliveryFeeRate", ""),
        "bid1Size": "1",
        "ask1Size": "1",
        "fundingRate": "0.0001",
    }


def wallet(balance: Decimal, unrealized: Decimal, margin: Decimal) -> dict[str, Any]:
    """Return the unified account's wallet, USDT alone, as ``wallet-balance`` lists it."""
    equity = balance + unrealized
    coin = {
        "coin": "USDT",
        "equity": text(equity),
        "usdValue": text(equity),
        "walletBalance": text(balance),
        "unrealisedPnl": text(unrealized),
        "totalPositionIM": text(margin),
        **fields("availableToWithdraw availableToBorrow", ""),
        **fields(
            "cumRealisedPnl totalPositionMM totalOrderIM locked borrowAmount "
            "accruedInterest bonus spotHedgingQty",
            "0",
        ),
        "collateralSwitch": True,
        "marginCollateral": True,
    }
    return {
        "accountType": "UNIFIED",
        "totalEquity": text(equity),
        "totalWalletBalance": text(balance),
        "totalMarginBalance": text(equity),
        "totalAvailableBalance": text(equity - margin),
        "totalPerpUPL": text(unrealized),
        "totalInitialMargin": text(margin),
        **fields("totalMaintenanceMargin accountIMRate accountMMRate accountLTV", "0"),
        "coin": [coin],
    }


def position(
    symbol: str, side: str, amount: Decimal, entry: Decimal, price: Decimal, leverage: int
) -> dict[str, Any]:
    """Return a position slot (``side`` net, long or short) holding ``amount`` contracts,
    negative when short; an empty slot has size 0 and no side."""
    return {
        **POSITION_FIELDS,
        "positionIdx": POSITION_IDX[side],
        "symbol": symbol,
        "side": "" if amount == 0 else ("Buy" if amount > 0 else "Sell"),
        "size": text(abs(amount)),
        "avgPrice": text(entry),
        "positionValue": text(abs(amount) * entry),
        "leverage": str(leverage),
        "markPrice": text(price),
        "positionIM": text(abs(amount) * entry / leverage),
        "unrealisedPnl": text((price - entry) * amount),
        "adlRankIndicator": 2 if amount else 0,
    }


def api_key(key: str) -> dict[str, Any]:
    """Return ``/v5/user/query-api``'s answer: a read-write key of a unified account."""
    return {
        "id": "1",
        "note": "fake",
        "apiKey": key,
        "readOnly": 0,
        "secret": "",
        "permissions": {"ContractTrade": ["Order", "Position"], "Wallet": []},
        "ips": ["*"],
        "type": 1,
        "unified": 0,
        "uta": 1,
        "isMaster": True,
    }


def account_info(now_ms: int) -> dict[str, Any]:
    """Return ``/v5/account/info``'s answer: a UTA 2.0 account in regular margin."""
    return {
        "marginMode": "REGULAR_MARGIN",
        "updatedTime": str(now_ms),
        "unifiedMarginStatus": 6,
        "dcpStatus": "OFF",
        "timeWindow": 10,
        "smpGroup": 0,
        "isMasterTrader": False,
        "spotHedgingStatus": "OFF",
    }


def coins(names: list[str]) -> dict[str, Any]:
    """Return ``/v5/asset/coin/query-info``'s answer: each coin, USDT on one chain (as
    ccxt's recorded fetchCurrencies answer lists it), the others without chains."""
    usdt_chain = {
        "chainType": "TRC20",
        "confirmation": "20",
        "withdrawFee": "1.6",
        "depositMin": "0",
        "withdrawMin": "2.6",
        "chain": "TRX",
        "chainDeposit": "1",
        "chainWithdraw": "1",
        "minAccuracy": "4",
        "withdrawPercentageFee": "0",
        "contractAddress": "TR7NHqjeKQxGTCi8q8ZY4pL8otSzgjLj6t",
    }
    rows = [
        {
            "name": name,
            "coin": name,
            "remainAmount": "50000000000",
            "chains": [usdt_chain] if name == "USDT" else [],
        }
        for name in names
    ]
    return {"rows": rows}
