"""A decision executes against the book: closes reduce-only, closes the other side first,
opens, or does nothing and says so."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from debates.models import Decision
from debates.services import DebateInput, debate_create, debate_start
from tests.api.conftest import run_steps
from tests.debates.factories import fake_llm_seats
from tests.fakes.llm_server import Reply, default_answer
from tests.strategies.factories import StrategyFactory
from tests.traders.test_paper import ENTRY_AS_OF, execute
from traders.models import Order, Position

pytestmark = pytest.mark.django_db


def held(trader) -> list[tuple[str, str, str]]:
    """Return the trader's positions as (symbol, side, status), oldest first."""
    return list(
        Position.objects.filter(trader=trader)
        .order_by("pk")
        .values_list("symbol", "side", "status")
    )


def test_an_opening_against_a_held_position_closes_it_first_then_opens(
    user, paper_trader, make_decision
):
    # given an open BTC long with its stop and target resting
    long = execute(user, paper_trader, make_decision(as_of=ENTRY_AS_OF))
    # when a BTC short is executed an hour later
    short = execute(
        user, paper_trader, make_decision(as_of="2024-08-04T21:00Z", action="open_short")
    )
    # then the long was closed first, reduce-only, with its whole quantity, its stop and
    # target cancelled, and the short opened with its own protection
    assert short.status == "filled"
    close = Order.objects.get(client_order_id=short.client_order_id + "X")
    assert (close.side, close.reduce_only, close.status) == ("sell", True, "filled")
    assert close.quantity == long.filled_quantity
    protection = Order.objects.filter(execution=long).exclude(client_order_id=long.client_order_id)
    assert sorted(protection.values_list("status", flat=True)) == ["canceled", "canceled"]
    assert held(paper_trader) == [("BTCUSDT", "long", "closed"), ("BTCUSDT", "short", "open")]
    assert Position.objects.get(side="long").close_reason == "decision"
    quantity, price = close.filled_quantity.normalize(), close.average_price.normalize()
    assert short.note == f"closed the long first: {quantity:f} at {price:f}"


def test_with_hedging_allowed_an_opening_opens_beside_the_held_position(user, paper_trader):
    # given a strategy that allows hedging, and an open BTC long of a debate on it
    strategy = StrategyFactory(owner=user, allow_hedging=True)
    from tests.debates.factories import DebateFactory, DecisionFactory

    def decision(as_of: str, action: str) -> Decision:
        debate = DebateFactory(
            owner=user, strategy=strategy, status="completed", market_snapshot={"as_of": as_of}
        )
        return DecisionFactory(debate=debate, action=action)

    execute(user, paper_trader, decision(ENTRY_AS_OF, "open_long"))
    # when a BTC short is executed
    short = execute(user, paper_trader, decision("2024-08-04T21:00Z", "open_short"))
    # then both sides are open, and nothing was closed
    assert (short.status, short.note) == ("filled", "")
    assert held(paper_trader) == [("BTCUSDT", "long", "open"), ("BTCUSDT", "short", "open")]


def run_debate_on(user, llm, trader, as_of: datetime) -> Decision:
    """Run a 2x2 debate on BTC at ``as_of`` on ``trader`` and return its primary decision."""
    data = DebateInput(
        name="Against the book",
        strategy=StrategyFactory(owner=user).pk,
        symbol="BTCUSDT",
        max_rounds=2,
        participants=fake_llm_seats(user, llm, ("bull", "bear"), timeout_seconds=10),
        trader=trader.pk,
        as_of=as_of,
    )
    debate = debate_create(owner=user, data=data)
    debate_start(debate_id=debate.pk)
    run_steps(debate.pk)
    return Decision.objects.get(debate=debate, is_primary=True)


def test_a_model_that_closes_what_it_sees_held_closes_it_and_with_nothing_held_does_nothing(
    user, llm, paper_trader, make_decision
):
    # given voters that vote close_long on BTC whenever their account holds a BTC long,
    # and a paper trader holding one since midnight on 10 August
    close = default_answer("BTCUSDT", action="close_long")
    llm.add_rule(Reply.answer(close, match="BTCUSDT: long BTCUSDT"))
    llm.add_rule(Reply.answer(close, match="casts a final vote"))
    long = execute(user, paper_trader, make_decision(as_of="2024-08-10T00:00Z"))
    # when a debate on the trader decides and its decision is executed
    decision = run_debate_on(user, llm, paper_trader, datetime(2024, 8, 10, 3, tzinfo=UTC))
    assert decision.action == "close_long"
    closing = execute(user, paper_trader, decision)
    # then the long is closed, reduce-only, with its whole quantity
    order = Order.objects.get(client_order_id=closing.client_order_id)
    assert (closing.status, order.reduce_only, order.quantity) == (
        "filled",
        True,
        long.filled_quantity,
    )
    assert held(paper_trader) == [("BTCUSDT", "long", "closed")]
    # and when the same answer is executed with nothing held, it does nothing and says so
    again = run_debate_on(user, llm, paper_trader, datetime(2024, 8, 10, 6, tzinfo=UTC))
    assert again.action == "close_long"
    nothing = execute(user, paper_trader, again)
    assert (nothing.status, nothing.note) == ("skipped", "nothing to do: no long open")
    assert not Order.objects.filter(execution=nothing).exists()
    assert Decimal(paper_trader.balance) == Decimal("1000")
