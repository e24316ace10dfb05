"""L0 in backtests: at ``level: auto`` a quiet step (the primary coin moved less than the
strategy's ``quiet_atr_fraction`` of its 1h ATR14 since the last debated step) starts no
debate, makes no model call and decides nothing new; a forced level skips nothing.

The quiet steps are computed here from the bundled candles (``reference.quiet_steps``),
not by the project's rule.
"""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.test import Client

from backtests.models import BacktestStep
from debates.models import Debate
from strategies.market import dataset
from tests.backtests import reference
from tests.backtests.conftest import wait_until_done
from tests.fakes.llm_server import Reply

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

START = datetime(2024, 8, 13, tzinfo=UTC)
HOURS = 10
INSTANTS = [START + timedelta(hours=n) for n in range(HOURS)]
END = START + timedelta(hours=HOURS)
# Tight stops and targets: positions close within the window, so whether a step may
# open again matters to the equity.
EXIT = Decimal("0.005")


def long_everywhere() -> str:
    """Return a contract answer going long on every coin, all seats agreeing (the gate
    stops at L1: three calls per debated step)."""
    decisions = [
        {
            "symbol": symbol,
            "action": "open_long",
            "confidence": 70,
            "leverage": 3,
            "position_pct": 0.2,
            "stop_loss": float(EXIT),
            "take_profit": float(EXIT),
            "reasoning": f"long {symbol}",
        }
        for symbol in ("BTCUSDT", "ETHUSDT", "SOLUSDT")
    ]
    return f"<reasoning>Scripted.</reasoning>\n<decision>{json.dumps(decisions)}</decision>"


@pytest.fixture
def quiet_strategy(strategy):
    strategy.quiet_atr_fraction = 0.5
    strategy.save(update_fields=["quiet_atr_fraction"])
    return strategy


def run(make_backtest, level: str, **fields):
    backtest = make_backtest(
        start=START, end=END, interval_minutes=60, level=level, max_rounds=2, **fields
    )
    return wait_until_done(backtest.pk, timeout=180)


def skips(backtest) -> list[bool]:
    return [
        step.skipped == "quiet_market"
        for step in BacktestStep.objects.filter(backtest=backtest).order_by("index")
    ]


def long_reference(decided: list[datetime] | None) -> reference.Reference:
    return reference.always_long(
        **{**reference.FAKE_LONG, "stop_loss": EXIT, "take_profit": EXIT},
        start=START,
        end=END,
        every=timedelta(hours=1),
        decided=None if decided is None else {reference.ms(at) for at in decided},
    )


def test_a_backtest_at_auto_skips_exactly_the_quiet_steps_and_holds_through_them(
    celery_worker, llm, make_backtest, quiet_strategy, staff_user
):
    # given the steps the rule names quiet, computed from the candles
    expected = reference.quiet_steps("BTCUSDT", INSTANTS, 0.5)
    debated = [at for at, quiet in zip(INSTANTS, expected, strict=True) if not quiet]
    assert 2 <= len(debated) <= HOURS - 2
    llm.add_rule(Reply.answer(long_everywhere(), match="BTCUSDT"))
    # when a 10-hour backtest at 1h runs at level auto
    backtest = run(make_backtest, "auto")
    assert backtest.status == "completed", backtest.error
    # then exactly those steps were skipped, each with its reason and no debate
    assert skips(backtest) == expected
    steps = list(BacktestStep.objects.filter(backtest=backtest).order_by("index"))
    for step in steps:
        assert (step.debate_id is None) is (step.skipped == "quiet_market")
        assert step.level == ("L0" if step.skipped else "L1")
    skipped = [step for step in steps if step.skipped]
    assert all(s.skip_reason.startswith("L0: BTCUSDT moved ") for s in skipped)
    assert all("of its 1h ATR14" in s.skip_reason for s in skipped)
    # and no call reached the fake server for a skipped step: three openings per debated one
    debates = Debate.objects.filter(backtest_step__backtest=backtest)
    assert sorted(d.as_of for d in debates) == debated
    assert len(llm.requests) == 3 * len(debated) == backtest.report["usage"]["attempts"]
    # and progress counted every step, and the report says how many were skipped and why
    assert (backtest.steps_done, backtest.steps_total) == (HOURS, HOURS)
    report = backtest.report
    assert report["unfinished_steps"] == []
    assert report["levels"] == {"L0": len(skipped), "L1": len(debated)}
    assert report["skipped"]["count"] == len(skipped)
    assert report["skipped"]["by_reason"] == {"quiet_market": len(skipped)}
    assert [s["index"] for s in report["skipped"]["steps"]] == [s.index for s in skipped]
    assert [s["reason"] for s in report["skipped"]["steps"]] == [s.skip_reason for s in skipped]
    # and the simulation decided nothing new at a skipped step: an open position stayed
    # open, its stop and target checked on every candle; no new opening there
    debate = next(r for r in report["rules"] if r["key"] == "debate")
    held = long_reference(debated)
    assert [(at, Decimal(str(value))) for at, value in debate["equity"]] == held.curve
    assert [(t["reason"], Decimal(str(t["pnl"]))) for t in debate["trades"]] == [
        (t["reason"], t["pnl"]) for t in held.trades
    ]
    assert held.curve != long_reference(None).curve  # deciding at every step differs
    skipped_ms = [reference.ms(s.as_of) for s in skipped]
    entered = {(t["entry_at"], t["exit_at"]) for t in debate["trades"]}
    assert any(
        reference.ms(datetime.fromisoformat(entry)) < at < reference.ms(datetime.fromisoformat(out))
        for entry, out in entered
        for at in skipped_ms
    ), "a position was held through a skipped step"
    # and the admin shows each step's level and reason
    client = Client()
    client.force_login(staff_user)
    page = client.get(f"/admin/backtests/backtest/{backtest.pk}/change/").content.decode()
    assert page.count("L0: BTCUSDT moved ") == len(skipped)


