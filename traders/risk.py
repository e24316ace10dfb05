"""Risk arithmetic of an execution: sizing, leverage cap, limits, protective prices.

Pure functions on ``Decimal`` with no Django import, so every rule is unit-tested
without a database. ``plan_open`` turns an opening decision, the account's funds and the
market's rules into an order plan, or refuses with ``RiskRefused`` naming the rule.

Rules (SPEC 10.4 and 10.5), in the order they are checked:

1. No second open position in the same coin and direction; at most
   ``max_open_positions`` open positions in all.
2. Leverage: the decision's leverage, capped at the strategy's maximum for the coin
   (BTC and ETH are majors) and at the exchange's maximum for the market. A leverage
   above the cap is *clamped*, not refused, and the clamp is recorded as an adjustment:
   the consensus already clamps to the strategy's cap, so a higher value here only means
   the strategy changed after the debate, and trading at the cap is what its owner asked.
3. Stop loss and take profit are fractions of the price in (0, 1); the take profit over
   the stop loss must reach ``min_risk_reward`` when one is set.
4. Size: the sizing balance (available, else total equity, else wallet balance) times
   ``position_pct`` is the margin, raised to ``min_order_usd`` when below it (recorded).
   The notional is margin x leverage; the quantity, in contracts, is
   notional / (price x contract size) rounded down to the amount step, or up to the
   step that reaches ``min_order_usd`` of notional when rounding down falls below it.
   An order worth less than the market's own minimum (``MarketRules.min_notional``) is
   refused, naming it: raising it could multiply the size asked for.
5. The notional may not exceed ``max_position_multiple`` x equity, and the margin may not
   exceed the available balance: both are refused, never shrunk.
6. Protective prices: long SL = price x (1 - sl), TP = price x (1 + tp); short SL =
   price x (1 + sl), TP = price x (1 - tp), rounded half-up to the price tick; each must
   stay strictly on its side of the price after rounding.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import ROUND_CEILING, ROUND_FLOOR, ROUND_HALF_UP, Decimal
from typing import Any, Protocol

MAJOR_BASES: tuple[str, ...] = ("BTC", "ETH")
LONG = "long"
SHORT = "short"
# What an opening decision that leaves a value unset is executed with.
DEFAULT_POSITION_PCT = Decimal("0.1")
DEFAULT_LEVERAGE = 1
DEFAULT_STOP_LOSS = Decimal("0.03")
DEFAULT_TAKE_PROFIT = Decimal("0.06")


class RiskRefused(Exception):
    """An execution breaks a risk rule; ``rule`` names it, the message explains it."""

    def __init__(self, rule: str, message: str) -> None:
        self.rule = rule
        self.message = message
        super().__init__(message)


@dataclass(frozen=True)
class RiskLimits:
    """The strategy's risk limits (``strategies.models.Strategy``)."""

    max_leverage_major: int = 10
    max_leverage_other: int = 5
    max_position_multiple: Decimal = Decimal("3")
    max_open_positions: int = 3
    min_order_usd: Decimal = Decimal("12")
    min_risk_reward: Decimal = Decimal("0")

    def leverage_cap(self, symbol: str) -> int:
        """Return the strategy's maximum leverage for ``symbol`` (``BTCUSDT`` form)."""
        is_major = any(symbol == f"{base}USDT" for base in MAJOR_BASES)
        return self.max_leverage_major if is_major else self.max_leverage_other


@dataclass(frozen=True)
class MarketRules:
    """What the exchange allows for one market; quantities are in contracts."""

    amount_step: Decimal
    price_tick: Decimal
    min_amount: Decimal
    contract_size: Decimal = Decimal("1")
    max_leverage: int | None = None
    min_notional: Decimal | None = None  # the least value of an opening order, if any


@dataclass(frozen=True)
class Funds:
    """The account's money in the settlement currency; None where the exchange is silent."""

    available: Decimal | None
    equity: Decimal | None
    wallet: Decimal | None

    def sizing_balance(self) -> Decimal:
        """Return the first positive of available, total equity and wallet balance, else 0."""
        for value in (self.available, self.equity, self.wallet):
            if value is not None and value > 0:
                return value
        return Decimal("0")


@dataclass(frozen=True)
class OpenIntent:
    """An opening decision: which side, how much of the balance, leverage, SL/TP fractions."""

    symbol: str
    side: str
    position_pct: Decimal
    leverage: int
    stop_loss: Decimal
    take_profit: Decimal


@dataclass(frozen=True)
class Adjustment:
    """A value the rules changed, recorded on the execution."""

    field: str
    requested: str
    applied: str
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """Return the JSON form stored on the execution."""
        return {
            "field": self.field,
            "requested": self.requested,
            "applied": self.applied,
            "reason": self.reason,
        }


