"""The budget-matched baseline: one model asked the round-1 prompt again and again until
its tokens match the debate's at each step, its answers through the consensus rule and
the simulated account, beside the debate; scripted so that the two decide differently,
each figure equal to its computation from the stated rules."""

from __future__ import annotations

import random
from datetime import timedelta
from decimal import Decimal

import pytest
import redis
from django.conf import settings

from arena.celery import app
from backtests.engine.baseline import MAX_ANSWERS, MAX_FAILURES, stop_note, wants_another
from backtests.models import BacktestStep, BaselineAnswer
from backtests.services import baseline
from backtests.tasks import baseline_answer_task
from debates.models import Debate, DroppedCall
from debates.selectors import debate_spend
from evaluations import scoring
from evaluations.models import DecisionReview
from tests.backtests import reference
from tests.backtests.test_run import rule
from tests.backtests.test_spend import END, START, cost, expected_spend, script
from tests.debates.factories import MessageFactory

# Each kind of call's scripted (prompt, completion) tokens: a debate step spends
# 2 x (800 + 1000 + 1200) = 6,000 tokens; a baseline answer 1,300.
OPENING, REBUTTAL, VOTE, ANSWER = (700, 100), (900, 100), (1100, 100), (1000, 300)
TARGET = 2 * (sum(OPENING) + sum(REBUTTAL) + sum(VOTE))
# A baseline answer: a round-1 prompt that shows the trader's book (the votes' section).
BASELINE_PROMPT = ["Your turn in round 1/2", "## Your trader's account"]


def asked(target: int, sizes: list[int]) -> list[int]:
    """Return the answers the baseline asks towards ``target``, answering ``sizes`` in turn."""
    answered: list[int] = []
    while wants_another(target, answered, 0):
        answered.append(sizes[len(answered) % len(sizes)])
    return answered


def test_the_answers_tokens_end_within_one_answer_of_the_target():
    # given answers of every size from 50 to 5,000 tokens, towards targets of every size
    draw = random.Random(50)
    for _ in range(2000):
        target = draw.randint(1, 60_000)
        sizes = [draw.randint(50, 5000) for _ in range(draw.randint(1, 8))]
        # when the baseline asks its answers
        answered = asked(target, sizes)
        # then they end within one answer's tokens of the target (short of it by at most
        # half a mean answer), unless the answers ran out first
        if len(answered) < MAX_ANSWERS:
            assert abs(sum(answered) - target) <= max(answered), (target, answered)
            assert target - sum(answered) <= sum(answered) / len(answered) / 2


def test_the_match_stops_short_and_says_why_after_failures_or_too_many_answers():
    # given a model that fails, and one whose answers are tiny
    # when / then: the baseline stops, and says why
    assert not wants_another(6000, [1300], MAX_FAILURES)
    assert stop_note(6000, [1300], MAX_FAILURES) == "3 calls failed; 1300 of 6000 tokens answered"
    tiny = asked(10**6, [10])
    assert len(tiny) == MAX_ANSWERS
    assert stop_note(10**6, tiny, 0) == f"{MAX_ANSWERS} calls asked; 640 of 1000000 tokens answered"
    # and one that matched says nothing
    assert stop_note(6000, asked(6000, [1300]), 0) == ""
    assert asked(6000, [1300]) == [1300] * 5
    assert asked(0, [1300]) == []


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_baseline_decides_apart_from_the_debate_with_the_debates_tokens(
    celery_worker, llm, make_backtest, priced
):
    # given a debate that goes short from its openings to its votes, and P1's model
    # answering long as the baseline, each kind of call using scripted tokens
    script(llm, {tuple(BASELINE_PROMPT): (ANSWER, "open_long")})
    script(
        llm,
        {
            "Your turn in round 1/2": (OPENING, "open_short"),
            "Your turn in round 2/2": (REBUTTAL, "open_short"),
            "Cast your vote": (VOTE, "open_short"),
        },
    )
    window = {"personalities": ("bull", "bear"), "start": START, "end": END, "baseline": "P1"}
    # when a one-day backtest at 4h runs with the baseline (6 steps)
    first = wait_done(make_backtest(**window))
    report = first.report
    # then at every step P1's model answered 5 times: 6,500 tokens against the debate's
    # 6,000, within one answer's 1,300
    match = report["budget_match"]
    assert [
        (s["seat"], s["answers"], s["failed"], s["target"], s["tokens"], s["note"])
        for s in match["steps"]
    ] == [("P1", 5, 0, TARGET, 5 * sum(ANSWER), "")] * 6
    assert (match["target"], match["tokens"], match["within_one_answer"]) == (
        6 * TARGET,
        6 * 5 * sum(ANSWER),
        True,
    )
    openings = [r.prompt for r in llm.requests if "round 1/2" in r.prompt]
    assert sum(BASELINE_PROMPT[1] in prompt for prompt in openings) == 30
    # and the baseline went long, its account exactly the independent computation's,
    # while the debate went short
    baseline = rule(report, "budget_matched")
    assert baseline["label"] == "Budget-matched: P1 bull"
    expected = reference.always_long(
        **reference.FAKE_LONG, start=START, end=END, every=timedelta(hours=4)
    )
    assert [(at, Decimal(str(value))) for at, value in baseline["equity"]] == expected.curve
    assert {t["side"] for t in baseline["trades"]} == {"long"}
    assert {t["side"] for t in rule(report, "debate")["trades"]} == {"short"}
    # and it spent its answers: tokens and USD per unit of edge as the rules say
    hold = rule(report, "buy_and_hold")["metrics"]["total_return"]
    assert baseline["spend"] == expected_spend(
        6 * 5 * sum(ANSWER), 6 * 5 * cost(ANSWER), baseline["metrics"], hold
    )
    # and the backtest's usage counts its calls, the step's debate only its own
    assert report["usage"]["model_calls"] == len(llm.requests) == 6 * 6 + 6 * 5
    debate = Debate.objects.filter(backtest_step__backtest=first).first()
    assert debate_spend(debate_id=debate.pk).calls == 6
    # and each reviewed decision has the baseline's beside it, judged on the same move
    reviews = DecisionReview.objects.filter(review__debate__backtest_step__backtest=first)
    assert reviews.count() == 6 * 3
    for review in reviews:
        flat = float(review.review.flat_pct)
        assert (review.action, review.baseline_action) == ("open_short", "open_long")
        assert review.baseline_verdict == scoring.verdict("open_long", review.realised_return, flat)
    # and the ledger sets the debate against the baseline over the 6 steps: hit rates
    # and returns a step as computed here, too few steps for a verdict
    verdict = report["ledger"]["verdict"]
    against = verdict["comparisons"]["budget_matched"]
    assert against["steps"] == 6
    assert against["hit_rate"] == [
        hit_rate([r.verdict for r in reviews]),
        hit_rate([r.baseline_verdict for r in reviews]),
    ]
    moves = [[r.realised_return for r in reviews if r.review_id == i] for i in step_reviews(first)]
    shorted = sum(-100 * sum(step) / len(step) for step in moves) / 6
    assert against["return_pct"] == pytest.approx([shorted, -shorted], abs=1e-6)
    assert verdict["sentence"].startswith("No verdict yet on this backtest: 6 reviewed steps")
    # when it runs again, every answer from the cache
    again = wait_done(make_backtest(**window))
    # then no model was called, and the baseline matched and decided the same
    assert again.report["usage"]["model_calls"] == 0
    assert again.report["budget_match"] == match
    assert rule(again.report, "budget_matched") == baseline