@pytest.mark.parametrize(("level", "calls"), [("L2", 9), ("L1", 3)])
def test_a_forced_level_skips_nothing(
    celery_worker, llm, make_backtest, quiet_strategy, level, calls
):
    # given a window whose quiet steps the auto level would skip
    assert any(reference.quiet_steps("BTCUSDT", INSTANTS, 0.5))
    llm.add_rule(Reply.answer(long_everywhere(), match="BTCUSDT"))
    # when it runs at a forced level
    backtest = run(make_backtest, level)
    # then every step was debated, with every call
    assert backtest.status == "completed", backtest.error
    assert skips(backtest) == [False] * HOURS
    assert backtest.report["skipped"]["count"] == 0
    assert backtest.report["levels"] == {level: HOURS}
    assert len(llm.requests) == calls * HOURS


def changed(moments: set[int] | None = None, after: int | None = None, factor: float = 2.0):
    """Return a reader of the dataset's series with BTC's 15m and 1h candles opening at
    ``moments``, or at or after ``after``, their prices times ``factor``."""
    series = dataset._series

    def touched(opens: int) -> bool:
        return (moments is not None and opens in moments) or (after is not None and opens >= after)

    def new_series(symbol: str, timeframe: str):
        found = series(symbol, timeframe)
        if symbol != "BTCUSDT" or timeframe not in ("15m", "1h"):
            return found
        candles = tuple(
            replace(
                c,
                open=c.open * factor,
                high=c.high * factor,
                low=c.low * factor,
                close=c.close * factor,
            )
            if touched(c.open_time)
            else c
            for c in found.candles
        )
        return dataset._Series(found.open_times, candles)

    return new_series


def test_a_step_s_skip_depends_on_no_candle_after_it(
    celery_worker, llm, make_backtest, quiet_strategy, monkeypatch
):
    # given a quiet step T of the window, and every 15m and 1h candle opening at or
    # after T changed: prices doubled
    expected = reference.quiet_steps("BTCUSDT", INSTANTS, 0.5)
    at = next(n for n, quiet in enumerate(expected) if quiet and n < HOURS - 1)
    monkeypatch.setattr(dataset, "_series", changed(after=reference.ms(INSTANTS[at])))
    llm.add_rule(Reply.answer(long_everywhere(), match="BTCUSDT"))
    # when the backtest at auto runs on the changed data
    backtest = run(make_backtest, "auto")
    assert backtest.status == "completed", backtest.error
    found = skips(backtest)
    # then every step up to T is skipped or debated as on the true data; the step after
    # T, whose price doubled, is debated
    assert found[: at + 1] == expected[: at + 1]
    assert found[at + 1] is False


def test_the_no_look_ahead_check_can_fail_changing_a_candle_closed_by_the_step(
    celery_worker, llm, make_backtest, quiet_strategy, monkeypatch
):
    # given a quiet step T, and the 15m candle that closed at T (its price) doubled
    expected = reference.quiet_steps("BTCUSDT", INSTANTS, 0.5)
    at = next(n for n, quiet in enumerate(expected) if quiet)
    closed = reference.ms(INSTANTS[at] - timedelta(minutes=15))
    monkeypatch.setattr(dataset, "_series", changed(moments={closed}))
    llm.add_rule(Reply.answer(long_everywhere(), match="BTCUSDT"))
    # when the backtest at auto runs / then step T is debated
    backtest = run(make_backtest, "auto")
    assert backtest.status == "completed", backtest.error
    assert skips(backtest)[: at + 1] == [*expected[:at], False]
