"""A schedule replaying a day of the bundled dataset, executing on a paper trader.

Each firing debates the market one hour later than the previous one; before each
debate trades, the paper trader's clock moves to the debate's instant, filling the
stops and targets that prices crossed in the hour before. The trader's balance is then
recomputed from the orders alone and must match to the last satoshi.
"""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from debates.engine.plan import EXECUTION
from debates.models import Debate, Schedule
from debates.services.schedules import schedule_create, schedule_fire
from debates.state import step_outcome
from strategies.market.sources import source_for
from tests.debates.conftest import (
    wait_for,
    wait_until_finished,
)
from tests.debates.factories import AIModelFactory, FakeLLMModelFactory
from tests.debates.test_schedules import paper_trader_of, schedule_template
from tests.fakes.llm_server import Reply
from traders.exchanges.fills import fill_fee, realized_pnl
from traders.models import Execution, Order, Position
from traders.services import candles_between

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

REPLAY_FROM = datetime(2024, 8, 4, 12, tzinfo=UTC)
FIRINGS = 24
UNFINISHED = ("pending", "submitted")
PROTECTIVE = ("stop_market", "take_profit_market")
EXECUTION_STEP = (EXECUTION, None, None)


def wait_until_executed(debate_id: int) -> None:
    """Wait until the execution step of a debate is recorded (it runs after the debate
    completes, moving the paper clock first) and its execution, if any, is filled or
    failed."""
    wait_for(
        lambda: step_outcome(Debate.objects.get(pk=debate_id), EXECUTION_STEP) is not None,
        timeout=30,
    )
    wait_for(
        lambda: (
            not Execution.objects.filter(
                decision__debate_id=debate_id, status__in=UNFINISHED
            ).exists()
        ),
        timeout=30,
    )


def test_a_replay_schedule_walks_a_day_of_history_trading_on_paper(celery_worker, user):
    # given an hourly replay schedule from 2024-08-04 12:00 UTC, executing automatically
    # on a fresh 1,000 USDT paper trader, with three simulated models debating two rounds
    trader = paper_trader_of(user, fee_rate=Decimal("0.0004"))
    assert trader.replay_as_of is None
    models = [AIModelFactory(owner=user) for _ in range(3)]
    data = schedule_template(
        user,
        models=models,
        auto_execute=True,
        trader=trader.pk,
        interval_minutes=60,
        replay_as_of=REPLAY_FROM,
    )
    schedule = schedule_create(owner=user, data=data)

    # when it fires 24 times, each debate (and its execution) finishing before the next
    for _ in range(FIRINGS):
        firing = schedule_fire(schedule_id=schedule.pk)
        assert firing.skipped == "", firing
        wait_until_finished(firing.debate_id)
        wait_until_executed(firing.debate_id)

    # then 24 debates saw the market an hour apart, and the schedule is at the next hour
    debates = list(Debate.objects.filter(schedule=schedule).order_by("pk"))
    hours = [REPLAY_FROM + timedelta(hours=n) for n in range(FIRINGS)]
    assert [d.as_of for d in debates] == hours
    assert {d.status for d in debates} == {"completed"}
    schedule = Schedule.objects.get()
    assert (schedule.run_count, schedule.skip_count) == (FIRINGS, 0)
    assert schedule.replay_as_of == REPLAY_FROM + timedelta(hours=FIRINGS)
    # and the paper clock is at the last debate's instant
    trader.refresh_from_db()
    assert trader.replay_as_of == hours[-1]

    # and every entry filled at the dataset's fill price at its debate's instant (the open
    # of the first candle at or after it, where the paper clock had moved), with its fee;
    # every stop or target at its trigger price
    dataset = source_for("dataset")
    orders = list(Order.objects.filter(trader=trader).order_by("pk"))
    filled = [o for o in orders if o.status == "filled"]
    for order in filled:
        assert order.fee == fill_fee(order.average_price, order.filled_quantity, trader.fee_rate)
        if order.type in PROTECTIVE:
            assert order.average_price == order.trigger_price
        elif not order.reduce_only:
            as_of = order.execution.decision.debate.as_of
            price = Decimal(str(dataset.fetch_fill_price(order.symbol, as_of)))
            assert order.average_price == price, (order, as_of)

    # and each position is what its orders say: opened by one fill, closed by at most one
    by_position: dict[int, list[Order]] = defaultdict(list)
    for order in orders:
        by_position[order.position_id].append(order)
    positions = list(Position.objects.filter(trader=trader).order_by("pk"))
    realized = Decimal("0")
    closes: dict[str, int] = defaultdict(int)
    for position in positions:
        own = by_position[position.pk]
        entries = [o for o in own if o.status == "filled" and not o.reduce_only]
        exits = [o for o in own if o.status == "filled" and o.reduce_only]
        assert len(entries) == 1 and len(exits) <= 1, own
        entry = entries[0]
        assert (position.quantity, position.entry_price) == (
            entry.filled_quantity,
            entry.average_price,
        )
        assert position.fees == sum((o.fee for o in entries + exits), Decimal("0"))
        if position.status == "open":
            assert exits == []
            stop = [o for o in own if o.type == "stop_market" and o.status == "open"]
            assert [o.trigger_price for o in stop] == [position.stop_loss_price]
            continue
        (exit_order,) = exits
        pnl = realized_pnl(
            position.side, entry.average_price, exit_order.average_price, exit_order.filled_quantity
        )
        reason = {
            "stop_market": "stop_loss",
            "take_profit_market": "take_profit",
            "market": "decision",
        }
        assert (position.close_price, position.close_reason, position.realized_pnl) == (
            exit_order.average_price,
            reason[exit_order.type],
            pnl,
        )
        # a closed position leaves no order resting
        assert not [o for o in own if o.status == "open"]
        if exit_order.type in PROTECTIVE:
            # a candle between the opening debate and the clock reached the trigger
            opened = entry.execution.decision.debate.as_of
            candles = candles_between(dataset, position.symbol, opened, trader.replay_as_of)
            trigger = exit_order.trigger_price
            assert any(Decimal(str(c.low)) <= trigger <= Decimal(str(c.high)) for c in candles)
        realized += pnl
        closes[position.close_reason] += 1

    # and the balance is the starting balance plus realised gains minus every fee
    fees = sum((o.fee for o in filled), Decimal("0"))
    assert trader.balance == trader.starting_balance + realized - fees
    # and the day held both kinds of protective fill, so the clock's checks were exercised
    assert closes["stop_loss"] >= 1 and closes["take_profit"] >= 1, dict(closes)


