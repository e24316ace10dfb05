"""Whole backtests through the real Celery canvas against the fake model server: the
report matches an independent computation from the bundled candles."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from backtests.models import BacktestStep
from debates.models import Debate
from tests.backtests import reference
from tests.backtests.conftest import published, wait_until_done

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

START = datetime(2024, 8, 4, 12, tzinfo=UTC)  # 1h candles until 5 August, 15m after
END = datetime(2024, 8, 7, 12, tzinfo=UTC)


def rule(report: dict, key: str) -> dict:
    return next(run for run in report["rules"] if run["key"] == key)


def test_always_open_long_over_three_days_gives_the_reference_equity(
    celery_worker, llm, make_backtest
):
    # given models that always answer open_long on every coin (70, 3x, 20 %, SL 3 %, TP 6 %)
    # when a 3-day backtest at 4h runs: 18 debates of 3 participants and 2 rounds
    backtest = wait_until_done(make_backtest().pk, timeout=240)
    # then it completed, each step debated once, with every call made
    assert backtest.status == "completed", backtest.error
    assert (backtest.steps_done, backtest.steps_total) == (18, 18)
    steps = list(BacktestStep.objects.filter(backtest=backtest).order_by("index"))
    assert [s.as_of for s in steps] == [START + timedelta(hours=4 * n) for n in range(18)]
    assert {d.status for d in Debate.objects.filter(backtest_step__backtest=backtest)} == {
        "completed"
    }
    report = backtest.report
    assert report["usage"]["model_calls"] == len(llm.requests) == 18 * 9
    # and the debate's equity is exactly the independent computation's
    expected = reference.always_long(
        symbol="BTCUSDT",
        start=START,
        end=END,
        every=timedelta(hours=4),
        position_pct=Decimal("0.2"),
        leverage=3,
        stop_loss=Decimal("0.03"),
        take_profit=Decimal("0.06"),
    )
    debate = rule(report, "debate")
    assert [(at, Decimal(str(value))) for at, value in debate["equity"]] == expected.curve
    assert Decimal(str(debate["metrics"]["final_equity"])) == expected.curve[-1][1]
    assert Decimal(str(debate["metrics"]["fees"])) == expected.fees
    assert [(t["reason"], Decimal(str(t["pnl"]))) for t in debate["trades"]] == [
        (t["reason"], t["pnl"]) for t in expected.trades
    ]
    assert {"stop", "target", "end"} <= {t["reason"] for t in debate["trades"]}
    # and the report says which candles each stretch used
    assert report["stretches"] == [
        {"timeframe": "1h", "from": "2024-08-04T12:00:00Z", "to": "2024-08-05T00:00:00Z"},
        {"timeframe": "15m", "from": "2024-08-05T00:00:00Z", "to": "2024-08-07T12:00:00Z"},
    ]
    # and every baseline is there, the round-1 majority and each seat agreeing here
    assert [run["key"] for run in report["rules"]] == [
        "debate",
        "buy_and_hold",
        "flat",
        "round1_majority",
        "seat:P1",
        "seat:P2",
        "seat:P3",
    ]
    for key in ("round1_majority", "seat:P1", "seat:P2", "seat:P3"):
        assert rule(report, key)["equity"] == debate["equity"]
    assert rule(report, "flat")["metrics"]["final_equity"] == 1000.0
    # and the stream told the progress after each debate, then the report
    events = published(backtest.pk)
    progress = [data for kind, data in events if kind == "progress"]
    assert progress[-1] == {"done": 18, "total": 18}
    assert [d["done"] for d in progress] == sorted(d["done"] for d in progress)
    kinds = [kind for kind, _ in events]
    assert kinds[-2:] == ["report", "status"]
    assert events[-1][1] == {"status": "completed", "available_actions": ["delete"]}
