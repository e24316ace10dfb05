"""An exchange account's position mode: in hedge mode every order carries its position
side; in one-way mode none does, and a held position is never netted away by an opening
the other way."""

from __future__ import annotations

import pytest

from tests.strategies.factories import StrategyFactory
from tests.traders.test_ccxt import ALGO, ORDER, placed, request_execution
from traders.services import execution_submit

pytestmark = pytest.mark.django_db


def sides(fake, path=ORDER) -> list[tuple]:
    return [(p["side"], p.get("positionSide"), p.get("reduceOnly")) for p in placed(fake, path)]


def test_on_a_hedge_mode_account_each_order_carries_its_position_side(
    user, binance_trader, fake_exchange, make_decision
):
    # given a Binance account in hedge mode
    fake_exchange.hedge_mode = True
    # when a BTC long is opened, then closed by a decision
    opened = execution_submit(
        execution_id=request_execution(user, binance_trader, make_decision()).pk
    )
    closed = execution_submit(
        execution_id=request_execution(user, binance_trader, make_decision(action="close_long")).pk
    )
    # then the entry and the close named the long side, with no reduceOnly (which hedge
    # mode refuses), and so did the stop and the target
    assert (opened.status, closed.status) == ("filled", "filled"), (opened.error, closed.error)
    assert sides(fake_exchange) == [("BUY", "LONG", None), ("SELL", "LONG", None)]
    assert sides(fake_exchange, ALGO)[:2] == [("SELL", "LONG", None), ("SELL", "LONG", None)]
    assert fake_exchange.positions[("BTCUSDT", "LONG")].amount == 0


def test_on_a_one_way_account_hedging_closes_the_held_position_first(
    user, binance_trader, fake_exchange, make_decision
):
    # given a one-way Binance account holding a BTC long, on a strategy allowing hedging
    strategy = StrategyFactory(owner=user, allow_hedging=True)
    first = make_decision()
    first.debate.strategy = strategy
    first.debate.save()
    assert execution_submit(execution_id=request_execution(user, binance_trader, first).pk)
    # when a short is decided
    short = make_decision(action="open_short")
    short.debate.strategy = strategy
    short.debate.save()
    execution = execution_submit(execution_id=request_execution(user, binance_trader, short).pk)
    # then the long was closed reduce-only before the short opened, none naming a side:
    # opened beside it, the short would have netted the long away
    assert execution.status == "filled", execution.error
    assert sides(fake_exchange) == [
        ("BUY", None, None),
        ("SELL", None, "true"),
        ("SELL", None, None),
    ]
    assert fake_exchange.positions[("BTCUSDT", "BOTH")].amount < 0
