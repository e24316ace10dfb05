"""Outcome reviews of completed debates, against prices read from the candle files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.conf import settings
from django.db import IntegrityError, connection

from evaluations.models import DebateReview, DecisionReview, VoteReview
from evaluations.services import ReviewSettings, debate_review, reviews_due
from tests.debates.factories import AIModelFactory
from tests.evaluations.builders import HUMAN, close_by, completed_debate
from tests.strategies.factories import StrategyFactory
from tests.traders.factories import TraderFactory
from traders.models import Execution

AT = datetime(2024, 8, 6, 8, tzinfo=UTC)


def move(symbol: str, at: datetime, minutes: int) -> float:
    return float(close_by(symbol, at + timedelta(minutes=minutes)) / close_by(symbol, at) - 1)


def flipped_debate(user, strategy, at=AT, **fields):
    """Openings: both short BTC; votes and decision: long. ETH: everyone waits."""
    return completed_debate(
        owner=user,
        strategy=strategy,
        as_of=at,
        symbols=("BTCUSDT", "ETHUSDT"),
        seats=[("bull", None), ("bear", None)],
        openings={
            0: {"BTCUSDT": "open_short", "ETHUSDT": "wait"},
            1: {"BTCUSDT": "open_short", "ETHUSDT": "wait"},
        },
        votes={
            0: {"BTCUSDT": ("open_long", 80), "ETHUSDT": ("wait", 50)},
            1: {"BTCUSDT": ("open_long", 60), "ETHUSDT": ("wait", 40)},
        },
        decisions={"BTCUSDT": "open_long", "ETHUSDT": "wait"},
        rebuttal_tokens=100,
        **fields,
    )


@pytest.mark.django_db
def test_a_review_stores_prices_returns_and_verdicts_from_the_candles(user, strategy):
    # given a debate at 2024-08-06 08:00 whose rounds turned the round-1 short into a long
    debate = flipped_debate(user, strategy)
    # when it is reviewed with the strategy's settings (240 minutes, 0.1 %)
    review = debate_review(debate_id=debate.pk)
    # then each decision has the prices at the instant and 4 hours later, from the files
    assert (review.instant, review.horizon_minutes, review.flat_pct) == (AT, 240, Decimal("0.1"))
    assert review.round_tokens == 200
    btc = DecisionReview.objects.get(decision__debate=debate, symbol="BTCUSDT")
    later = AT + timedelta(hours=4)
    assert (btc.price_at_instant, btc.price_at_horizon) == (
        close_by("BTCUSDT", AT),
        close_by("BTCUSDT", later),
    )
    realised = move("BTCUSDT", AT, 240)
    assert btc.realised_return == pytest.approx(realised, abs=1e-12)
    assert abs(realised) > 0.001  # a real move, so the verdicts below are decided
    up = realised > 0
    assert (btc.action, btc.verdict) == ("open_long", "right" if up else "wrong")
    assert (btc.round1_action, btc.round1_verdict) == ("open_short", "wrong" if up else "right")
    assert btc.flipped and not btc.executed and btc.realised_pnl is None
    eth = DecisionReview.objects.get(decision__debate=debate, symbol="ETHUSDT")
    eth_still = abs(move("ETHUSDT", AT, 240)) < 0.001
    assert (eth.round1_action, eth.verdict) == ("wait", "right" if eth_still else "wrong")
    assert not eth.flipped
    # and every vote has its own review, with its voter's model and personality
    votes = VoteReview.objects.filter(review=review).order_by("speak_order", "symbol")
    assert [(v.personality, v.symbol, v.action, v.confidence) for v in votes] == [
        ("bull", "BTCUSDT", "open_long", 80),
        ("bull", "ETHUSDT", "wait", 50),
        ("bear", "BTCUSDT", "open_long", 60),
        ("bear", "ETHUSDT", "wait", 40),
    ]
    assert {v.verdict for v in votes if v.symbol == "BTCUSDT"} == {btc.verdict}


@pytest.mark.django_db
def test_a_debate_is_reviewed_once(user, strategy):
    # given a reviewed debate
    debate = flipped_debate(user, strategy)
    assert debate_review(debate_id=debate.pk) is not None
    # when it is reviewed again, with other settings
    again = debate_review(debate_id=debate.pk, settings=ReviewSettings(60, Decimal("5")))
    # then nothing is made
    assert again is None
    assert DebateReview.objects.get().horizon_minutes == 240
    assert DecisionReview.objects.count() == 2 and VoteReview.objects.count() == 4


@pytest.mark.django_db
def test_the_flat_threshold_decides_flat_verdicts(user, strategy):
    # given a threshold above both coins' 4-hour moves
    largest = max(abs(move(symbol, AT, 240)) for symbol in ("BTCUSDT", "ETHUSDT"))
    debate = flipped_debate(user, strategy)
    settings_ = ReviewSettings(240, Decimal(str(round(largest * 100 + 0.01, 3))))
    # when it is reviewed with it
    debate_review(debate_id=debate.pk, settings=settings_)
    # then the long and the short are flat, the waits right
    btc = DecisionReview.objects.get(symbol="BTCUSDT")
    assert (btc.verdict, btc.round1_verdict) == ("flat", "flat")
    assert DecisionReview.objects.get(symbol="ETHUSDT").verdict == "right"


@pytest.mark.django_db
def test_a_dataset_debate_whose_horizon_passes_the_dataset_end_is_not_due(user, strategy):
    # given a debate 2 hours before the dataset's end, reviewed over 4 hours
    flipped_debate(user, strategy, at=datetime(2024, 9, 4, 22, tzinfo=UTC))
    # when the due reviews run
    reviewed = reviews_due()
    # then it is left alone
    assert reviewed == [] and not DebateReview.objects.exists()


@pytest.mark.django_db
def test_an_executed_decision_gets_its_fill_marked_to_the_horizon(user, strategy):
    # given a debate whose BTC long filled 0.01 at 60,000.5 with a 0.24 fee
    debate = flipped_debate(user, strategy)
    Execution.objects.create(
        decision=debate.decisions.get(symbol="BTCUSDT"),
        trader=TraderFactory(owner=user),
        status="filled",
        client_order_id="x",
        symbol="BTCUSDT",
        action="open_long",
        filled_quantity=Decimal("0.01"),
        average_price=Decimal("60000.5"),
        fee=Decimal("0.24"),
    )
    # when it is reviewed
    debate_review(debate_id=debate.pk)
    # then its PnL is the fill marked to the horizon price less the fee
    btc = DecisionReview.objects.get(symbol="BTCUSDT")
    later = close_by("BTCUSDT", AT + timedelta(hours=4))
    assert btc.executed
    assert btc.realised_pnl == (Decimal("0.01") * (later - Decimal("60000.5")) - Decimal("0.24"))


REVIEWER = """
import json, django
django.setup()
from evaluations.services import reviews_due
print(json.dumps(reviews_due()))
"""


@pytest.mark.django_db(transaction=True)
def test_four_processes_reviewing_at_once_review_each_debate_once(user):
    # given 12 completed debates due for review, on one model
    strategy = StrategyFactory(owner=user)
    model = AIModelFactory(owner=user)
    debates = []
    for n in range(12):
        debate = flipped_debate(user, strategy, at=AT + timedelta(hours=n))
        debate.participants.update(ai_model=model)
        debates.append(debate.pk)
    # when 4 processes run the due reviews at the same time
    env = dict(
        os.environ,
        DJANGO_SETTINGS_MODULE="arena.settings.test",
        DATABASE_URL=(
            f"postgres://{connection.settings_dict['USER']}@{connection.settings_dict['HOST']}:"
            f"{connection.settings_dict['PORT']}/{connection.settings_dict['NAME']}"
        ),
    )
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", REVIEWER],
            cwd=settings.BASE_DIR,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(4)
    ]
    outputs = [process.communicate(timeout=120) for process in processes]
    # then every process ended well, and each debate was reviewed by exactly one of them
    assert [p.returncode for p in processes] == [0] * 4, [err[-2000:] for _, err in outputs]
    reviewed = [debate for out, _ in outputs for debate in json.loads(out.splitlines()[-1])]
    assert sorted(reviewed) == debates
    assert DebateReview.objects.count() == 12
    assert DecisionReview.objects.count() == 24 and VoteReview.objects.count() == 48


@pytest.mark.django_db
def test_a_debate_where_the_owner_voted_is_reviewed_for_its_model_seats(api_client, user, strategy):
    # given a completed debate where the owner sat as the bull and voted, beside a model bear
    bear = AIModelFactory(owner=user, name="Bear model")
    debate = completed_debate(
        owner=user,
        strategy=strategy,
        as_of=AT,
        seats=[("bull", HUMAN), ("bear", bear)],
        openings={0: {"BTCUSDT": "open_short"}, 1: {"BTCUSDT": "open_short"}},
        votes={0: {"BTCUSDT": ("open_long", 80)}, 1: {"BTCUSDT": ("open_long", 60)}},
        decisions={"BTCUSDT": "open_long"},
        rebuttal_tokens=100,
    )
    # when the due reviews run
    assert reviews_due() == [debate.pk]
    # then the decision is reviewed, and the bear's vote; the person's vote is no model's
    decision = DecisionReview.objects.get(decision__debate=debate)
    assert (decision.action, decision.round1_action) == ("open_long", "open_short")
    votes = VoteReview.objects.filter(review__debate=debate)
    assert [(v.ai_model_id, v.personality, v.action, v.confidence) for v in votes] == [
        (bear.pk, "bear", "open_long", 60)
    ]
    # and the ledger counts the debate, with the model seat as its one voter
    body = api_client.get("/api/evaluations/ledger").json()
    assert (body["decisions"], body["flips"], body["round_tokens"]) == (1, 1, 200)
    assert list(body["participants"]) == [f"{bear.pk}:bear"]
    assert body["participants"][f"{bear.pk}:bear"]["votes"] == 1
    # and the debate is due no more
    assert reviews_due() == []


@pytest.mark.django_db
def test_a_review_row_refused_by_the_database_is_raised_and_the_others_still_reviewed(
    user, strategy, caplog
):
    # given a debate whose BTC decision already has a review under another debate's
    # review (no concurrent review of its own), and a sound debate after it
    broken = flipped_debate(user, strategy)
    sound = flipped_debate(user, strategy, at=AT + timedelta(hours=1))
    other = flipped_debate(user, strategy, at=AT + timedelta(hours=2))
    debate_review(debate_id=other.pk)
    DecisionReview.objects.filter(decision__debate=other, symbol="BTCUSDT").update(
        decision=broken.decisions.get(symbol="BTCUSDT")
    )
    # when it is reviewed, then the refusal is raised, not taken for a concurrent review
    with pytest.raises(IntegrityError):
        debate_review(debate_id=broken.pk)
    assert not DebateReview.objects.filter(debate=broken).exists()
    # and the due reviews log it and review the sound debate
    assert reviews_due() == [sound.pk]
    assert f"debate {broken.pk}: no review, a review row was refused" in caplog.text
    assert not DebateReview.objects.filter(debate=broken).exists()
