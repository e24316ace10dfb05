"""A backtest of simulated models: their debates give way to the others now and then, so
the debate and the round-1 majority decide apart, and the report's rows say so."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.backtests.conftest import wait_until_done
from tests.backtests.test_run import rule
from tests.debates.conftest import number_debates_from
from tests.debates.factories import AIModelFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

START = datetime(2024, 8, 5, 12, tzinfo=UTC)


def test_the_debate_and_the_round1_majority_of_simulated_models_decide_apart(
    celery_worker, user, make_backtest
):
    # given three simulated seats, their debates numbered from a fixed id (the simulated
    # model seeds its draws by the debate's id)
    model = AIModelFactory(owner=user)
    number_debates_from(5000)
    # when a one-day backtest at 4h runs (6 debates of 3 seats over 2 rounds)
    backtest = make_backtest(models=[model] * 3, start=START, end=START + timedelta(days=1))
    backtest = wait_until_done(backtest.pk)
    # then 5 of its 18 decisions flipped from the round-1 majority
    assert backtest.status == "completed", backtest.error
    report = backtest.report
    assert (report["ledger"]["decisions"], report["ledger"]["flips"]) == (18, 5)
    # and the debate's row and the round-1 majority's differ, the votes by confidence
    # being the debate's own rule
    debate, round1 = rule(report, "debate"), rule(report, "round1_majority")
    assert debate["trades"] != round1["trades"]
    assert debate["metrics"] != round1["metrics"]
    assert rule(report, "weighting:confidence")["metrics"] == debate["metrics"]
