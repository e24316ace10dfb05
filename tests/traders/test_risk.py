"""The risk arithmetic of an execution, without a database."""

from __future__ import annotations

from decimal import Decimal

import pytest

from traders.risk import (
    Funds,
    MarketRules,
    OpenIntent,
    RiskLimits,
    RiskRefused,
    plan_open,
    protective_prices,
    round_step,
)

BINANCE_BTC = MarketRules(
    amount_step=Decimal("0.001"), price_tick=Decimal("0.1"), min_amount=Decimal("0.001")
)
FUNDS = Funds(available=Decimal("1000"), equity=Decimal("1000"), wallet=Decimal("1000"))


def intent(**changes) -> OpenIntent:
    values = {
        "symbol": "BTCUSDT",
        "side": "long",
        "position_pct": Decimal("0.25"),
        "leverage": 5,
        "stop_loss": Decimal("0.03"),
        "take_profit": Decimal("0.06"),
    }
    return OpenIntent(**{**values, **changes})


def plan(the_intent=None, *, price="50000", funds=FUNDS, market=BINANCE_BTC, limits=None, held=()):
    return plan_open(
        the_intent or intent(),
        price=Decimal(price),
        funds=funds,
        market=market,
        limits=limits or RiskLimits(),
        open_positions=list(held),
    )


def test_margin_is_balance_times_position_pct_and_notional_is_margin_times_leverage():
    # given 1,000 USDT, 25 % of it at 5x on BTC at 50,000
    # when the order is planned
    result = plan()
    # then 250 of margin buys 1,250 of notional: 0.025 BTC, protected at -3 % / +6 %
    assert result.quantity == Decimal("0.025")
    assert result.notional == Decimal("1250.000")
    assert result.margin == Decimal("250")
    assert result.leverage == 5
    assert (result.stop_loss_price, result.take_profit_price) == (
        Decimal("48500.0"),
        Decimal("53000.0"),
    )
    assert result.adjustments == ()


def test_quantity_is_rounded_down_to_the_amount_step():
    # given a price at which 1,250 USDT is 0.0215... BTC
    # when the order is planned
    result = plan(price="57970.9")
    # then the quantity is rounded down to the 0.001 step
    assert result.quantity == Decimal("0.021")


def test_quantity_is_counted_in_contracts_of_the_contract_size():
    # given a market whose contract is 0.01 BTC
    market = MarketRules(
        amount_step=Decimal("1"),
        price_tick=Decimal("0.1"),
        min_amount=Decimal("1"),
        contract_size=Decimal("0.01"),
    )
    # when 1,250 USDT of BTC at 50,000 is planned
    result = plan(market=market)
    # then it is 2 contracts of 0.01 BTC (2.5 rounded down)
    assert result.quantity == Decimal("2")
    assert result.notional == Decimal("1000.00")


def test_leverage_above_the_strategy_cap_is_clamped_and_recorded():
    # given a decision at 15x on BTC and a strategy allowing 10x on majors
    # when the order is planned
    result = plan(intent(leverage=15))
    # then it trades at 10x, and says so
    assert result.leverage == 10
    assert [a.to_dict() for a in result.adjustments] == [
        {
            "field": "leverage",
            "requested": "15",
            "applied": "10",
            "reason": "capped at the strategy's maximum of 10x for BTCUSDT",
        }
    ]


def test_other_coins_are_capped_at_the_lower_leverage():
    # given a decision at 8x on SOL, others capped at 5x
    # when planned
    result = plan(intent(symbol="SOLUSDT", leverage=8), price="150")
    # then 5x applies
    assert result.leverage == 5


def test_the_exchange_cap_applies_when_lower_than_the_strategy_cap():
    # given a market allowing at most 3x
    market = MarketRules(
        amount_step=Decimal("0.001"),
        price_tick=Decimal("0.1"),
        min_amount=Decimal("0.001"),
        max_leverage=3,
    )
    # when a 5x decision is planned
    result = plan(market=market)
    # then 3x applies, with the exchange named as the reason
    assert result.leverage == 3
    assert result.adjustments[0].reason == "capped at the exchange's maximum of 3x for BTCUSDT"


def test_a_margin_below_the_minimum_order_value_is_raised_to_it():
    # given 1 % of 1,000 USDT (10 USDT) at 1x on SOL at 150, whole SOL contracts only
    sol = MarketRules(amount_step=Decimal("1"), price_tick=Decimal("0.01"), min_amount=Decimal("1"))
    # when planned
    result = plan(
        intent(symbol="SOLUSDT", position_pct=Decimal("0.01"), leverage=1), price="150", market=sol
    )
    # then the margin is raised to 12 USDT, and the quantity (0.08 SOL rounds down to 0) is
    # raised to the step that reaches 12 USD of notional
    assert [a.to_dict() for a in result.adjustments] == [
        {
            "field": "margin",
            "requested": "10.00",
            "applied": "12.00",
            "reason": "raised to the minimum order value of 12 USD",
        },
        {
            "field": "quantity",
            "requested": "0",
            "applied": "1",
            "reason": "rounded up to the step reaching 12 USD of notional",
        },
    ]
    assert result.quantity == Decimal("1")
    assert result.margin == Decimal("150")


