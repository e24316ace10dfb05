"""The shapes of OKX v5's answers, for the fake OKX (``tests.fakes.okx_server``).

Each function builds one answer, or one entry of its ``data`` list, with the fields OKX
sends (ccxt's recorded answers in ``ts/src/test/static/response/okx.json`` and the
comments of ccxt's ``okx.py`` show them): the envelope, a swap instrument, a ticker, the
trading account's balance and configuration, a position, and the fields of an order, an
algo order and a fill that the fake leaves as they are at rest. Every number is a string,
as OKX writes them; a fee is negative when charged.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from tests.fakes.perp import fields, text
from tests.fakes.venue import Row

# (contract value ctVal in coins, lotSz = minSz, tickSz, max leverage) roughly as OKX lists
# its USDT-margined swaps.
INSTRUMENTS: dict[str, tuple[str, str, str, str]] = {
    "BTCUSDT": ("0.01", "0.01", "0.1", "100"),
    "ETHUSDT": ("0.1", "0.01", "0.01", "100"),
    "SOLUSDT": ("1", "0.01", "0.01", "50"),
    "XRPUSDT": ("100", "0.01", "0.0001", "75"),
    "DOGEUSDT": ("1000", "0.01", "0.00001", "75"),
    "AVAXUSDT": ("1", "0.01", "0.001", "50"),
    "LINKUSDT": ("1", "0.01", "0.001", "50"),
}
# An order of the fake's, as ``/api/v5/trade/order`` shows one before anything fills
# (ccxt's recorded fetchClosedOrders answer).
ORDER_FIELDS: dict[str, Any] = {
    **fields(
        "algoClOrdId algoId attachAlgoClOrdId avgPx cancelSource cancelSourceReason ccy "
        "fillPx fillTime px pxType pxUsd pxVol quickMgnType slOrdPx slTriggerPx "
        "slTriggerPxType source stpId tag tgtCcy tpOrdPx tpTriggerPx tpTriggerPxType tradeId",
        "",
    ),
    **fields("accFillSz fee fillSz pnl rebate", "0"),
    "attachAlgoOrds": [],
    "category": "normal",
    "feeCcy": "USDT",
    "rebateCcy": "USDT",
    "instType": "SWAP",
    "ordType": "market",
    "state": "live",
    "stpMode": "cancel_maker",
    "tdMode": "cross",
}
# An algo order of the fake's, as ``/api/v5/trade/order-algo`` and ``orders-algo-pending``
# show one resting (ccxt's recorded fetchOpenOrders trigger answer).
ALGO_FIELDS: dict[str, Any] = {
    **fields(
        "activePx actualPx actualSide callbackRatio callbackSpread ccy chaseType chaseVal "
        "clOrdId closeFraction isTradeBorrowMode maxChaseType maxChaseVal moveTriggerPx "
        "ordId ordPx pxLimit pxSpread pxVar quickMgnType szLimit tag tgtCcy timeInterval "
        "tpOrdPx tpTriggerPx tpTriggerPxType slOrdPx slTriggerPx slTriggerPxType triggerPx "
        "triggerPxType triggerTime",
        "",
    ),
    "actualSz": "0",
    "amendPxOnTriggerType": "0",
    "attachAlgoOrds": [],
    "failCode": "0",
    "instType": "SWAP",
    "linkedOrd": {"ordId": ""},
    "ordIdList": [],
    "ordType": "conditional",
    "state": "live",
    "tdMode": "cross",
}
FILL_FIELDS: dict[str, Any] = {
    **fields("fillPxVol fillFwdPx fillMarkVol fillIdxPx fillPxUsd tag", ""),
    "execType": "T",
    "feeCcy": "USDT",
    "instType": "SWAP",
}


def ok(data: list[Any], msg: str = "") -> dict[str, Any]:
    """Return OKX's envelope around ``data``, all having gone well."""
    return {"code": "0", "msg": msg, "data": data}


def refused(code: str, msg: str, data: list[Any] | None = None) -> dict[str, Any]:
    """Return OKX's refusal: ``code`` with ``msg``, and per-order outcomes in ``data``."""
    return {"code": code, "msg": msg, "data": data or []}


def instrument(symbol: str) -> dict[str, Any]:
    """Return a USDT-margined swap as ``/api/v5/public/instruments`` lists it."""
    value, lot, tick, leverage = INSTRUMENTS.get(symbol, ("1", "0.01", "0.1", "50"))
    base = symbol.removesuffix("USDT")
    return {
        **fields("alias baseCcy expTime optType quoteCcy stk maxMktAmt", ""),
        "instId": f"{base}-USDT-SWAP",
        "instType": "SWAP",
        "instFamily": f"{base}-USDT",
        "uly": f"{base}-USDT",
        "category": "1",
        "ctType": "linear",
        "ctMult": "1",
        "ctVal": value,
        "ctValCcy": base,
        "settleCcy": "USDT",
        "lever": leverage,
        "listTime": "1611916828000",
        "lotSz": lot,
        "minSz": lot,
        "tickSz": tick,
        "maxLmtSz": "100000000",
        "maxMktSz": "12000",
        "maxStopSz": "12000",
        "maxTriggerSz": "100000000",
        "state": "live",
    }


