"""A scripted backtest against the fake model server: its debates are reviewed at once
and its report holds the ledger, with exact flip counts from the candle files."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.db.models import Sum

from backtests.services.reports import backtest_report
from debates.engine.consensus import calibrated_weight
from debates.models import AIModel, Message
from evaluations.models import DecisionReview
from evaluations.selectors import voter_history
from evaluations.services import ReviewSettings, debate_review
from tests.backtests.conftest import wait_until_done
from tests.backtests.test_run import comparable, contract
from tests.evaluations.builders import close_by, completed_debate
from tests.fakes.llm_server import Reply

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

START = datetime(2024, 8, 5, 12, tzinfo=UTC)
SYMBOLS = ("BTCUSDT", "ETHUSDT", "SOLUSDT")


def one_day_backtest(make_backtest):
    """Run a one-day backtest at 4h from START (6 debates of a bull and a bear) to its
    completion and return it."""
    backtest = wait_until_done(
        make_backtest(
            personalities=("bull", "bear"), start=START, end=START + timedelta(days=1)
        ).pk,
        timeout=120,
    )
    assert backtest.status == "completed", backtest.error
    return backtest


def test_openings_short_and_votes_long_give_exact_flips_and_flip_accuracy(
    celery_worker, llm, make_backtest
):
    # given openings that short every coin, rebuttals and votes that go long (70)
    llm.add_rule(Reply.answer(contract("open_short"), match="round 1/2"))
    # when a one-day backtest at 4h runs (6 debates of 2 participants, 3 coins each)
    backtest = one_day_backtest(make_backtest)
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


def test_the_calibrated_rule_reads_only_the_backtests_own_reviews(
    celery_worker, llm, make_backtest, user, strategy
):
    # given a one-day backtest at 4h where P1 (bull) votes long at 70 and P2 (bear) short
    # at 80 on every coin: at equal weights the short wins
    llm.add_rule(Reply.answer(contract("open_short", 80), match="You are P2,"))
    backtest = one_day_backtest(make_backtest)
    calibrated = next(r for r in backtest.report["rules"] if r["key"] == "weighting:calibrated")
    assert "short" in {trade["side"] for trade in calibrated["trades"]}
    # when the same two voters are reviewed afterwards in 32 debates of their own, 15
    # minutes apart, whose outcomes were known before the backtest's first step, the
    # bull right and the bear wrong every time
    voters = [(seat["ai_model"], seat["personality"]) for seat in backtest.participants]
    seats = [(personality, AIModel.objects.get(pk=model)) for model, personality in voters]
    for n in range(32):
        at = START - timedelta(hours=4, minutes=15 * n)
        rose = close_by("BTCUSDT", at + timedelta(hours=4)) > close_by("BTCUSDT", at)
        right, wrong = ("open_long", "open_short") if rose else ("open_short", "open_long")
        debate = completed_debate(
            owner=user,
            strategy=strategy,
            as_of=at,
            seats=seats,
            openings={0: {"BTCUSDT": right}, 1: {"BTCUSDT": wrong}},
            votes={0: {"BTCUSDT": (right, 70)}, 1: {"BTCUSDT": (wrong, 80)}},
            decisions={"BTCUSDT": right},
        )
        assert debate_review(debate_id=debate.pk, settings=ReviewSettings(240, Decimal("0.1")))
    # (read from every debate, those reviews would weigh the bull's long above the bear's
    # short at the first step, which the backtest's own reviews leave short)
    everyone = voter_history(voters, until=START)
    weights = {
        voter: calibrated_weight(sum(right for _, right in judged), len(judged))
        for voter, judged in everyone.items()
    }
    assert 0.70 * weights[voters[0]] > 0.80 * weights[voters[1]]
    # then the report made again is the same: its calibrated rule reads the backtest's own
    # reviews only, whatever else was reviewed before or after it
    again = backtest_report(backtest=backtest, finished_at=backtest.finished_at)
    assert comparable(again) == comparable(backtest.report)