def hit_rate(verdicts: list[str]) -> float:
    right, wrong = verdicts.count("right"), verdicts.count("wrong")
    return round(right / (right + wrong), 6)


def step_reviews(backtest) -> list[int]:
    """Return the ids of the reviews of a backtest's debates."""
    reviews = DecisionReview.objects.filter(review__debate__backtest_step__backtest=backtest)
    return sorted(set(reviews.values_list("review_id", flat=True)))


def wait_done(backtest):
    from tests.backtests.conftest import wait_until_done

    done = wait_until_done(backtest.pk, timeout=180)
    assert done.status == "completed", done.error
    assert not BacktestStep.objects.filter(backtest=done).exclude(baseline_state="done").exists()
    assert BaselineAnswer.objects.filter(debate__backtest_step__backtest=done).exists()
    return done


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_baseline_whose_task_was_lost_is_sent_again_and_ends(
    celery_worker, llm, make_backtest, monkeypatch, settings
):
    # given the first task of every step's baseline lost on its way to the workers, and a
    # run that finds a baseline stopped after 4 s without moving
    settings.BACKTEST_STALE_AFTER_S = 1
    send, lost = baseline._send, set()

    def losing(step_id: int) -> None:
        if step_id in lost:
            send(step_id)
        lost.add(step_id)

    monkeypatch.setattr(baseline, "_send", losing)
    # when a 3-step backtest with the baseline runs
    done = wait_done(
        make_backtest(
            personalities=("bull", "bear"), end=START + timedelta(hours=12), baseline="rotate"
        )
    )
    # then each step's baseline was sent again once it had stopped, and ended matched
    assert len(lost) == 3
    match = done.report["budget_match"]
    assert [s["seat"] for s in match["steps"]] == ["P1", "P2", "P1"]
    assert match["within_one_answer"] and all(s["answers"] > 0 for s in match["steps"])


@pytest.mark.django_db
def test_a_baseline_answer_waits_for_a_call_worker_not_a_step_worker():
    # given no message queued
    app.control.purge()
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    try:
        # when a baseline's next answer is sent
        baseline_answer_task.delay(1)
        # then it waits on the call workers' queue, where its model call holds a thread,
        # not a step worker's process
        assert (client.llen(settings.MODEL_CALL_QUEUE), client.llen("celery")) == (1, 0)
    finally:
        app.control.purge()


@pytest.mark.django_db
def test_the_baselines_target_counts_the_debates_dropped_answers():
    # given a debate with a turn of 1,000 tokens and an answer dropped after a cancel of
    # 400 (billed all the same)
    turn = MessageFactory(answer_tokens=1000)
    DroppedCall.objects.create(debate=turn.debate, kind="turn", reason="stopped", answer_tokens=400)
    # when the baseline reads the tokens its answers are to match
    # then it counts both, as the debate's spend does
    assert baseline.debate_tokens(turn.debate_id) == 1400
