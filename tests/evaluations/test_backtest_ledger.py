"""A scripted backtest against the fake model server: its debates are reviewed at once
and its report holds the ledger, with exact flip counts from the candle files."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db.models import Sum

from debates.models import Message
from evaluations.models import DecisionReview
from tests.backtests.conftest import wait_until_done
from tests.backtests.test_run import contract
from tests.evaluations.builders import close_by
from tests.fakes.llm_server import Reply

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

START = datetime(2024, 8, 5, 12, tzinfo=UTC)
SYMBOLS = ("BTCUSDT", "ETHUSDT", "SOLUSDT")


def test_openings_short_and_votes_long_give_exact_flips_and_flip_accuracy(
    celery_worker, llm, make_backtest
):
    # given openings that short every coin, rebuttals and votes that go long (70)
    llm.add_rule(Reply.answer(contract("open_short"), match="round 1/2"))
    # when a one-day backtest at 4h runs (6 debates of 2 participants, 3 coins each)
    backtest = wait_until_done(
        make_backtest(
            personalities=("bull", "bear"), start=START, end=START + timedelta(days=1)
        ).pk,
        timeout=120,
    )
    assert backtest.status == "completed", backtest.error
    # then every decision was reviewed over the 4-hour horizon, each one a flip
    instants = [START + timedelta(hours=4 * n) for n in range(6)]
    moves = {
        (at, s): close_by(s, at + timedelta(hours=4)) / close_by(s, at) - 1
        for at in instants
        for s in SYMBOLS
    }
    up = sum(m * 100 >= 0.1 for m in moves.values())
    down = sum(m * 100 <= -0.1 for m in moves.values())
    assert DecisionReview.objects.count() == 18
    ledger = backtest.report["ledger"]
    assert (ledger["decisions"], ledger["flips"], ledger["flip_rate"]) == (18, 18, 1.0)
    # and a flip to long is right exactly where the price rose by the threshold
    assert (ledger["flips_right"], ledger["flips_wrong"]) == (up, down)
    assert ledger["useful_flips"] == up and ledger["harmful_flips"] == down
    assert ledger["flip_accuracy"] == round(up / (up + down), 6)
    assert ledger["final_accuracy"] == round(up / (up + down), 6)
    assert ledger["round1_accuracy"] == round(down / (up + down), 6)
    # and the rebuttals' tokens are spent per useful flip
    spent = Message.objects.filter(round=2).aggregate(
        p=Sum("prompt_tokens"), c=Sum("completion_tokens")
    )
    assert ledger["round_tokens"] == spent["p"] + spent["c"] > 0
    assert ledger["tokens_per_useful_flip"] == round((spent["p"] + spent["c"]) / up, 2)
    # and each voter alone was as accurate as the final consensus
    assert [p["accuracy"] for p in ledger["participants"].values()] == [
        ledger["final_accuracy"]
    ] * 2
    # and both weightings are reported side by side over the same ballots: by confidence
    # the ballots decide as the debates did
    rules = {rule["key"]: rule for rule in backtest.report["rules"]}
    assert rules["weighting:confidence"]["equity"] == rules["debate"]["equity"]
    assert "weighting:calibrated" in rules
    # and each voter's calibration: its hit rate beside the base rate of the same samples
    voters = backtest.report["calibration"]
    assert [(v["personality"], v["samples"], v["right"]) for v in voters] == sorted(
        [("bear", up + down, up), ("bull", up + down, up)],
        key=lambda v: [c["personality"] for c in voters].index(v[0]),
    )
    assert {v["base_rate"] for v in voters} == {round(max(up, down) / (up + down), 6)}
    assert {v["brier"] for v in voters} == {
        round((up * (0.7 - 1) ** 2 + down * 0.7**2) / (up + down), 6)
    }
