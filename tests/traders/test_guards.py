"""Portfolio guards: each trips exactly at its threshold and pauses the trader's openings,
while its closes go on; the owner's resume lifts a pause, the daily limit lifts itself at
the next UTC day and the cooldown after its minutes."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from tests.debates.factories import DebateFactory, DecisionFactory
from tests.strategies.factories import StrategyFactory
from tests.traders.factories import PositionFactory
from tests.traders.test_paper import ENTRY_AS_OF, execute
from traders.guards import AccountFacts, GuardLimits, tripped
from traders.models import Position, Trader
from traders.risk import Funds
from traders.services.guards import guards_check, trader_resume

NOON = datetime(2024, 8, 4, 12, tzinfo=UTC)
D = Decimal


def facts(**fields) -> AccountFacts:
    base = {
        "now": NOON,
        "equity": D("1000"),
        "day_start_equity": D("1000"),
        "peak_equity": D("1000"),
        "exposure": D("0"),
        "closes": (),
    }
    return AccountFacts(**{**base, **fields})


@pytest.mark.parametrize(
    ("limits", "at", "under", "guard", "lifts_at"),
    [
        (
            GuardLimits(daily_loss_pct=D("5")),
            {"equity": D("950")},
            {"equity": D("950.01")},
            "daily_loss",
            datetime(2024, 8, 5, tzinfo=UTC),
        ),
        (
            GuardLimits(max_drawdown_pct=D("10")),
            {"equity": D("1080"), "peak_equity": D("1200")},
            {"equity": D("1080.01"), "peak_equity": D("1200")},
            "drawdown",
            None,
        ),
        (
            GuardLimits(stop_outs=3, cooldown_minutes=90),
            {"closes": ("stop_loss", "stop_loss", "stop_loss", "take_profit")},
            {"closes": ("stop_loss", "stop_loss", "take_profit", "stop_loss")},
            "cooldown",
            NOON + timedelta(minutes=90),
        ),
        (
            GuardLimits(max_exposure=D("2")),
            {"exposure": D("2000")},
            {"exposure": D("1999.99")},
            "exposure",
            None,
        ),
    ],
    ids=["daily-loss", "drawdown", "cooldown", "exposure"],
)
def test_a_guard_trips_exactly_at_its_threshold_and_not_just_under(
    limits, at, under, guard, lifts_at
):
    trip = tripped(limits, facts(**at))
    assert (trip.guard, trip.lifts_at) == (guard, lifts_at)
    assert tripped(limits, facts(**under)) is None


def test_a_guard_left_unset_never_trips():
    assert tripped(GuardLimits(), facts(equity=D("1"), exposure=D("100000"))) is None


def test_the_daily_limit_says_by_how_much_and_against_what():
    trip = tripped(GuardLimits(daily_loss_pct=D("5")), facts(equity=D("940")))
    assert trip.reason == (
        "daily loss limit: equity 940.00 is 6.00% below the day's start 1000.00 (limit 5%)"
    )


# -- on a paper trader ------------------------------------------------------------------


@pytest.mark.django_db
def test_a_tripped_guard_blocks_the_next_opening_while_a_close_goes_through(user, paper_trader):
    # given a strategy with a 1 % daily loss limit, its paper trader holding a BTC long
    strategy = StrategyFactory(owner=user, daily_loss_limit_pct=D("1"))

    def decision(as_of: str, action: str, symbol: str = "BTCUSDT"):
        debate = DebateFactory(
            owner=user, strategy=strategy, status="completed", market_snapshot={"as_of": as_of}
        )
        return DecisionFactory(debate=debate, action=action, symbol=symbol)

    execute(user, paper_trader, decision(ENTRY_AS_OF, "open_long"))
    # when its account is measured at the day's start, then after losing 1 % of it
    start = datetime(2024, 8, 4, 20, tzinfo=UTC)
    trader = guards_check(
        trader_id=paper_trader.pk,
        funds=Funds(available=None, equity=D("1000"), wallet=None),
        exposure=D("0"),
        now=start,
        strategy=strategy,
    )
    assert trader.paused_guard == ""
    trader = guards_check(
        trader_id=paper_trader.pk,
        funds=Funds(available=None, equity=D("990"), wallet=None),
        exposure=D("0"),
        now=start + timedelta(minutes=30),
        strategy=strategy,
    )
    # then the trader is paused, with why, since when and until the next UTC day
    assert trader.paused_guard == "daily_loss"
    assert trader.paused_reason.startswith("daily loss limit: equity 990.00 is 1.00% below")
    assert trader.paused_until == datetime(2024, 8, 5, tzinfo=UTC)
    # and an ETH opening does nothing, and says why
    opening = execute(user, paper_trader, decision("2024-08-04T21:00Z", "open_long", "ETHUSDT"))
    assert (opening.status, opening.note) == (
        "skipped",
        f"nothing to do: opens nothing: the trader is paused ({trader.paused_reason})",
    )
    # while closing the BTC long goes through
    closing = execute(user, paper_trader, decision("2024-08-04T21:00Z", "close_long"))
    assert closing.status == "filled"
    assert list(Position.objects.values_list("symbol", "status")) == [("BTCUSDT", "closed")]


def measure(trader: Trader, equity: str, now: datetime, strategy) -> Trader:
    return guards_check(
        trader_id=trader.pk,
        funds=Funds(available=None, equity=D(equity), wallet=None),
        exposure=D("0"),
        now=now,
        strategy=strategy,
    )


@pytest.mark.django_db
def test_the_daily_limit_lifts_itself_at_the_next_utc_day(user, paper_trader):
    strategy = StrategyFactory(owner=user, daily_loss_limit_pct=D("5"))
    measure(paper_trader, "1000", NOON, strategy)
    assert measure(paper_trader, "950", NOON + timedelta(hours=1), strategy).paused_guard
    # still paused just before midnight, lifted after it (a new day starts at 950)
    assert measure(paper_trader, "950", datetime(2024, 8, 4, 23, 59, tzinfo=UTC), strategy)
    lifted = measure(paper_trader, "950", datetime(2024, 8, 5, 0, 1, tzinfo=UTC), strategy)
    assert (lifted.paused_guard, lifted.day_start_equity) == ("", D("950"))


@pytest.mark.django_db
def test_the_owners_resume_lifts_a_drawdown_pause_and_measures_afresh(user, paper_trader):
    # given a trader paused at a 10 % drawdown from its peak of 1,200
    strategy = StrategyFactory(owner=user, max_drawdown_pct=D("10"))
    measure(paper_trader, "1200", NOON, strategy)
    assert measure(paper_trader, "1080", NOON + timedelta(hours=1), strategy).paused_guard
    # when a day later the account is measured again, it is still paused
    assert measure(paper_trader, "1100", NOON + timedelta(days=1), strategy).paused_guard
    # and when its owner resumes it, it opens again, its peak measured from then on
    resumed = trader_resume(trader_id=paper_trader.pk, owner=user, now=NOON + timedelta(days=1))
    assert (resumed.paused_guard, resumed.paused_reason, resumed.peak_equity) == ("", "", None)
    after = measure(paper_trader, "1080", NOON + timedelta(days=1, hours=1), strategy)
    assert (after.paused_guard, after.peak_equity) == ("", D("1080"))


@pytest.mark.django_db
def test_stop_outs_in_a_row_pause_for_the_cooldown_then_count_afresh(user, paper_trader):
    # given a strategy pausing 60 minutes after 2 stop-outs in a row, and two stop-outs
    strategy = StrategyFactory(owner=user, stop_out_cooldown=2, cooldown_minutes=60)
    for hour in (1, 2):
        PositionFactory(
            trader=paper_trader,
            status="closed",
            close_reason="stop_loss",
            closed_at=NOON - timedelta(hours=hour),
        )
    # when the account is measured, it is paused for 60 minutes
    paused = measure(paper_trader, "1000", NOON, strategy)
    assert (paused.paused_guard, paused.paused_until) == ("cooldown", NOON + timedelta(hours=1))
    # and after them the pause lifts, and the two stop-outs are not counted again
    lifted = measure(paper_trader, "1000", NOON + timedelta(minutes=61), strategy)
    assert (lifted.paused_guard, lifted.guards_since) == ("", NOON + timedelta(minutes=61))
    assert measure(paper_trader, "1000", NOON + timedelta(hours=2), strategy).paused_guard == ""