BOOK_REPLAY_FROM = datetime(2024, 8, 6, tzinfo=UTC)
BOOK_FIRINGS = 18  # three days at 4h
_BTC_LINE = re.compile(r"^BTCUSDT: (.*)$", re.MULTILINE)


def book_trader_answer(record) -> Reply | None:
    """Vote as a trader reading its book: open a BTC long when none is held (stop 1 %,
    target 1.5 %), close a held one in profit, hold one at a loss; wait on ETH. The
    rounds get the server's default answer."""
    if "casts a final vote" not in record.prompt:
        return None
    held = _BTC_LINE.search(record.prompt).group(1)
    if held.startswith("nothing held"):
        action = "open_long"
    elif "unrealised +" in held:
        action = "close_long"
    else:
        action = "hold"
    decisions = [
        {
            "symbol": "BTCUSDT",
            "action": action,
            "confidence": 80,
            "leverage": 3,
            "position_pct": 0.2,
            "stop_loss": 0.01,
            "take_profit": 0.015,
            "reasoning": f"{action}: the book says {held[:40]}",
        },
        {"symbol": "ETHUSDT", "action": "wait", "confidence": 60, "reasoning": "Nothing."},
    ]
    return Reply.answer(
        f"<reasoning>Read the book.</reasoning><decision>{json.dumps(decisions)}</decision>"
    )


def test_a_replay_schedule_holds_and_closes_what_its_debates_opened(celery_worker, user, llm):
    # given a 4h replay schedule of full debates over three days from 6 August, executing
    # automatically on a fresh paper trader, whose voters trade by what their book holds
    llm.responder = book_trader_answer
    trader = paper_trader_of(user, fee_rate=Decimal("0.0004"))
    models = [FakeLLMModelFactory(owner=user, llm=llm) for _ in range(2)]
    data = schedule_template(
        user,
        models=models,
        auto_execute=True,
        trader=trader.pk,
        interval_minutes=240,
        replay_as_of=BOOK_REPLAY_FROM,
        level="L2",
    )
    schedule = schedule_create(owner=user, data=data)
    # when it fires eighteen times, each debate and its execution ending before the next
    for _ in range(BOOK_FIRINGS):
        firing = schedule_fire(schedule_id=schedule.pk)
        assert firing.skipped == "", firing
        assert wait_until_finished(firing.debate_id).status == "completed"
        wait_until_executed(firing.debate_id)
    debates = list(Debate.objects.filter(schedule=schedule).order_by("pk"))
    # then no execution failed: none was refused as "already open"
    executions = Execution.objects.filter(trader=trader)
    assert not executions.filter(status="failed").exists(), list(executions.values("error"))
    # and every debate's book was read at its instant; a position a debate opened shows
    # in the books of the debates after it until it closes, each of those holding it
    assert [d.book["as_of"] for d in debates] == [d.as_of.isoformat() for d in debates]
    held_over = [d for d in debates for p in d.book["positions"] if p["opened_by_debate"] != d.pk]
    assert held_over
    decided = {d.pk: d.decisions.get(is_primary=True).action for d in debates}
    for debate in debates:
        longs = [p for p in debate.book["positions"] if p["symbol"] == "BTCUSDT"]
        expected = "open_long" if not longs else ("close_long", "hold")
        assert decided[debate.pk] in expected, (debate.book, decided[debate.pk])
    # and positions closed by decision, by stop and by target
    reasons = Counter(
        Position.objects.filter(trader=trader, status="closed").values_list(
            "close_reason", flat=True
        )
    )
    assert {"decision", "stop_loss", "take_profit"} <= set(reasons), reasons
