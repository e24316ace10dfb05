"""A voter's track record: its own reviewed calls on the debate's coins, known by the
debate's instant, in its vote prompt beside the trader's book."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from backtests.models import BacktestStep
from debates.services import DebateInput, debate_create, debate_start
from evaluations.services import debate_review
from tests.api.conftest import run_steps
from tests.backtests.factories import BacktestFactory
from tests.debates.factories import FakeLLMModelFactory
from tests.evaluations.builders import completed_debate
from tests.strategies.factories import StrategyFactory

pytestmark = pytest.mark.django_db

AT = datetime(2024, 8, 10, 3, tzinfo=UTC)  # the debate's instant; reviews are 4h long


def call(user, strategy, model, personality, at, action="open_long", backtest=None):
    """A reviewed debate in which ``model`` as ``personality`` voted ``action`` on BTC."""
    debate = completed_debate(
        owner=user,
        strategy=strategy,
        as_of=at,
        seats=[(personality, model)],
        openings={0: {"BTCUSDT": action}},
        votes={0: {"BTCUSDT": (action, 70)}},
        decisions={"BTCUSDT": action},
    )
    if backtest is not None:
        BacktestStep.objects.create(backtest=backtest, index=0, as_of=at, debate=debate)
    debate_review(debate_id=debate.pk)


def vote_prompts(llm) -> list[str]:
    return [r.prompt for r in llm.requests if "casts a final vote" in r.prompt]


def debate_on(user, llm, trader, strategy, models) -> int:
    data = DebateInput(
        name="With a track record",
        strategy=strategy.pk,
        symbol="BTCUSDT",
        max_rounds=2,
        participants=[
            {"ai_model": model.pk, "personality": personality}
            for model, personality in zip(models, ("bull", "bear"), strict=True)
        ],
        trader=trader.pk,
        as_of=AT,
    )
    debate = debate_create(owner=user, data=data)
    debate_start(debate_id=debate.pk)
    run_steps(debate.pk)
    return debate.pk


def test_each_voter_sees_its_own_calls_known_by_the_instant_newest_first(
    user, llm, paper_trader, operator
):
    # given a model whose bull calls on BTC were reviewed 27 h and 15 h before the
    # debate, one still open at its instant (reviewed 1 h after it), a call of the same
    # model as a bear, and one of a backtest's step
    strategy = StrategyFactory(owner=user)
    bull, bear = FakeLLMModelFactory.create_batch(2, owner=user, llm=llm, timeout_seconds=10)
    call(user, strategy, bull, "bull", AT - timedelta(hours=27), "open_short")
    call(user, strategy, bull, "bull", AT - timedelta(hours=15))
    call(user, strategy, bull, "bull", AT - timedelta(hours=3))
    call(user, strategy, bull, "bear", AT - timedelta(hours=20))
    backtest = BacktestFactory(owner=user, strategy=strategy)
    call(user, strategy, bull, "bull", AT - timedelta(hours=10), backtest=backtest)
    # when a debate on the trader runs, the model as its bull
    debate_id = debate_on(user, llm, paper_trader, strategy, [bull, bear])
    # then the bull's vote shows its two calls known by then, newest first
    bull_vote, bear_vote = vote_prompts(llm)
    record = bull_vote.split("## Your track record\n", 1)[1].split("\n\n", 1)[0]
    lines = [line for line in record.splitlines() if line.startswith("- ")]
    assert [line.split(" ")[1:4] for line in lines] == [
        ["2024-08-09T12:00:00Z", "BTCUSDT", "open_long"],
        ["2024-08-09T00:00:00Z", "BTCUSDT", "open_short"],
    ]
    assert all("% over the horizon, " in line for line in lines)
    # and the bear, whose model has none, is told so; the rounds saw no record
    assert "None of your calls on these coins is reviewed yet." in bear_vote
    turns = [r.prompt for r in llm.requests if "casts a final vote" not in r.prompt]
    assert not [prompt for prompt in turns if "track record" in prompt]
    # and the admin shows the records the votes saw
    page = operator.get(f"/admin/debates/debate/{debate_id}/change/").content.decode()
    assert "2024-08-09T12:00:00Z BTCUSDT open_long at 70% confidence" in page


def test_a_strategy_with_the_track_record_off_shows_none(user, llm, paper_trader):
    # given a reviewed call, on a strategy whose track record is off
    strategy = StrategyFactory(owner=user, track_record=False)
    bull, bear = FakeLLMModelFactory.create_batch(2, owner=user, llm=llm, timeout_seconds=10)
    call(user, strategy, bull, "bull", AT - timedelta(hours=15))
    # when a debate on the trader runs
    debate_on(user, llm, paper_trader, strategy, [bull, bear])
    # then no vote holds a record, though each holds the book
    votes = vote_prompts(llm)
    assert len(votes) == 2
    assert not [prompt for prompt in votes if "## Your track record" in prompt]
    assert all("## Your trader's account" in prompt for prompt in votes)
