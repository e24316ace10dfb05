"""Executions on the paper exchange: dataset prices at the paper clock, stops as it advances."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import ROUND_HALF_UP, Decimal

import pytest

from strategies.market.dataset import DatasetSource
from tests.debates.events_helpers import published
from tests.debates.factories import DebateFactory, DecisionFactory
from tests.fakes.exchange_server import FakeExchange
from tests.strategies.factories import StrategyFactory
from tests.traders.factories import PositionFactory, TraderFactory
from traders.models import Execution, Order, Position, Trader
from traders.services import (
    execution_request,
    execution_submit,
    paper_check_stops,
    paper_clock_advance,
)

pytestmark = pytest.mark.django_db

EIGHT = Decimal("0.00000001")
# BTCUSDT on the dataset at 2024-08-04 20:00 UTC: the open of the 20:00 hourly candle (the
# dataset's 15m candles begin on 5 August), where an order placed then fills.
ENTRY_AS_OF = "2024-08-04T20:00Z"
ENTRY_PRICE = Decimal("59257.67")
ENTRY_INSTANT = datetime(2024, 8, 4, 20, tzinfo=UTC)


def money(value: Decimal) -> Decimal:
    return value.quantize(EIGHT, rounding=ROUND_HALF_UP)


def execute(user, trader, decision) -> Execution:
    requested = execution_request(owner=user, debate_id=decision.debate_id, trader_id=trader.pk)
    return execution_submit(execution_id=requested.pk)


def test_a_paper_long_fills_at_the_dataset_price_at_the_snapshot_instant(
    user, paper_trader, make_decision
):
    # given a BTC long decision (25 % at 5x, SL 3 %, TP 6 %) of a debate at 2024-08-04 20:00
    decision = make_decision(as_of=ENTRY_AS_OF)
    # when it is executed on the paper trader
    execution = execute(user, paper_trader, decision)
    # then the clock moved to the snapshot instant and the order filled at that price
    paper_trader.refresh_from_db()
    assert paper_trader.replay_as_of == datetime(2024, 8, 4, 20, tzinfo=UTC)
    assert Decimal(str(DatasetSource().fetch_fill_price("BTCUSDT", paper_trader.replay_as_of))) == (
        ENTRY_PRICE
    )
    quantity = Decimal("0.021094")  # 250 x 5 / 59257.67, down to the 0.000001 step
    fee = money(ENTRY_PRICE * quantity * Decimal("0.0004"))
    assert (execution.status, execution.error) == ("filled", "")
    assert (execution.requested_quantity, execution.filled_quantity) == (quantity, quantity)
    assert (execution.average_price, execution.fee, execution.leverage) == (ENTRY_PRICE, fee, 5)
    assert execution.stop_loss_price == Decimal("57479.9399")  # 59257.67 x 0.97
    assert execution.take_profit_price == Decimal("62813.1302")  # 59257.67 x 1.06
    # and the stop and target rest on the exchange, protecting the open position
    orders = {o.client_order_id: o for o in Order.objects.filter(execution=execution)}
    cid = execution.client_order_id
    assert {key: (o.type, o.side, o.status, o.quantity) for key, o in orders.items()} == {
        cid: ("market", "buy", "filled", quantity),
        cid + "S": ("stop_market", "sell", "open", quantity),
        cid + "T": ("take_profit_market", "sell", "open", quantity),
    }
    assert execution.stop_loss_order_id == orders[cid + "S"].exchange_order_id
    assert execution.take_profit_order_id == orders[cid + "T"].exchange_order_id
    position = Position.objects.get(trader=paper_trader)
    assert (position.side, position.status, position.quantity, position.entry_price) == (
        "long",
        "open",
        quantity,
        ENTRY_PRICE,
    )
    assert position.margin == money(ENTRY_PRICE * quantity / 5)
    assert (position.stop_loss_price, position.take_profit_price) == (
        Decimal("57479.9399"),
        Decimal("62813.1302"),
    )
    assert paper_trader.balance == Decimal("1000") - fee


def test_a_paper_long_is_stopped_out_in_the_5_august_crash_at_the_stop_price(
    user, paper_trader, make_decision
):
    # given a BTC long opened on 2024-08-04 at 20:00 with a 3 % stop
    execution = execute(user, paper_trader, make_decision(as_of=ENTRY_AS_OF))
    stop_order = Order.objects.get(client_order_id=execution.client_order_id + "S")
    # when the paper clock reaches midnight, the stop has not been crossed yet
    assert paper_clock_advance(trader_id=paper_trader.pk, to=datetime(2024, 8, 5, tzinfo=UTC)) == []
    assert Position.objects.get(trader=paper_trader).status == "open"
    # and when it advances through the crash of 5 August
    filled = paper_clock_advance(trader_id=paper_trader.pk, to=datetime(2024, 8, 5, 12, tzinfo=UTC))
    # then the stop filled at its own price, with the fee, and the target was cancelled
    assert filled == [stop_order.pk]
    stop_order.refresh_from_db()
    entry = Order.objects.get(client_order_id=execution.client_order_id)
    stop_price = Decimal("57479.9399")
    assert (stop_order.status, stop_order.average_price) == ("filled", stop_price)
    assert stop_order.filled_quantity == entry.filled_quantity
    close_fee = money(stop_price * stop_order.filled_quantity * paper_trader.fee_rate)
    assert stop_order.fee == close_fee
    target = Order.objects.get(client_order_id=execution.client_order_id + "T")
    assert target.status == "canceled"
    position = Position.objects.get(trader=paper_trader)
    assert (position.status, position.close_reason, position.close_price) == (
        "closed",
        "stop_loss",
        stop_price,
    )
    pnl = money((stop_price - entry.average_price) * entry.filled_quantity)
    assert position.realized_pnl == pnl
    assert position.fees == entry.fee + close_fee
    # and the balance is the start, less both fees, plus the (negative) price change
    paper_trader.refresh_from_db()
    assert paper_trader.balance == Decimal("1000") - entry.fee + pnl - close_fee
    assert paper_trader.balance == Decimal("961.51557601")
    assert paper_trader.replay_as_of == datetime(2024, 8, 5, 12, tzinfo=UTC)


def test_a_paper_short_takes_its_profit_when_the_price_falls_through_the_target(
    user, paper_trader, make_decision
):
    # given a BTC short opened on 2024-08-04 at 20:00 with a 3 % target and a 6 % stop
    decision = make_decision(
        as_of=ENTRY_AS_OF, action="open_short", stop_loss=0.06, take_profit=0.03
    )
    execution = execute(user, paper_trader, decision)
    # when the clock advances through the crash
    paper_clock_advance(trader_id=paper_trader.pk, to=datetime(2024, 8, 5, 12, tzinfo=UTC))
    # then the target filled at 59257.67 x 0.97, and the short gained
    position = Position.objects.get(trader=paper_trader)
    target_price = Decimal("57479.9399")
    assert (position.side, position.close_reason, position.close_price) == (
        "short",
        "take_profit",
        target_price,
    )
    assert position.realized_pnl == money((ENTRY_PRICE - target_price) * execution.filled_quantity)
    assert Order.objects.get(client_order_id=execution.client_order_id + "S").status == "canceled"


def test_a_close_decision_closes_the_position_reduce_only_and_cancels_its_protection(
    user, paper_trader, make_decision
):
    # given an open long from an earlier debate
    opened = execute(user, paper_trader, make_decision(as_of=ENTRY_AS_OF))
    # when a later debate (one hour on) decides to close it
    closing = make_decision(as_of="2024-08-04T21:00Z", action="close_long")
    execution = execute(user, paper_trader, closing)
    # then a reduce-only sell of the whole position filled at 21:00's price
    exit_price = Decimal(
        str(DatasetSource().fetch_fill_price("BTCUSDT", datetime(2024, 8, 4, 21, tzinfo=UTC)))
    )
    order = Order.objects.get(client_order_id=execution.client_order_id)
    assert (order.side, order.reduce_only, order.status) == ("sell", True, "filled")
    assert (execution.status, execution.filled_quantity, execution.average_price) == (
        "filled",
        opened.filled_quantity,
        exit_price,
    )
    position = Position.objects.get(trader=paper_trader)
    assert (position.status, position.close_reason) == ("closed", "decision")
    statuses = Order.objects.filter(execution=opened).values_list("client_order_id", "status")
    assert sorted(statuses) == [
        (opened.client_order_id, "filled"),
        (opened.client_order_id + "S", "canceled"),
        (opened.client_order_id + "T", "canceled"),
    ]
    paper_trader.refresh_from_db()
    pnl = money((exit_price - ENTRY_PRICE) * opened.filled_quantity)
    assert paper_trader.balance == Decimal("1000") - opened.fee + pnl - execution.fee


def test_closing_without_an_open_position_does_nothing_and_says_so(
    user, paper_trader, make_decision
):
    # given no open position
    decision = make_decision(as_of=ENTRY_AS_OF, action="close_short")
    # when a close_short is executed
    execution = execute(user, paper_trader, decision)
    # then it does nothing, says why, and no order exists
    assert (execution.status, execution.note, execution.error) == (
        "skipped",
        "nothing to do: no short open",
        "",
    )
    assert Order.objects.count() == 0


def test_a_second_long_in_the_same_coin_does_nothing_and_says_so(user, paper_trader, make_decision):
    # given an open BTC long
    PositionFactory(trader=paper_trader, symbol="BTCUSDT", side="long")
    # when another BTC long is executed
    execution = execute(user, paper_trader, make_decision(as_of=ENTRY_AS_OF))
    # then it does nothing and says why: nothing is sent and the balance is untouched
    assert (execution.status, execution.note) == (
        "skipped",
        "nothing to do: a long is already open",
    )
    assert Order.objects.count() == 0
    assert Trader.objects.get(pk=paper_trader.pk).balance == Decimal("1000")


def test_more_open_positions_than_the_strategy_allows_are_refused(user, paper_trader):
    # given a strategy allowing one open position, and one open ETH short
    strategy = StrategyFactory(owner=user, max_open_positions=1)
    PositionFactory(trader=paper_trader, symbol="ETHUSDT", side="short", entry_price=2500)
    debate = DebateFactory(
        owner=user, strategy=strategy, status="completed", market_snapshot={"as_of": ENTRY_AS_OF}
    )
    # when a BTC long is executed
    execution = execute(user, paper_trader, DecisionFactory(debate=debate))
    # then it fails
    assert (execution.status, execution.error) == (
        "failed",
        "1 positions are open, the strategy allows at most 1",
    )


def test_a_position_above_the_maximum_value_is_refused(user, paper_trader, make_decision):
    # given all of the balance at 5x (5 x equity) against a maximum of 3 x equity
    decision = make_decision(as_of=ENTRY_AS_OF, position_pct=1.0)
    # when executed
    execution = execute(user, paper_trader, decision)
    # then refused, naming the limit
    assert execution.status == "failed"
    assert execution.error.startswith("position value 4999.")
    assert execution.error.endswith(
        "is above the strategy's maximum of 3.00 x equity = 3000.00 USD"
    )
    assert Order.objects.count() == 0


def test_leverage_above_the_strategy_cap_is_clamped_and_recorded(user, paper_trader):
    # given a strategy capping majors at 3x and a 5x decision
    strategy = StrategyFactory(owner=user, max_leverage_major=3)
    debate = DebateFactory(
        owner=user, strategy=strategy, status="completed", market_snapshot={"as_of": ENTRY_AS_OF}
    )
    # when executed
    execution = execute(user, paper_trader, DecisionFactory(debate=debate, leverage=5))
    # then it traded at 3x, and the execution says why
    assert (execution.status, execution.leverage) == ("filled", 3)
    assert execution.adjustments == [
        {
            "field": "leverage",
            "requested": "5",
            "applied": "3",
            "reason": "capped at the strategy's maximum of 3x for BTCUSDT",
        }
    ]
    assert Position.objects.get(trader=paper_trader).leverage == 3


def test_a_flat_account_ahead_of_the_debate_goes_back_to_its_instant_and_fills_there(
    user, paper_trader, make_decision
):
    # given a paper clock at 2024-08-06 and no open position
    later = datetime(2024, 8, 6, tzinfo=UTC)
    Trader.objects.filter(pk=paper_trader.pk).update(replay_as_of=later)
    # when a debate from 2024-08-04 20:00 is executed
    execution = execute(user, paper_trader, make_decision(as_of=ENTRY_AS_OF))
    # then it fills at the debate's instant, where the clock went back to
    assert (execution.status, execution.average_price) == ("filled", ENTRY_PRICE)
    assert Trader.objects.get(pk=paper_trader.pk).replay_as_of == datetime(
        2024, 8, 4, 20, tzinfo=UTC
    )


def test_an_account_holding_positions_ahead_of_the_debate_refuses_to_trade_earlier(
    user, paper_trader, make_decision
):
    # given a long opened on 2024-08-05 at noon, the clock there
    opened = execute(user, paper_trader, make_decision(as_of="2024-08-05T12:00Z", symbol="ETHUSDT"))
    assert opened.status == "filled"
    # when a debate from 2024-08-04 20:00, of a strategy letting decisions age 16 hours
    # (the staleness guard would refuse it first), is executed on it
    decision = make_decision(as_of=ENTRY_AS_OF)
    decision.debate.strategy.max_decision_age_minutes = 16 * 60
    decision.debate.strategy.save()
    execution = execute(user, paper_trader, decision)
    # then the execution fails with the reason, sends nothing, and the clock stays
    assert execution.status == "failed"
    assert execution.error == (
        f"Paper trader {paper_trader.name} is at 2024-08-05T12:00:00+00:00 holding open "
        "positions (ETHUSDT), after the debate's instant 2024-08-04T20:00:00+00:00: close "
        "them, or execute on a paper trader not past that instant."
    )
    assert not Order.objects.filter(execution=execution).exists()
    assert Trader.objects.get(pk=paper_trader.pk).replay_as_of == datetime(
        2024, 8, 5, 12, tzinfo=UTC
    )


def test_the_periodic_sweep_moves_dataset_traders_to_their_latest_debate(
    user, paper_trader, make_decision
):
    # given a protected long and a later completed debate of the trader at 5 August noon
    execute(user, paper_trader, make_decision(as_of=ENTRY_AS_OF))
    DebateFactory(
        owner=user,
        trader=paper_trader,
        status="completed",
        as_of=datetime(2024, 8, 5, 12, tzinfo=UTC),
    )
    # when the periodic sweep runs
    filled = paper_check_stops()
    # then the trader's clock followed the replay and the stop filled on the way
    paper_trader.refresh_from_db()
    assert paper_trader.replay_as_of == datetime(2024, 8, 5, 12, tzinfo=UTC)
    assert len(filled) == 1
    assert Position.objects.get(trader=paper_trader).close_reason == "stop_loss"


def test_each_state_change_is_announced_on_the_debates_stream(
    user, paper_trader, make_decision, django_capture_on_commit_callbacks
):
    # given a BTC long decision
    decision = make_decision(as_of=ENTRY_AS_OF)
    # when it is requested and submitted
    with django_capture_on_commit_callbacks(execute=True):
        requested = execution_request(
            owner=user, debate_id=decision.debate_id, trader_id=paper_trader.pk
        )
    with django_capture_on_commit_callbacks(execute=True):
        execution_submit(execution_id=requested.pk)
    # then pending, submitted and filled went out, each the REST representation
    events = published(decision.debate_id)
    assert [(kind, data["status"]) for kind, data in events] == [
        ("execution", "pending"),
        ("execution", "submitted"),
        ("execution", "filled"),
    ]
    last = events[-1][1]
    assert (last["id"], last["debate"], last["decision"], last["trader"]) == (
        requested.pk,
        decision.debate_id,
        decision.pk,
        paper_trader.pk,
    )
    assert last["average_price"] == "59257.6700000000"


def test_submitting_again_changes_nothing(user, paper_trader, make_decision):
    # given a filled execution
    execution = execute(user, paper_trader, make_decision(as_of=ENTRY_AS_OF))
    balance = Trader.objects.get(pk=paper_trader.pk).balance
    # when it is submitted again (a redelivered task)
    again = execution_submit(execution_id=execution.pk)
    # then nothing more is traded
    assert again.status == "filled"
    assert Order.objects.count() == 3
    assert Trader.objects.get(pk=paper_trader.pk).balance == balance


def test_a_trader_stopped_before_submission_sends_nothing(user, paper_trader, make_decision):
    # given a requested execution whose trader is then stopped
    decision = make_decision(as_of=ENTRY_AS_OF)
    requested = execution_request(
        owner=user, debate_id=decision.debate_id, trader_id=paper_trader.pk
    )
    Trader.objects.filter(pk=paper_trader.pk).update(status="stopped")
    # when it is submitted
    execution = execution_submit(execution_id=requested.pk)
    # then it fails without an order
    assert (execution.status, execution.error) == (
        "failed",
        f"Trader {paper_trader.name} was stopped before the order was sent.",
    )
    assert Order.objects.count() == 0


def test_an_unexpected_error_before_any_order_fails_the_execution(
    user, paper_trader, make_decision
):
    # given a debate whose stored snapshot instant cannot be read
    decision = make_decision(as_of="not an instant")
    # when it is executed
    execution = execute(user, paper_trader, decision)
    # then it failed without sending anything, and no worker is left holding it
    assert (execution.status, execution.error) == (
        "failed",
        "An internal error stopped the execution before any order was sent.",
    )
    assert Order.objects.count() == 0
    assert Execution.objects.get(pk=execution.pk).lease_until is None


def test_a_live_priced_paper_trader_fills_at_the_exchanges_current_price(
    user, make_decision, settings
):
    # given a paper trader on live prices, the live exchange being the fake one
    trader = TraderFactory(owner=user, exchange="paper", market_source="live")
    with FakeExchange() as fake:
        settings.MARKET_LIVE_API_URL = fake.url
        # when a BTC long is executed
        execution = execute(user, trader, make_decision())
    # then it filled at the exchange's last price, and the clock is the wall clock
    assert (execution.status, execution.average_price) == ("filled", Decimal("57970.9"))
    assert Trader.objects.get(pk=trader.pk).replay_as_of.year >= 2025


def test_an_account_that_never_traded_is_on_its_paper_clock_not_the_wall_clock(paper_trader):
    from debates.engine.book import Book
    from strategies.market.dataset import DATASET_END
    from traders.books import debate_book
    from traders.exchanges.paper import PaperExchange

    # given a dataset paper trader whose clock was never set (it prices at the dataset's end)
    assert paper_trader.replay_as_of is None
    # when its book is read for a debate of no instant, then it opens and closes a long
    book = Book.from_dict(debate_book(trader_id=paper_trader.pk, as_of=None, strategy_id=None))
    exchange = PaperExchange(paper_trader.pk)
    exchange.market_order("BTCUSDT", "buy", Decimal("0.01"), client_order_id="open-1")
    exchange.market_order(
        "BTCUSDT", "sell", Decimal("0.01"), client_order_id="close-1", reduce_only=True
    )
    # then the book and the position are both at the paper clock's instant
    position = Position.objects.get(trader=paper_trader)
    assert book.as_of == DATASET_END.isoformat()
    assert (position.opened_at, position.closed_at) == (DATASET_END, DATASET_END)


def test_a_resume_measures_the_guards_from_the_paper_clock(paper_trader):
    from django.utils import timezone

    from strategies.market.dataset import DATASET_END
    from traders.services.guards import trader_resume

    # given a paused dataset paper trader that never traded, and one at 2024-08-04 20:00
    paper_trader.paused_guard = "drawdown"
    paper_trader.save(update_fields=["paused_guard"])
    replaying = TraderFactory(exchange="paper", market_source="dataset", replay_as_of=ENTRY_INSTANT)
    # when their owners resume them, now
    resumed = [
        trader_resume(trader_id=trader.pk, now=timezone.now())
        for trader in (paper_trader, replaying)
    ]
    # then their guards count what comes after their paper clocks, not after the wall clock
    assert [trader.guards_since for trader in resumed] == [DATASET_END, ENTRY_INSTANT]
