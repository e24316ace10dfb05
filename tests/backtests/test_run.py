"""Whole backtests through the real Celery canvas against the fake model server: the
report matches an independent computation from the bundled candles."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.db import transaction

from backtests.models import BacktestStep
from backtests.services import backtest_cancel, runs
from debates.locks import lock_debate
from debates.models import Debate, DebateStart, Decision
from debates.quotas import QuotaExceeded, debate_create_check, debate_start_check
from evaluations.models import DebateReview
from tests.backtests import reference
from tests.backtests.conftest import published, wait_for, wait_until_done
from tests.fakes.llm_server import Reply
from tests.threads import in_thread

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
        **reference.FAKE_LONG, start=START, end=END, every=timedelta(hours=4)
    )
    debate = rule(report, "debate")
    assert [(at, Decimal(str(value))) for at, value in debate["equity"]] == expected.curve
    assert Decimal(str(debate["metrics"]["final_equity"])) == expected.curve[-1][1]
    assert Decimal(str(debate["metrics"]["fees"])) == expected.fees
    assert [(t["reason"], Decimal(str(t["pnl"]))) for t in debate["trades"]] == [
        (t["reason"], t["pnl"]) for t in expected.trades
    ]
    assert {"stop", "target", "end"} <= {t["reason"] for t in debate["trades"]}
    assert {r: n for r, n in debate["closed_by"].items() if n} == dict(
        Counter(t["reason"] for t in expected.trades)
    )
    assert debate["guard_trips"] == []
    # and the report says which candles each stretch used
    assert report["stretches"] == [
        {"timeframe": "1h", "from": "2024-08-04T12:00:00Z", "to": "2024-08-05T00:00:00Z"},
        {"timeframe": "15m", "from": "2024-08-05T00:00:00Z", "to": "2024-08-07T12:00:00Z"},
    ]
    # and every baseline is there, the round-1 majority and each seat agreeing here
    agreeing = (
        "round1_majority",
        "weighting:confidence",
        "weighting:calibrated",
        "seat:P1",
        "seat:P2",
        "seat:P3",
    )
    assert [run["key"] for run in report["rules"]] == ["debate", "buy_and_hold", "flat", *agreeing]
    for key in agreeing:
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


def open_at(candles_start: datetime) -> Decimal:
    """Return BTC's open at ``candles_start`` from the files (the reference's reading)."""
    return next(c.open for c in reference.path("BTCUSDT", candles_start, END))


def test_baselines_the_round1_majority_differs_and_buy_and_hold_is_the_price_ratio(
    celery_worker, llm, make_backtest
):
    # given openings that short every coin, rebuttals and votes that go long
    llm.add_rule(Reply.answer(contract("open_short"), match="round 1/2"))
    start, end = START, START + timedelta(days=1)
    # when a one-day backtest at 4h runs (6 debates of 2 participants)
    backtest = wait_until_done(
        make_backtest(personalities=("bull", "bear"), start=start, end=end).pk, timeout=120
    )
    assert backtest.status == "completed", backtest.error
    report = backtest.report
    # then the debate went long and the round-1 majority short, from the same debates
    assert {t["side"] for t in rule(report, "debate")["trades"]} == {"long"}
    assert {t["side"] for t in rule(report, "round1_majority")["trades"]} == {"short"}
    assert rule(report, "round1_majority")["equity"] != rule(report, "debate")["equity"]
    # and each seat alone voted long, as the debate did
    assert rule(report, "seat:P1")["equity"] == rule(report, "debate")["equity"]
    # and buy-and-hold bought at the first open with the whole balance at 1x, sold at the
    # last close: the price ratio less the two fees
    fee = Decimal("0.0004")
    first = open_at(start)
    last = reference.path("BTCUSDT", start, end)[-1].close
    quantity = (Decimal(1000) / (first * (1 + fee))).quantize(
        Decimal("0.000001"), rounding="ROUND_DOWN"
    )
    final = (
        Decimal(1000)
        - reference.eight(first * quantity * fee)
        + reference.eight((last - first) * quantity)
        - reference.eight(last * quantity * fee)
    )
    hold = rule(report, "buy_and_hold")
    assert Decimal(str(hold["metrics"]["final_equity"])) == final
    assert hold["metrics"]["final_equity"] == pytest.approx(
        float(1000 * last / first * (1 - fee) / (1 + fee)), abs=0.01
    )
    assert [(t["entry_price"], t["exit_price"], t["reason"]) for t in hold["trades"]] == [
        (float(first), float(last), "end")
    ]


def contract(action: str, confidence: int = 70) -> str:
    """Return a contract answer taking ``action`` on each candidate coin."""
    decisions = [
        {
            "symbol": symbol,
            "action": action,
            "confidence": confidence,
            "leverage": 3,
            "position_pct": 0.2,
            "stop_loss": 0.03,
            "take_profit": 0.06,
            "reasoning": f"{action} {symbol}",
        }
        for symbol in ("BTCUSDT", "ETHUSDT", "SOLUSDT")
    ]
    return f"<reasoning>Scripted.</reasoning>\n<decision>{json.dumps(decisions)}</decision>"


def comparable(report: dict) -> list:
    """Return what a report says of every rule: metrics, equity and trades."""
    return [(r["key"], r["metrics"], r["equity"], r["trades"]) for r in report["rules"]]


def test_a_rerun_with_the_cache_makes_no_model_call_and_gives_the_same_report(
    celery_worker, llm, make_backtest, strategy
):
    # given a one-day backtest run with the cache in use (its default)
    window = {"start": START, "end": START + timedelta(days=1), "personalities": ("bull", "bear")}
    first = wait_until_done(make_backtest(**window).pk)
    assert first.status == "completed", first.error
    calls = len(llm.requests)
    assert calls == first.report["usage"]["model_calls"] == 6 * 6
    # when it is run again
    again = wait_until_done(make_backtest(**window).pk)
    # then no model was called and the report is the same
    assert len(llm.requests) == calls
    assert (again.report["usage"]["model_calls"], again.report["usage"]["cached_calls"]) == (
        0,
        calls,
    )
    assert again.report["usage"]["prompt_tokens"] == 0
    assert comparable(again.report) == comparable(first.report)
    # and when one character of the strategy's custom prompt changes, every call is made
    strategy.custom_prompt += "!"
    strategy.save()
    changed = wait_until_done(make_backtest(**window).pk)
    assert len(llm.requests) == 2 * calls
    assert changed.report["usage"]["cached_calls"] == 0


def test_no_debate_starts_after_a_cancel_is_committed(celery_worker, llm, make_backtest):
    # given a 40-step backtest whose models take 0.2 s, with some debates under way
    llm.set_latency(0.2)
    backtest = make_backtest(
        personalities=("bull", "bear"),
        start=START,
        end=START + timedelta(minutes=15 * 40),
        interval_minutes=15,
    )
    wait_for(lambda: BacktestStep.objects.filter(backtest=backtest).count() >= 3, timeout=60)
    # when it is cancelled
    cancelled = backtest_cancel(backtest_id=backtest.pk)
    steps = BacktestStep.objects.filter(backtest=backtest).count()
    time.sleep(3 * settings.BACKTEST_TICK_S + 1)  # the ticks that would have followed
    # then no step was added and no debate started after the cancel, and every debate ended
    backtest.refresh_from_db()
    assert (cancelled.status, backtest.status, backtest.report) == ("cancelled", "cancelled", None)
    assert BacktestStep.objects.filter(backtest=backtest).count() == steps < 40
    debates = Debate.objects.filter(backtest_step__backtest=backtest)
    assert max(d.started_at for d in debates) < backtest.finished_at
    wait_for(lambda: not debates.filter(status__in=("pending", "running", "voting")).exists())
    assert published(backtest.pk)[-1][1]["status"] == "cancelled"


def test_the_steps_are_admitted_by_the_backtest_quota_not_the_debate_quotas(
    celery_worker, llm, make_backtest, settings
):
    # given an owner who may have 1 debate under way and start 2 an hour
    settings.QUOTA_ACTIVE_DEBATES, settings.QUOTA_STARTS_PER_HOUR = 1, 2
    # when their one running backtest has 6 steps
    done = wait_until_done(
        make_backtest(personalities=("bull", "bear"), end=START + timedelta(days=1)).pk
    )
    # then every step's debate ran: the running-backtests quota admitted them
    assert (done.status, done.steps_done, done.error) == ("completed", 6, None)
    # and none of them is counted in the owner's debate quotas: a debate of their own may
    # still be created and started this hour
    assert not Debate.objects.filter(backtest_step__backtest=done, quota_counted=True).exists()
    with transaction.atomic():
        debate_create_check(owner_id=done.owner_id)
        debate_start_check(owner_id=done.owner_id)
    # while the ones they start themselves are counted
    DebateStart.objects.bulk_create([DebateStart(owner=done.owner) for _ in range(2)])
    with pytest.raises(QuotaExceeded), transaction.atomic():
        debate_start_check(owner_id=done.owner_id)


def test_the_next_step_starts_when_a_debate_ends_not_at_the_next_tick(
    celery_worker, llm, make_backtest, settings
):
    # given ticks a minute apart and one debate at a time
    settings.BACKTEST_TICK_S, settings.BACKTEST_DEBATES_IN_FLIGHT = 60, 1
    # when a 4-step backtest runs (its first tick is sent at once)
    began = time.monotonic()
    done = wait_until_done(
        make_backtest(personalities=("bull", "bear"), end=START + timedelta(hours=16)).pk,
        timeout=50,
    )
    # then each step started as the one before it ended: the run took no tick's wait
    assert (done.status, done.steps_done) == ("completed", 4)
    assert time.monotonic() - began < 50
    steps = BacktestStep.objects.filter(backtest=done).order_by("index").select_related("debate")
    for before, after in itertools.pairwise(steps):
        assert after.debate.created_at >= before.debate.finished_at


def test_a_step_whose_debate_row_another_transaction_holds_is_reviewed_all_the_same(
    celery_worker, llm, make_backtest, monkeypatch
):
    # given each step's debate row held by another transaction for a moment when the run
    # reviews it, as a refused request to retry a step of the completed debate holds it
    review = runs.debates_review

    def held_meanwhile(*, debate_ids: list[int], **options) -> list:
        held, release = threading.Event(), threading.Event()

        def hold() -> None:
            with transaction.atomic():
                for debate_id in debate_ids:
                    lock_debate(debate_id=debate_id)
                held.set()
                release.wait(10)

        if debate_ids:
            holder = in_thread(hold)
            assert held.wait(10)
            threading.Timer(0.3, release.set).start()
        made = review(debate_ids=debate_ids, **options)
        if debate_ids:
            holder.join(10)
        return made

    monkeypatch.setattr(runs, "debates_review", held_meanwhile)
    # when a 3-step backtest runs
    backtest = make_backtest(personalities=("bull", "bear"), end=START + timedelta(hours=12))
    done = wait_until_done(backtest.pk)
    # then every step's debate was reviewed, the last one's included, before the report,
    # which counts every decision of every step (3 coins a step)
    assert done.status == "completed", done.error
    assert done.steps_total == 3
    assert DebateReview.objects.filter(debate__backtest_step__backtest=done).count() == 3
    decisions = Decision.objects.filter(debate__backtest_step__backtest=done).count()
    assert done.report["ledger"]["decisions"] == decisions == 9


def test_a_review_that_raises_fails_the_run_and_cancels_its_debates(
    celery_worker, llm, make_backtest, monkeypatch
):
    # given step reviews that raise something unexpected once a debate has ended
    def broken(*, debate_ids: list[int], **_) -> list:
        if debate_ids:
            raise RuntimeError("the review broke")
        return []

    monkeypatch.setattr(runs, "debates_review", broken)
    # when a 12-step backtest runs
    backtest = make_backtest(personalities=("bull", "bear"), end=START + timedelta(days=2))
    done = wait_until_done(backtest.pk)
    # then it failed with the reason, made no report, and left no debate running
    assert (done.status, done.report) == ("failed", None)
    assert done.error == {"code": "review_failed", "message": "RuntimeError: the review broke"}
    assert done.steps_done < done.steps_total == 12
    debates = Debate.objects.filter(backtest_step__backtest=done)
    wait_for(lambda: not debates.filter(status__in=("pending", "running", "voting")).exists())
    assert published(done.pk)[-1][1]["status"] == "failed"
