"""The ledger and calibration endpoints, scoped to the requesting user."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from backtests.models import BacktestStep
from evaluations.models import DecisionReview
from evaluations.services import debate_review, decision_reviews_baseline
from tests.backtests.factories import BacktestFactory
from tests.debates.factories import AIModelFactory, ScheduleFactory
from tests.evaluations.builders import completed_debate
from tests.strategies.factories import StrategyFactory

pytestmark = pytest.mark.django_db
AT = datetime(2024, 8, 6, 8, tzinfo=UTC)


def reviewed(owner, strategy, at, model, *, flip: bool, schedule=None):
    """A reviewed debate of one voter on BTC: round 1 short, then long if ``flip``."""
    final = "open_long" if flip else "open_short"
    debate = completed_debate(
        owner=owner,
        strategy=strategy,
        as_of=at,
        seats=[("bull", model)],
        openings={0: {"BTCUSDT": "open_short"}},
        votes={0: {"BTCUSDT": (final, 75)}},
        decisions={"BTCUSDT": final},
        rebuttal_tokens=50,
        schedule=schedule,
    )
    assert debate_review(debate_id=debate.pk) is not None
    return debate


def test_the_ledger_counts_only_the_users_own_debates(api_client, user, other_user):
    # given two reviewed debates of the user (one flipped) and one flipped of another user
    strategy = StrategyFactory(owner=user)
    model = AIModelFactory(owner=user, name="Alpha")
    reviewed(user, strategy, AT, model, flip=True)
    reviewed(user, strategy, AT + timedelta(hours=4), model, flip=False)
    reviewed(other_user, StrategyFactory(owner=other_user), AT, None, flip=True)
    # when the user reads the overall ledger
    body = api_client.get("/api/evaluations/ledger").json()
    # then it covers their two decisions, one a flip, and their rebuttal tokens only
    assert (body["decisions"], body["flips"], body["round_tokens"]) == (2, 1, 100)
    assert [p["ai_model_name"] for p in body["participants"].values()] == ["Alpha"]
    assert body["participants"][f"{model.pk}:bull"]["votes"] == 2


def test_a_strategy_and_a_schedule_scope_their_ledger(api_client, user):
    # given reviewed debates of two strategies, one of them fired by a schedule
    first, second = StrategyFactory(owner=user), StrategyFactory(owner=user)
    schedule = ScheduleFactory(owner=user, strategy=first)
    model = AIModelFactory(owner=user)
    reviewed(user, first, AT, model, flip=True, schedule=schedule)
    reviewed(user, first, AT + timedelta(hours=4), model, flip=False)
    reviewed(user, second, AT, model, flip=True)
    # when each scope is read, then each counts its own decisions
    assert api_client.get(f"/api/strategies/{first.pk}/ledger").json()["decisions"] == 2
    assert api_client.get(f"/api/strategies/{second.pk}/ledger").json()["flips"] == 1
    by_schedule = api_client.get(f"/api/schedules/{schedule.pk}/ledger").json()
    assert (by_schedule["decisions"], by_schedule["flips"]) == (1, 1)
    voters = api_client.get(f"/api/strategies/{first.pk}/calibration").json()["voters"]
    assert [(v["personality"], v["samples"]) for v in voters] == [("bull", 2)]


@pytest.mark.parametrize(
    "path", ["strategies/{}/ledger", "strategies/{}/calibration", "schedules/{}/ledger"]
)
def test_another_users_strategy_or_schedule_is_a_404(api_client, other_user, path):
    strategy = StrategyFactory(owner=other_user)
    schedule = ScheduleFactory(owner=other_user, strategy=strategy)
    target = strategy.pk if path.startswith("strategies") else schedule.pk
    response = api_client.get("/api/" + path.format(target))
    assert response.status_code == 404
    assert response.json()["code"] == "not_found"


def test_another_users_backtest_ledger_is_a_404(api_client, other_user):
    backtest = BacktestFactory(
        owner=other_user, name="Theirs", start=AT, end=AT + timedelta(days=1)
    )
    for figure in ("ledger", "calibration"):
        assert api_client.get(f"/api/backtests/{backtest.pk}/{figure}").status_code == 404


def test_a_strategys_verdict_covers_its_backtests_and_live_debates(api_client, user):
    # given 12 reviewed debates of one strategy, round 1 short and the debate long, the
    # last 10 of them a backtest's steps whose budget-matched baseline went short too
    strategy = StrategyFactory(owner=user)
    model = AIModelFactory(owner=user)
    backtest = BacktestFactory(owner=user, strategy=strategy, steps_total=10)
    debates = [
        reviewed(user, strategy, AT + timedelta(hours=4 * n), model, flip=True) for n in range(12)
    ]
    for index, debate in enumerate(debates[2:]):
        BacktestStep.objects.create(
            backtest=backtest, index=index, as_of=debate.as_of, debate=debate
        )
        decision_reviews_baseline(debate_id=debate.pk, actions={"BTCUSDT": "open_short"})
    # when the strategy's ledger is read, and the backtest's
    body = api_client.get(f"/api/strategies/{strategy.pk}/ledger").json()
    by_backtest = api_client.get(f"/api/backtests/{backtest.pk}/ledger").json()
    # then the strategy's pairs every debate with its round-1 majority and the backtest's
    # steps with the baseline, reads the verdict against the baseline, and gives each
    # difference as the reviews make it: long against short, twice the move a step
    verdict = body["verdict"]
    against = verdict["comparisons"]
    assert (against["round1_majority"]["steps"], against["budget_matched"]["steps"]) == (12, 10)
    assert verdict["against"] == "budget_matched"
    moves = [
        DecisionReview.objects.get(decision__debate=debate).realised_return * 100
        for debate in debates[2:]
    ]
    assert against["budget_matched"]["return_difference"] == pytest.approx(
        2 * sum(moves) / 10, abs=1e-5
    )
    # (the moves go both ways, so the interval holds zero)
    assert verdict["sentence"].startswith(
        "Whether the debate earned its tokens on this strategy cannot be told yet: "
    )
    assert "over 10 steps against the budget-matched baseline" in verdict["sentence"]
    # and the backtest's covers its own steps alone, the same way every time it is read
    assert by_backtest["verdict"]["comparisons"]["round1_majority"]["steps"] == 10
    assert "on this backtest" in by_backtest["verdict"]["sentence"]
    assert api_client.get(f"/api/strategies/{strategy.pk}/ledger").json()["verdict"] == verdict
