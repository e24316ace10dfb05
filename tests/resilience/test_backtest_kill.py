"""A worker killed with SIGKILL in the middle of a backtest: once a worker runs again, the
run completes with each step's debate exactly once and the same report as a run that was
never interrupted.

The workers' step claims, model slots and execution leases outlive them by 6 s (as in
``test_kill``), so the new worker resumes the debates sooner; the backtest's own tick
chain is given back by the watchdog each worker runs as it starts.
"""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, timedelta

import pytest

from backtests.models import BacktestStep
from debates.models import Debate, Message
from tests.backtests.conftest import fake_models, make_backtest, strategy, wait_until_done  # noqa: F401
from tests.debates.conftest import wait_for, worker_processes

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHORT_LEASES = {"STEP_CLAIM_TTL_S": "6", "EXECUTION_LEASE_S": "6"}
WINDOW = {
    "personalities": ("bull", "bear"),
    "start": datetime(2024, 8, 5, tzinfo=UTC),
    "end": datetime(2024, 8, 5, tzinfo=UTC) + timedelta(hours=10),
    "interval_minutes": 60,
    "cache": "off",
}


def comparable(report: dict) -> list:
    return [(r["key"], r["metrics"], r["equity"], r["trades"]) for r in report["rules"]]


def test_a_backtest_survives_a_worker_killed_mid_run(llm, make_backtest):  # noqa: F811
    # given the report of a 10-step backtest run without interruption
    llm.set_latency(0.2)
    with worker_processes(**SHORT_LEASES) as workers:
        workers.start("calm")
        uninterrupted = wait_until_done(make_backtest(**WINDOW).pk, timeout=120)
    assert uninterrupted.status == "completed", uninterrupted.error

    # when the same backtest runs on a worker killed with SIGKILL once some steps ended
    # and a model call is in flight, and a new worker starts
    with worker_processes(**SHORT_LEASES) as workers:
        workers.start("first")
        backtest = make_backtest(**WINDOW)
        wait_for(
            lambda: (
                BacktestStep.objects.filter(backtest=backtest, debate__status="completed").count()
                >= 2
                and llm.stats()["in_flight"] >= 1
            ),
            timeout=60,
            every=0.01,
        )
        workers.kill("first")
        workers.start("second")
        finished = wait_until_done(backtest.pk, timeout=180)

    # then it completed, each step debated exactly once, each turn stored once
    assert finished.status == "completed", finished.error
    steps = list(BacktestStep.objects.filter(backtest=backtest).order_by("index"))
    assert [s.index for s in steps] == list(range(10))
    debates = Debate.objects.filter(backtest_step__backtest=backtest)
    assert debates.count() == 10 and {d.status for d in debates} == {"completed"}
    turns = Counter(
        Message.objects.filter(debate__in=debates).values_list("debate", "round", "participant")
    )
    assert len(turns) == 10 * 4 and set(turns.values()) == {1}
    # and its report is the uninterrupted run's
    assert comparable(finished.report) == comparable(uninterrupted.report)