@dataclass(frozen=True)
class OpenPlan:
    """The order an opening decision becomes: quantity in contracts, prices in quote."""

    symbol: str
    side: str
    price: Decimal
    quantity: Decimal
    leverage: int
    margin: Decimal
    notional: Decimal
    stop_loss_price: Decimal
    take_profit_price: Decimal
    adjustments: tuple[Adjustment, ...] = field(default=())


class Opening(Protocol):
    """An opening decision as it is stored: a debate's ``Decision``, a backtest's intent."""

    symbol: str
    action: str
    position_pct: float | None
    leverage: int | None
    stop_loss: float | None
    take_profit: float | None


def open_intent(decision: Opening) -> OpenIntent:
    """Return the intent of an ``open_long``/``open_short`` decision, each unset value
    given its default (10 % of the balance, 1x, a 3 % stop, a 6 % target)."""

    def fraction(value: float | None, default: Decimal) -> Decimal:
        return default if value is None else Decimal(str(value))

    return OpenIntent(
        symbol=decision.symbol,
        side=LONG if decision.action == "open_long" else SHORT,
        position_pct=fraction(decision.position_pct, DEFAULT_POSITION_PCT),
        leverage=decision.leverage or DEFAULT_LEVERAGE,
        stop_loss=fraction(decision.stop_loss, DEFAULT_STOP_LOSS),
        take_profit=fraction(decision.take_profit, DEFAULT_TAKE_PROFIT),
    )


def round_step(value: Decimal, step: Decimal, rounding: str = ROUND_FLOOR) -> Decimal:
    """Return ``value`` rounded to a multiple of ``step`` (down by default)."""
    if step <= 0:
        raise ValueError(f"step must be positive, got {step}")
    return ((value / step).to_integral_value(rounding=rounding) * step).quantize(step)


def protective_prices(
    side: str, price: Decimal, stop_loss: Decimal, take_profit: Decimal, tick: Decimal
) -> tuple[Decimal, Decimal]:
    """Return (stop-loss price, take-profit price) of a ``side`` position entered at ``price``.

    Raise ``RiskRefused`` when a fraction is out of (0, 1) or a rounded price is not
    strictly on its side of ``price``.
    """
    check_fractions(side, stop_loss, take_profit)
    if side == LONG:
        sl_price = round_step(price * (1 - stop_loss), tick, ROUND_HALF_UP)
        tp_price = round_step(price * (1 + take_profit), tick, ROUND_HALF_UP)
        wrong_side = not (sl_price < price < tp_price) or sl_price <= 0
    else:
        sl_price = round_step(price * (1 + stop_loss), tick, ROUND_HALF_UP)
        tp_price = round_step(price * (1 - take_profit), tick, ROUND_HALF_UP)
        wrong_side = not (tp_price < price < sl_price) or tp_price <= 0
    if wrong_side:
        raise RiskRefused(
            "protective_prices",
            f"stop loss {sl_price} and take profit {tp_price} are not on the right side of "
            f"the {side} entry price {price}",
        )
    return sl_price, tp_price


def check_fractions(side: str, stop_loss: Decimal, take_profit: Decimal) -> None:
    """Refuse stop-loss or take-profit fractions outside (0, 1)."""
    for name, value in (("stop_loss", stop_loss), ("take_profit", take_profit)):
        if not Decimal("0") < value < Decimal("1"):
            raise RiskRefused(
                "protective_prices",
                f"{name} must be a fraction of the price between 0 and 1 (0.03 = 3 %), got {value}",
            )


def plan_open(
    intent: OpenIntent,
    *,
    price: Decimal,
    funds: Funds,
    market: MarketRules,
    limits: RiskLimits,
    open_positions: Iterable[tuple[str, str]],
) -> OpenPlan:
    """Return the order plan of an opening decision, or raise ``RiskRefused``.

    ``open_positions`` holds (symbol, side) of every open position of the account. The
    rules are checked in the order of the module docstring.
    """
    if price <= 0:
        raise RiskRefused("price", f"no usable price for {intent.symbol}: {price}")
    _check_room(intent, list(open_positions), limits)
    adjustments: list[Adjustment] = []
    leverage = _capped_leverage(intent, market, limits, adjustments)
    check_fractions(intent.side, intent.stop_loss, intent.take_profit)
    _check_risk_reward(intent, limits)
    balance = funds.sizing_balance()
    if balance <= 0:
        raise RiskRefused("insufficient_balance", "the account has no balance to trade with")
    unit = price * market.contract_size
    quantity = _quantity(balance * intent.position_pct, leverage, unit, market, limits, adjustments)
    notional = quantity * unit
    margin = notional / leverage
    _check_exposure(notional, margin, funds, balance, limits)
    sl_price, tp_price = protective_prices(
        intent.side, price, intent.stop_loss, intent.take_profit, market.price_tick
    )
    return OpenPlan(
        symbol=intent.symbol,
        side=intent.side,
        price=price,
        quantity=quantity,
        leverage=leverage,
        margin=margin,
        notional=notional,
        stop_loss_price=sl_price,
        take_profit_price=tp_price,
        adjustments=tuple(adjustments),
    )