@pytest.mark.parametrize(
    ("funds", "expected"),
    [
        (Funds(available=Decimal("800"), equity=Decimal("900"), wallet=Decimal("1000")), "800"),
        (Funds(available=None, equity=Decimal("900"), wallet=Decimal("1000")), "900"),
        (Funds(available=Decimal("0"), equity=None, wallet=Decimal("1000")), "1000"),
        (Funds(available=None, equity=None, wallet=None), "0"),
    ],
)
def test_the_sizing_balance_falls_back_from_available_to_equity_to_wallet(funds, expected):
    # given funds where some figures are missing
    # when the sizing balance is asked
    # then the first positive of available, equity, wallet is used
    assert funds.sizing_balance() == Decimal(expected)


@pytest.mark.parametrize(
    ("planned", "rule", "message"),
    [
        pytest.param(
            # 100 % of the balance at 5x, and at most 3 x equity per position
            {"the_intent": intent(position_pct=Decimal("1"))},
            "max_position_value",
            "position value 5000.00 USD is above the strategy's maximum of 3 x equity = "
            "3000.00 USD",
            id="above-the-maximum-value",
        ),
        pytest.param(
            # 8 USDT available of 1,000 equity: the margin is raised to the 12 USD minimum,
            # and 0.001 BTC needs 10 USDT of margin at 5x
            {
                "funds": Funds(
                    available=Decimal("8"), equity=Decimal("1000"), wallet=Decimal("1000")
                )
            },
            "insufficient_balance",
            "the position needs 10.00 USD of margin, 8.00 USD is available",
            id="margin-above-the-available-balance",
        ),
        pytest.param(
            {"funds": Funds(available=Decimal("0"), equity=Decimal("0"), wallet=Decimal("0"))},
            "insufficient_balance",
            "the account has no balance to trade with",
            id="account-without-balance",
        ),
        pytest.param(
            {"held": [("BTCUSDT", "long")]},
            "duplicate_position",
            "a long BTCUSDT position is already open; a second one in the same coin and "
            "direction is not allowed",
            id="second-position-in-the-same-coin-and-direction",
        ),
        pytest.param(
            # three open positions and a maximum of three
            {"held": [("ETHUSDT", "long"), ("SOLUSDT", "short"), ("XRPUSDT", "long")]},
            "max_open_positions",
            "3 positions are open, the strategy allows at most 3",
            id="more-than-the-maximum-open-positions",
        ),
        pytest.param(
            # a strategy asking for 3:1 and a decision at 3 % / 6 % (2:1)
            {"limits": RiskLimits(min_risk_reward=Decimal("3"))},
            "min_risk_reward",
            "risk/reward 2.00 (take profit 0.06 over stop loss 0.03) is below the strategy's "
            "minimum 3",
            id="risk-reward-below-the-strategy-minimum",
        ),
    ],
)
def test_a_position_beyond_a_limit_is_refused_naming_the_limit(planned, rule, message):
    # given an intent, funds, open positions or limits that one of the rules refuses
    # when planned
    with pytest.raises(RiskRefused) as refused:
        plan(**planned)
    # then it is refused, naming the rule, with the reason
    assert (refused.value.rule, refused.value.message) == (rule, message)


def test_the_opposite_direction_in_the_same_coin_is_allowed():
    # given an open BTC short
    # when a BTC long is planned
    result = plan(held=[("BTCUSDT", "short")])
    # then it is planned
    assert result.side == "long"


@pytest.mark.parametrize(
    ("side", "expected"),
    [
        ("long", (Decimal("48500.0"), Decimal("53000.0"))),
        ("short", (Decimal("51500.0"), Decimal("47000.0"))),
    ],
)
def test_protective_prices_sit_on_each_side_of_the_price(side, expected):
    # given a 3 % stop and a 6 % target at 50,000
    # when the protective prices are computed
    # then long: SL below, TP above; short: SL above, TP below
    assert (
        protective_prices(side, Decimal("50000"), Decimal("0.03"), Decimal("0.06"), Decimal("0.1"))
        == expected
    )


@pytest.mark.parametrize(
    ("stop_loss", "take_profit"),
    [
        (Decimal("0"), Decimal("0.06")),
        (Decimal("0.03"), Decimal("1")),
        (Decimal("-0.1"), Decimal("0.06")),
    ],
)
def test_fractions_outside_zero_and_one_are_refused(stop_loss, take_profit):
    # given a stop or target fraction that would put a price on the wrong side
    # when the prices are computed
    with pytest.raises(RiskRefused) as refused:
        protective_prices("short", Decimal("100"), stop_loss, take_profit, Decimal("0.01"))
    # then refused
    assert refused.value.rule == "protective_prices"


def test_a_stop_that_rounds_onto_the_price_is_refused():
    # given a tick so coarse that a 0.1 % stop rounds back to the price
    # when the prices are computed
    with pytest.raises(RiskRefused) as refused:
        protective_prices("long", Decimal("100"), Decimal("0.001"), Decimal("0.5"), Decimal("1"))
    # then refused: a stop at the entry price protects nothing
    assert refused.value.message == (
        "stop loss 100 and take profit 150 are not on the right side of the long entry price 100"
    )


def test_round_step_rounds_down_by_default():
    # given a value between two steps
    # when rounded
    # then it goes down to the step
    assert round_step(Decimal("0.0219"), Decimal("0.001")) == Decimal("0.021")
