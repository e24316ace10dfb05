"""A scripted backtest against the fake model server: its debates are reviewed as they
end and its report holds the ledger, with exact flip counts from the candle files; at
``weighting: calibrated`` its debates weigh by its own earlier steps' reviews."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal
from itertools import pairwise

import pytest
from django.db.models import Sum

from backtests.services.reports import backtest_report
from debates.engine.consensus import calibrated_weight
from debates.models import AIModel, Debate, Decision, Message
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


def one_day_backtest(make_backtest, **fields):
    """Run a one-day backtest at 4h from START (6 debates of a bull and a bear) to its
    completion and return it."""
    backtest = wait_until_done(
        make_backtest(
            personalities=("bull", "bear"), start=START, end=START + timedelta(days=1), **fields
        ).pk,
        timeout=120,
    )
    assert backtest.status == "completed", backtest.error
    return backtest


def reviewed_elsewhere(owner, strategy, voters) -> None:
    """Review 32 debates of ``voters`` (a bull's and a bear's model and personality), 15
    minutes apart, whose outcomes were known before START: the bull right and the bear
    wrong every time. Read from every debate, they weigh the bull's long at 70 above the
    bear's short at 80 at START."""
    seats = [(personality, AIModel.objects.get(pk=model)) for model, personality in voters]
    for n in range(32):
        at = START - timedelta(hours=4, minutes=15 * n)
        rose = close_by("BTCUSDT", at + timedelta(hours=4)) > close_by("BTCUSDT", at)
        right, wrong = ("open_long", "open_short") if rose else ("open_short", "open_long")
        debate = completed_debate(
            owner=owner,
            strategy=strategy,
            as_of=at,
            seats=seats,
            openings={0: {"BTCUSDT": right}, 1: {"BTCUSDT": wrong}},
            votes={0: {"BTCUSDT": (right, 70)}, 1: {"BTCUSDT": (wrong, 80)}},
            decisions={"BTCUSDT": right},
        )
        assert debate_review(debate_id=debate.pk, settings=ReviewSettings(240, Decimal("0.1")))
    everyone = voter_history(voters, until=START)
    weights = {
        voter: calibrated_weight(sum(right for _, right in judged), len(judged))
        for voter, judged in everyone.items()
    }
    assert 0.70 * weights[voters[0]] > 0.80 * weights[voters[1]]


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
    # when the same two voters are reviewed afterwards in 32 debates of their own, whose
    # outcomes were known before the backtest's first step (which the backtest's own
    # reviews leave short)
    voters = [(seat["ai_model"], seat["personality"]) for seat in backtest.participants]
    reviewed_elsewhere(user, strategy, voters)
    # then the report made again is the same: its calibrated rule reads the backtest's own
    # reviews only, whatever else was reviewed before or after it
    again = backtest_report(backtest=backtest, finished_at=backtest.finished_at)
    assert comparable(again) == comparable(backtest.report)


def test_a_calibrated_backtest_weighs_by_its_own_earlier_steps_one_step_at_a_time(
    celery_worker, llm, make_backtest, fake_models, user, strategy
):
    # given a bull (P1) long at 70 and a bear (P2) short at 80 on every coin, and 32
    # earlier debates of the same two voters, reviewed, the bull right every time
    llm.add_rule(Reply.answer(contract("open_short", 80), match="You are P2,"))
    models = fake_models(2)
    reviewed_elsewhere(user, strategy, [(models[0].pk, "bull"), (models[1].pk, "bear")])
    # when a one-day backtest at 4h of those two voters weighs its votes by calibration
    # (its horizon, 4 hours: each step's outcome is known by the next step)
    backtest = one_day_backtest(make_backtest, models=models, weighting="calibrated")
    # then its steps' debates ran one after another, each started once the one before
    # it had ended
    debates = list(
        Debate.objects.filter(backtest_step__backtest=backtest).order_by("backtest_step__index")
    )
    assert len(debates) == 6
    for before, after in pairwise(debates):
        assert after.started_at >= before.finished_at
    # and its first step, with no earlier step of its own, weighed both voters alike: short
    first = Decision.objects.get(debate=debates[0], symbol="BTCUSDT")
    assert first.action == "open_short"
    # and every step decided as the report's calibrated rule, which weighs each step's
    # ballots by the backtest's own reviews known by its instant
    rules = {rule["key"]: rule for rule in backtest.report["rules"]}
    assert rules["debate"]["trades"] == rules["weighting:calibrated"]["trades"]
    assert rules["debate"]["equity"] == rules["weighting:calibrated"]["equity"]
    # and so does it when it is run again, whatever the first run reviewed
    again = one_day_backtest(make_backtest, models=models, weighting="calibrated")
    assert comparable(again.report) == comparable(backtest.report)