def _check_room(intent: OpenIntent, held: list[tuple[str, str]], limits: RiskLimits) -> None:
    """Refuse a second position in the same coin and direction, or one too many."""
    if (intent.symbol, intent.side) in held:
        raise RiskRefused(
            "duplicate_position",
            f"a {intent.side} {intent.symbol} position is already open; "
            "a second one in the same coin and direction is not allowed",
        )
    if len(held) >= limits.max_open_positions:
        raise RiskRefused(
            "max_open_positions",
            f"{len(held)} positions are open, the strategy allows at most "
            f"{limits.max_open_positions}",
        )


def _check_risk_reward(intent: OpenIntent, limits: RiskLimits) -> None:
    """Refuse a take profit over stop loss below the strategy's minimum, when one is set."""
    if limits.min_risk_reward <= 0:
        return
    reward = intent.take_profit / intent.stop_loss
    if reward < limits.min_risk_reward:
        raise RiskRefused(
            "min_risk_reward",
            f"risk/reward {reward:.2f} (take profit {intent.take_profit} over stop loss "
            f"{intent.stop_loss}) is below the strategy's minimum {limits.min_risk_reward}",
        )


def _quantity(
    margin: Decimal,
    leverage: int,
    unit: Decimal,
    market: MarketRules,
    limits: RiskLimits,
    adjustments: list[Adjustment],
) -> Decimal:
    """Return the contracts ``margin`` at ``leverage`` buys at ``unit`` (a contract's
    price), raised to the minimum order value and the market's minimum amount; record
    each raise in ``adjustments``."""
    if margin < limits.min_order_usd:
        adjustments.append(
            Adjustment(
                "margin",
                _money(margin),
                _money(limits.min_order_usd),
                f"raised to the minimum order value of {limits.min_order_usd} USD",
            )
        )
        margin = limits.min_order_usd
    quantity = round_step(margin * leverage / unit, market.amount_step)
    if quantity * unit < limits.min_order_usd:
        raised = round_step(limits.min_order_usd / unit, market.amount_step, ROUND_CEILING)
        adjustments.append(
            Adjustment(
                "quantity",
                str(quantity),
                str(raised),
                f"rounded up to the step reaching {limits.min_order_usd} USD of notional",
            )
        )
        quantity = raised
    if quantity < market.min_amount:
        raised = round_step(market.min_amount, market.amount_step, ROUND_CEILING)
        adjustments.append(
            Adjustment(
                "quantity", str(quantity), str(raised), "raised to the market's minimum amount"
            )
        )
        quantity = raised
    if market.min_notional is not None and quantity * unit < market.min_notional:
        raise RiskRefused(
            "min_notional",
            f"the order's value {_money(quantity * unit)} USDT is below the market's minimum "
            f"order value of {_money(market.min_notional)} USDT; a larger position_pct or "
            "leverage reaches it",
        )
    return quantity


def _check_exposure(
    notional: Decimal, margin: Decimal, funds: Funds, balance: Decimal, limits: RiskLimits
) -> None:
    """Refuse a position worth more than the strategy's multiple of equity, or needing
    more margin than is available (``balance``, the sizing balance, where the exchange
    is silent)."""
    equity = funds.equity if funds.equity is not None and funds.equity > 0 else balance
    max_notional = limits.max_position_multiple * equity
    if notional > max_notional:
        raise RiskRefused(
            "max_position_value",
            f"position value {_money(notional)} USD is above the strategy's maximum of "
            f"{limits.max_position_multiple} x equity = {_money(max_notional)} USD",
        )
    available = funds.available if funds.available is not None else balance
    if margin > available:
        raise RiskRefused(
            "insufficient_balance",
            f"the position needs {_money(margin)} USD of margin, {_money(available)} USD is "
            "available",
        )


def _capped_leverage(
    intent: OpenIntent, market: MarketRules, limits: RiskLimits, adjustments: list[Adjustment]
) -> int:
    cap = limits.leverage_cap(intent.symbol)
    reason = f"capped at the strategy's maximum of {cap}x for {intent.symbol}"
    if market.max_leverage is not None and market.max_leverage < cap:
        cap = market.max_leverage
        reason = f"capped at the exchange's maximum of {cap}x for {intent.symbol}"
    leverage = intent.leverage
    if leverage < 1:
        adjustments.append(Adjustment("leverage", str(leverage), "1", "raised to 1x"))
        return 1
    if leverage > cap:
        adjustments.append(Adjustment("leverage", str(leverage), str(cap), reason))
        return cap
    return leverage


def _money(value: Decimal) -> str:
    return str(value.quantize(Decimal("0.01"), rounding=ROUND_HALF_UP))
