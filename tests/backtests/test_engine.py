"""The simulated account of backtests, without a database: the rules, checked against an
independent computation from the bundled candles (``tests.backtests.reference``)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest

from backtests.engine.books import portfolio_book
from backtests.engine.portfolio import Intent, Portfolio
from backtests.engine.rules import Account, replay, run_rule
from backtests.engine.tape import Tape
from strategies.market.snapshot import Candle
from tests.backtests import reference
from traders.guards import GuardLimits
from traders.risk import RiskLimits

ROOT = Path(__file__).resolve().parents[2]
START = datetime(2024, 8, 4, 12, tzinfo=UTC)  # on 1h candles until 5 August, 15m after
END = datetime(2024, 8, 7, 12, tzinfo=UTC)
EVERY = timedelta(hours=4)
LONG = Intent(
    "BTCUSDT", "open_long", position_pct=0.2, leverage=3, stop_loss=0.03, take_profit=0.06
)
ACCOUNT = Account(
    balance=Decimal("1000"),
    fee_rate=Decimal("0.0004"),
    slippage_bps=Decimal("0"),
    limits=RiskLimits(),
)


def ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


def always_long_plan(start: datetime, end: datetime, every: timedelta) -> list:
    plan, instant = [], start
    while instant < end:
        plan.append((ms(instant), (LONG,)))
        instant += every
    return plan


def test_always_long_over_3_days_on_1h_then_15m_candles_matches_the_reference():
    # given an open_long on BTC at every 4h step over 3 days, before and after 5 August
    tapes = {"BTCUSDT": Tape.from_dataset("BTCUSDT", START, END)}
    plan = always_long_plan(START, END, EVERY)
    # when the account runs it
    run = run_rule(
        "debate",
        "Debate",
        plan,
        tapes=tapes,
        account=ACCOUNT,
        end_ms=ms(END),
        step_minutes=240,
        horizon_ms=ms(START + EVERY) - ms(START),
    )
    # then every equity point, trade and fee is what the rules give
    expected = reference.always_long(**reference.FAKE_LONG, start=START, end=END, every=EVERY)
    assert list(run.curve) == expected.curve
    assert [
        {
            "entry_ms": t.entry_ms,
            "entry_price": t.entry_price,
            "exit_ms": t.exit_ms,
            "exit_price": t.exit_price,
            "quantity": t.quantity,
            "pnl": t.pnl,
            "reason": t.reason,
        }
        for t in run.trades
    ] == expected.trades
    assert Decimal(str(run.metrics.final_equity)) == expected.curve[-1][1]
    assert Decimal(str(run.metrics.fees)) == expected.fees
    assert Decimal(str(run.metrics.funding)) == expected.funding
    # and the window saw stops in the crash of 5 August, a target, entries on both
    # timeframes, and an end close
    reasons = [t.reason for t in run.trades]
    assert {"stop", "target"} <= set(reasons) and reasons[-1] == "end"
    assert any(t.entry_ms < ms(datetime(2024, 8, 5, tzinfo=UTC)) for t in run.trades)
    assert any(t.entry_ms >= ms(datetime(2024, 8, 5, tzinfo=UTC)) for t in run.trades)
    assert len(run.curve) == 19


def candle(open_time: int, o: float, h: float, low: float, c: float) -> tuple[str, Candle]:
    return "15m", Candle(open_time=open_time, open=o, high=h, low=low, close=c, volume=1.0)


QUARTER = 15 * 60_000


def test_a_candle_crossing_both_the_stop_and_the_target_fills_the_stop():
    # given a long at 100 (stop 97, target 106) and a candle reaching both
    tape = Tape("XUSDT", [candle(0, 100, 101, 99, 100), candle(QUARTER, 100, 107, 96, 100)])
    portfolio = Portfolio(balance=Decimal("1000"), fee_rate=Decimal("0"), tapes={"XUSDT": tape})
    portfolio.execute([replace_symbol(LONG, "XUSDT")], 0)
    # when the account walks the candles
    portfolio.advance(2 * QUARTER)
    # then the stop filled, at its price
    (trade,) = portfolio.trades
    assert (trade.reason, trade.exit_price) == ("stop", Decimal("97.00000000"))


def replace_symbol(intent: Intent, symbol: str) -> Intent:
    return Intent(
        symbol,
        intent.action,
        intent.position_pct,
        intent.leverage,
        intent.stop_loss,
        intent.take_profit,
    )


@pytest.mark.parametrize(
    ("hedging", "positions", "reasons"),
    [
        (False, [("XUSDT", "short")], ["decision"]),
        (True, [("XUSDT", "long"), ("XUSDT", "short")], []),
    ],
    ids=["closes-first", "hedging"],
)
def test_an_opposite_opening_closes_the_open_position_first_unless_hedging(
    hedging, positions, reasons
):
    # given an open long, on an account that hedges or not
    bars = [candle(n * QUARTER, 100, 101, 99, 100) for n in range(3)]
    tape = Tape("XUSDT", bars)
    portfolio = Portfolio(
        balance=Decimal("1000"), fee_rate=Decimal("0"), tapes={"XUSDT": tape}, hedging=hedging
    )
    portfolio.execute([replace_symbol(LONG, "XUSDT")], 0)
    # when a short follows, then a second short
    short = Intent("XUSDT", "open_short", 0.2, 3, 0.03, 0.06)
    portfolio.execute([short], QUARTER)
    portfolio.execute([short], 2 * QUARTER)
    # then the long was closed first (or kept, hedging) and the short opened, and the
    # second short did nothing and said why
    assert sorted(portfolio.positions) == positions
    assert [t.reason for t in portfolio.trades] == reasons
    assert [r.reason for r in portfolio.refusals] == ["nothing to do: a short is already open"]


def test_a_close_decision_closes_at_the_next_open_and_slippage_moves_fills_against_us():
    # given a long opened with 10 basis points of slippage
    tape = Tape("XUSDT", [candle(0, 100, 101, 99, 100), candle(QUARTER, 102, 103, 101, 102)])
    portfolio = Portfolio(
        balance=Decimal("1000"),
        fee_rate=Decimal("0"),
        tapes={"XUSDT": tape},
        slippage_bps=Decimal("10"),
    )
    portfolio.execute([replace_symbol(LONG, "XUSDT")], 0)
    # when a close decision comes at the next candle
    portfolio.advance(QUARTER)
    portfolio.execute([Intent("XUSDT", "close_long")], QUARTER)
    # then the long bought 0.1 % above the open and sold 0.1 % below the next one
    (trade,) = portfolio.trades
    assert (trade.entry_price, trade.exit_price, trade.reason) == (
        Decimal("100.10000000"),
        Decimal("101.89800000"),
        "decision",
    )


DAY = 24 * 3_600_000


def test_a_daily_loss_guard_pauses_openings_until_the_next_utc_day_closes_still_work():
    # given an account with a 5 % daily loss limit, long 3x with 60 % of its equity at 100
    bars = [candle(n * QUARTER, 100, 100, 100, 100) for n in range(2)]
    bars += [candle(n * QUARTER, 96, 96, 96, 96) for n in range(2, 4)]
    bars += [candle(DAY + n * QUARTER, 96, 96, 96, 96) for n in range(2)]
    portfolio = Portfolio(
        balance=Decimal("1000"),
        fee_rate=Decimal("0"),
        tapes={"XUSDT": Tape("XUSDT", bars)},
        guards=GuardLimits(daily_loss_pct=Decimal("5")),
    )
    wide = Intent("XUSDT", "open_long", 0.6, 3, 0.1, 0.5)
    portfolio.execute([wide], 0)
    # when the price falls 4 % (7.2 % of the equity) and the next step opens and closes
    portfolio.advance(3 * QUARTER)
    short = Intent("XUSDT", "open_short", 0.2, 3, 0.1, 0.1)
    portfolio.execute([Intent("XUSDT", "close_long"), short], 3 * QUARTER)
    # then the guard tripped, the long closed, the short opened nothing, and said why
    (trip,) = portfolio.trips
    assert (trip.at_ms, trip.guard) == (3 * QUARTER, "daily_loss")
    assert [t.reason for t in portfolio.trades] == ["decision"]
    assert portfolio.positions == {}
    assert "opens nothing: the trader is paused (daily loss" in portfolio.refusals[-1].reason
    # and on the next UTC day the pause lifted and the short opened
    portfolio.advance(DAY)
    portfolio.execute([short], DAY)
    assert portfolio.paused is None
    assert list(portfolio.positions) == [("XUSDT", "short")]


def test_a_cooldown_trips_after_the_stop_outs_in_a_row_and_lifts_after_its_minutes():
    # given an account cooling down 60 minutes after 2 stop-outs in a row
    bars = [candle(n * QUARTER, 100, 101, 90, 100) for n in range(8)]
    portfolio = Portfolio(
        balance=Decimal("1000"),
        fee_rate=Decimal("0"),
        tapes={"XUSDT": Tape("XUSDT", bars)},
        guards=GuardLimits(stop_outs=2, cooldown_minutes=60),
    )
    long = replace_symbol(LONG, "XUSDT")
    # when two longs are stopped out, one after the other
    for n in (0, 1):
        portfolio.execute([long], n * QUARTER)
        portfolio.advance((n + 1) * QUARTER)
    assert [t.reason for t in portfolio.trades] == ["stop", "stop"]
    portfolio.execute([long], 2 * QUARTER)
    # then the third opened nothing, until the cooldown's 60 minutes passed
    assert [trip.guard for trip in portfolio.trips] == ["cooldown"]
    assert portfolio.positions == {}
    portfolio.advance(6 * QUARTER)
    portfolio.execute([long], 6 * QUARTER)
    assert list(portfolio.positions) == [("XUSDT", "long")]


def test_a_steps_book_is_the_same_whatever_follows_its_instant_and_as_the_rules_find_it():
    # given a long opened at 0 and two tapes that agree until the step at 4 quarters and
    # part after it (one falls through the stop, one rises through the target)
    head = [candle(n * QUARTER, 100, 102, 99, 101) for n in range(4)]
    crash = head + [candle(n * QUARTER, 100, 100, 80, 85) for n in range(4, 8)]
    rally = head + [candle(n * QUARTER, 100, 120, 100, 115) for n in range(4, 8)]
    at = 4 * QUARTER
    plan = [(0, [replace_symbol(LONG, "XUSDT")])]
    account = Account(Decimal("1000"), Decimal("0.0004"), Decimal("0"), RiskLimits())

    def book(bars, known: bool):
        tape = Tape("XUSDT", bars)
        tapes = {"XUSDT": tape.known_at(at) if known else tape}
        return portfolio_book(replay(plan, tapes=tapes, account=account, until_ms=at), at)

    # when the step's book is made from each tape as known at its instant
    seen = book(crash, known=True)
    # then it is the same from both, and the same as on the whole tape
    assert seen == book(rally, known=True) == book(crash, known=False)
    [held] = seen.positions
    assert (held.quantity, held.mark_price, held.peak_pnl) == (6.0, 100.0, 12.0)  # high 102
    assert seen.as_of == "1970-01-01T01:00:00Z"
    # and the tape as known then ends with the open of the bar at the instant, nothing more
    known = Tape("XUSDT", crash).known_at(at).bars
    assert len(known) == 5 and (known[-1].open_ms, known[-1].low) == (at, Decimal("100"))


@pytest.mark.parametrize("rate", ["0.001", "-0.001"])
def test_funding_is_paid_by_a_long_at_each_settlement_it_is_open(rate):
    # given a long over a settlement at 08:00
    eight = 8 * 3_600_000
    bars = [candle(eight - QUARTER, 100, 100, 100, 100), candle(eight, 100, 100, 100, 100)]
    tape = Tape("XUSDT", bars, funding=[(eight, float(rate))])
    portfolio = Portfolio(balance=Decimal("1000"), fee_rate=Decimal("0"), tapes={"XUSDT": tape})
    portfolio.execute([replace_symbol(LONG, "XUSDT")], eight - QUARTER)
    # when the account walks past it
    portfolio.advance(eight + QUARTER)
    # then the long paid quantity x price x rate (received it, for a negative rate)
    quantity = portfolio.positions[("XUSDT", "long")].quantity
    assert portfolio.funding == -(quantity * Decimal("100") * Decimal(rate)).quantize(
        Decimal("0.00000001")
    )


def test_a_position_closed_at_the_window_s_end_pays_no_funding_due_at_that_instant():
    # given a long over a settlement at 04:00 and the window ending at 08:00, on a
    # settlement, with the tape reaching past it (the scoring horizon) to a candle opening
    # far higher
    four, eight = 4 * 3_600_000, 8 * 3_600_000
    bars = [
        candle(four - QUARTER, 100, 100, 100, 100),
        candle(four, 100, 100, 100, 100),
        candle(eight - QUARTER, 100, 100, 100, 100),
        candle(eight, 200, 200, 200, 200),
    ]
    tape = Tape("XUSDT", bars, funding=[(four, 0.001), (eight, 0.001)])
    portfolio = Portfolio(balance=Decimal("1000"), fee_rate=Decimal("0"), tapes={"XUSDT": tape})
    portfolio.execute([replace_symbol(LONG, "XUSDT")], four - QUARTER)
    quantity = portfolio.positions[("XUSDT", "long")].quantity
    # when the window ends at 08:00
    portfolio.finish(eight)
    # then the long closed at the last candle's close and paid the 04:00 settlement only
    paid = -(quantity * Decimal("100") * Decimal("0.001")).quantize(Decimal("0.00000001"))
    (trade,) = portfolio.trades
    assert (trade.exit_ms, trade.exit_price, trade.reason) == (eight, Decimal("100"), "end")
    assert (portfolio.funding, trade.funding) == (paid, paid)
    assert portfolio.wallet == Decimal("1000") + paid


def test_importing_the_engine_loads_no_django_module():
    # given a fresh interpreter
    code = (
        "import sys, backtests.engine.rules, backtests.engine.tape, traders.exchanges.book; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('django', 'rest_framework')))"
    )
    # when the engine is imported
    run = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    # then no Django module came with it
    assert run.stdout.strip() == "[]"
