"""A trader's book: its account at a debate's instant, read from the paper exchange and the
trader's own rows."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from debates.engine.book import Book
from debates.services import DebateInput, debate_create, debate_start
from strategies.market.dataset import DatasetSource
from tests.api.conftest import run_steps
from tests.debates.factories import fake_llm_seats
from tests.strategies.factories import StrategyFactory
from tests.traders.test_paper import ENTRY_AS_OF, ENTRY_PRICE, execute
from traders.books import debate_book
from traders.models import Position

pytestmark = pytest.mark.django_db

QUANTITY = Decimal("0.021094")  # the long test_paper opens: 250 x 5 / 59257.67
STOP, TARGET = Decimal("57479.9399"), Decimal("62813.1302")
LATER = datetime(2024, 8, 4, 23, tzinfo=UTC)


def dataset_price(symbol: str, at: datetime) -> Decimal:
    return Decimal(str(DatasetSource().fetch_fill_price(symbol, at)))


def test_the_book_holds_an_open_long_at_the_debates_instant(user, paper_trader, make_decision):
    # given a BTC long opened through a debate's decision at 20:00, 5x, with its stop and
    # target, and a strategy allowing at most 3 positions of 3x equity each
    decision = make_decision(as_of=ENTRY_AS_OF)
    entry = execute(user, paper_trader, decision)
    strategy = StrategyFactory(owner=user, max_open_positions=3, max_position_multiple=3)
    # when the book is read for a debate at 23:00
    book = Book.from_dict(
        debate_book(trader_id=paper_trader.pk, as_of=LATER, strategy_id=strategy.pk)
    )
    # then the trader's clock is at 23:00 and the long is marked at that instant's price
    paper_trader.refresh_from_db()
    assert paper_trader.replay_as_of == LATER
    mark = dataset_price("BTCUSDT", LATER)
    pnl = (mark - ENTRY_PRICE) * QUANTITY
    margin = ENTRY_PRICE * QUANTITY / 5
    [held] = book.positions
    assert (held.symbol, held.side, held.quantity, held.entry_price, held.leverage) == (
        "BTCUSDT",
        "long",
        float(QUANTITY),
        float(ENTRY_PRICE),
        5,
    )
    assert held.mark_price == float(mark)
    assert held.unrealized_pnl == pytest.approx(float(pnl))
    assert held.unrealized_pct == pytest.approx(float(pnl / margin * 100))
    assert held.peak_pnl == pytest.approx(float(pnl))
    assert (held.stop_loss, held.take_profit) == (float(STOP), float(TARGET))
    assert held.opened_by_debate == decision.debate_id
    assert held.opened_at is not None
    # and the account: the wallet less the fee, marked, the margin in use
    equity = paper_trader.balance + pnl
    assert book.as_of == LATER.isoformat()
    assert book.equity == pytest.approx(float(equity))
    assert book.available == pytest.approx(float(equity - margin), abs=1e-6)
    assert book.margin_in_use == pytest.approx(float(margin), abs=1e-6)
    assert (book.positions_left, book.closed, book.hedging) == (2, (), False)
    assert book.max_position_value == pytest.approx(float(3 * equity))
    assert book.realized_pnl_today == 0.0
    assert entry.status == "filled"


def test_the_book_keeps_the_best_unrealised_pnl_a_position_reached(
    user, paper_trader, make_decision
):
    # given a BTC long opened at 20:00, its book read at 21:00, 22:00 and 23:00
    execute(user, paper_trader, make_decision(as_of=ENTRY_AS_OF))
    marks = []
    for hour in (21, 22, 23):
        at = datetime(2024, 8, 4, hour, tzinfo=UTC)
        book = Book.from_dict(debate_book(trader_id=paper_trader.pk, as_of=at, strategy_id=None))
        marks.append((dataset_price("BTCUSDT", at) - ENTRY_PRICE) * QUANTITY)
    # then the last book's best is the best unrealised P&L of the three reads
    assert book.positions[0].peak_pnl == pytest.approx(float(max(marks)))
    assert Position.objects.get(trader=paper_trader).peak_pnl == max(marks).quantize(
        Decimal("0.00000001")
    )


def test_a_stopped_out_long_is_a_closed_trade_and_todays_realised_loss(
    user, paper_trader, make_decision
):
    # given a BTC long opened at 20:00 on 4 August and stopped out in the crash of 5 August
    execute(user, paper_trader, make_decision(as_of=ENTRY_AS_OF))
    noon = datetime(2024, 8, 5, 12, tzinfo=UTC)
    # when the book is read at noon on 5 August
    book = Book.from_dict(debate_book(trader_id=paper_trader.pk, as_of=noon, strategy_id=None))
    # then nothing is open, and the stop-out is the last closed trade and today's loss
    position = Position.objects.get(trader=paper_trader)
    loss = float(position.realized_pnl - position.fees)
    assert book.positions == ()
    [closed] = book.closed
    assert (closed.symbol, closed.side, closed.reason) == ("BTCUSDT", "long", "stop_loss")
    assert (closed.entry_price, closed.exit_price) == (float(ENTRY_PRICE), float(STOP))
    assert closed.pnl == pytest.approx(loss)
    assert book.realized_pnl_today == pytest.approx(loss)
    assert book.equity == pytest.approx(float(Decimal("961.51557601")))


def test_the_votes_of_a_debate_on_the_trader_see_its_open_long_and_the_rounds_do_not(
    user, llm, paper_trader, make_decision
):
    # given the paper trader's BTC long opened at midnight on 10 August (inside the
    # strategy's dataset window), and a debate on the trader at 03:00
    opening = make_decision(as_of="2024-08-10T00:00Z")
    entry = execute(user, paper_trader, opening)
    data = DebateInput(
        name="With the book",
        strategy=StrategyFactory(owner=user).pk,
        symbol="BTCUSDT",
        max_rounds=2,
        participants=fake_llm_seats(user, llm, ("bull", "bear"), timeout_seconds=10),
        trader=paper_trader.pk,
        as_of=datetime(2024, 8, 10, 3, tzinfo=UTC),
    )
    debate = debate_create(owner=user, data=data)
    debate_start(debate_id=debate.pk)
    # when it runs
    finished = run_steps(debate.pk)
    # then it stored the book, with the long still open
    [held] = Book.from_dict(finished.book).positions
    assert (held.opened_by_debate, held.quantity) == (
        opening.debate_id,
        float(entry.filled_quantity),
    )
    # and each vote's prompt holds the long: its entry, quantity, unrealised P&L, stop,
    # target and what each action would do to it
    votes = [r.prompt for r in llm.requests if "casts a final vote" in r.prompt]
    turns = [r.prompt for r in llm.requests if "casts a final vote" not in r.prompt]
    assert len(votes) == 2 and len(turns) == 4
    quantity, price = entry.filled_quantity.normalize(), entry.average_price.normalize()
    for prompt in votes:
        assert f"long BTCUSDT {quantity:f} at {price:f}" in prompt
        assert f"unrealised {held.unrealized_pnl:+,.2f} USDT" in prompt
        assert f"stop {entry.stop_loss_price.normalize():f}" in prompt
        assert f"target {entry.take_profit_price.normalize():f}" in prompt
        assert "close_long: closes the long (reduce-only)" in prompt
        assert "open_short: closes the long (reduce-only), then opens a short" in prompt
    # and no turn of the rounds does: they argue the market
    assert not [prompt for prompt in turns if "Your trader's account" in prompt]