def inverse_swap() -> dict[str, Any]:
    """Return a coin-margined swap (BTC-USD-SWAP), which a USDT account never trades."""
    return {
        **instrument("BTCUSDT"),
        "instId": "BTC-USD-SWAP",
        "instFamily": "BTC-USD",
        "uly": "BTC-USD",
        "ctType": "inverse",
        "ctVal": "100",
        "ctValCcy": "USD",
        "settleCcy": "BTC",
        "lotSz": "1",
        "minSz": "1",
    }


def ticker(
    inst_id: str, price: Decimal, rows: list[Row], contract_value: Decimal
) -> dict[str, Any]:
    """Return a swap's ticker: ``price`` last, the 24 hours of ``rows`` for the rest."""
    volume = sum(Decimal(row[5]) for row in rows)
    return {
        "instType": "SWAP",
        "instId": inst_id,
        "last": text(price),
        "lastSz": "1",
        "askPx": text(price),
        "askSz": "1",
        "bidPx": text(price),
        "bidSz": "1",
        "open24h": rows[0][1],
        "high24h": max((row[2] for row in rows), key=Decimal),
        "low24h": min((row[3] for row in rows), key=Decimal),
        "volCcy24h": text(volume),
        "vol24h": text(volume / contract_value),
        "sodUtc0": rows[0][1],
        "sodUtc8": rows[0][1],
    }


def balance(wallet: Decimal, unrealized: Decimal, margin: Decimal) -> dict[str, Any]:
    """Return the trading account's balance, USDT alone, as ``account/balance`` lists it."""
    equity = wallet + unrealized
    detail = {
        "ccy": "USDT",
        "eq": text(equity),
        "eqUsd": text(equity),
        "cashBal": text(wallet),
        "availBal": text(wallet - margin),
        "availEq": text(equity - margin),
        "frozenBal": text(margin),
        "imr": text(margin),
        "upl": text(unrealized),
        **fields("ordFrozen isoEq isoUpl liab interest crossLiab fixedBal twap", "0"),
        **fields("mgnRatio mmr notionalLever maxLoan", ""),
    }
    return {
        "totalEq": text(equity),
        "adjEq": text(equity),
        "availEq": text(equity - margin),
        "imr": text(margin),
        "upl": text(unrealized),
        **fields("isoEq mmr ordFroz notionalUsd", "0"),
        "mgnRatio": "",
        "details": [detail],
    }


def config(hedged: bool) -> dict[str, Any]:
    """Return ``account/config``: a single-currency margin account in ``net_mode`` or,
    hedged, ``long_short_mode``."""
    return {
        "acctLv": "2",
        "posMode": "long_short_mode" if hedged else "net_mode",
        "autoLoan": False,
        "ctIsoMode": "automatic",
        "mgnIsoMode": "automatic",
        "greeksType": "PA",
        "kycLv": "2",
        "label": "fake",
        "level": "Lv1",
        "levelTmp": "",
        "liquidationGear": "-1",
        "mainUid": "374579799097793561",
        "uid": "374579799097793561",
        "perm": "read_only,trade",
        "ip": "",
        "opAuth": "0",
        "roleType": "0",
        "spotRoleType": "0",
        "spotTraderInsts": [],
        "traderInsts": [],
    }


def position(
    inst_id: str, pos_side: str, amount: Decimal, entry: Decimal, price: Decimal, leverage: int
) -> dict[str, Any]:
    """Return an open position: ``amount`` contracts, signed in ``net`` mode (negative when
    short), as ``account/positions`` lists it."""
    return {
        "instId": inst_id,
        "instType": "SWAP",
        "mgnMode": "cross",
        "posSide": pos_side,
        "pos": text(amount),
        "availPos": text(abs(amount)),
        "avgPx": text(entry),
        "markPx": text(price),
        "last": text(price),
        "idxPx": text(price),
        "lever": str(leverage),
        "ccy": "USDT",
        **fields("liqPx margin posCcy mgnRatio bizRefId bizRefType", ""),
        **fields("adl fee fundingFee pnl realizedPnl liqPenalty", "0"),
        "closeOrderAlgo": [],
    }


def usdt_chain() -> dict[str, Any]:
    """Return USDT on one chain, as ``asset/currencies`` lists a coin's chains."""
    return {
        "ccy": "USDT",
        "chain": "USDT-TRC20",
        "name": "Tether",
        "canDep": True,
        "canWd": True,
        "canInternal": True,
        "mainNet": False,
        "minDep": "0.00000001",
        "minWd": "2",
        "maxWd": "8000000",
        "minFee": "0.8",
        "maxFee": "1.6",
        "wdTickSz": "4",
        "needTag": False,
    }
