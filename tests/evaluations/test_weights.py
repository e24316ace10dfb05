"""Calibrated weights: each vote weighs its confidence times its voter's shrunk hit rate,
from the reviews of earlier instants only."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from debates.engine.consensus import Ballot, calibrated_weight, decide
from debates.engine.types import Action, CoinDecision
from debates.models import Decision
from debates.services.consensus import consensus_finalize
from evaluations.models import VoteReview
from evaluations.selectors import calibrated_voter_weights
from evaluations.services import debate_review
from tests.debates.factories import (
    AIModelFactory,
    BallotFactory,
    DebateFactory,
    ParticipantFactory,
    VoteFactory,
)
from tests.evaluations.builders import close_by, completed_debate, iso

AT = datetime(2024, 8, 10, 0, tzinfo=UTC)


def test_the_shrunk_hit_rate_pulls_towards_one_half():
    assert calibrated_weight(0, 0) == 0.5
    assert calibrated_weight(7, 10) == 0.6  # (7 + 5) / (10 + 10)
    assert calibrated_weight(10, 10) == 0.75 and calibrated_weight(0, 10) == 0.25


def test_calibrated_weights_can_turn_the_consensus():
    # given a long at 60 and a short at 70: by confidence the short wins
    votes = [
        Ballot("A", CoinDecision("BTCUSDT", Action.OPEN_LONG, 60)),
        Ballot("B", CoinDecision("BTCUSDT", Action.OPEN_SHORT, 70)),
    ]
    assert decide(votes, ["BTCUSDT"])[0].action == Action.OPEN_SHORT
    # when A was right 10 of 10 times and B 0 of 10: 0.6 x 0.75 = 0.45 against 0.7 x 0.25
    found = decide(votes, ["BTCUSDT"], voter_weights={"A": 0.75, "B": 0.25})[0]
    # then the long wins, its confidence still its voter's own
    assert (found.action, found.scores, found.confidence) == (
        Action.OPEN_LONG,
        {"open_long": 0.45, "open_short": 0.175},
        60,
    )


def history(user, strategy, model, personality, instants, action):
    """Reviewed debates of one voter (``model`` as ``personality``) voting ``action`` on
    BTC at each of ``instants``; return the reviews' verdicts."""
    for at in instants:
        debate = completed_debate(
            owner=user,
            strategy=strategy,
            as_of=at,
            seats=[(personality, model)],
            openings={0: {"BTCUSDT": action}},
            votes={0: {"BTCUSDT": (action, 70)}},
            decisions={"BTCUSDT": action},
        )
        debate_review(debate_id=debate.pk)
    return list(
        VoteReview.objects.filter(ai_model=model, personality=personality)
        .exclude(verdict="flat")
        .values_list("verdict", flat=True)
    )


def voting_debate(user, strategy, seats, at=AT):
    """A voting debate at ``at``, weighed by calibration; ``seats``: (personality, model,
    action, confidence) each voting on BTC."""
    debate = DebateFactory(
        owner=user,
        strategy=strategy,
        status="voting",
        phase="voting",
        symbols=["BTCUSDT"],
        weighting="calibrated",
        market_snapshot={
            "as_of": iso(at),
            "coins": [{"symbol": "BTCUSDT", "price": float(close_by("BTCUSDT", at))}],
        },
    )
    for order, (personality, model, action, confidence) in enumerate(seats):
        participant = ParticipantFactory(
            debate=debate, ai_model=model, personality=personality, speak_order=order
        )
        VoteFactory(
            ballot=BallotFactory(participant=participant),
            symbol="BTCUSDT",
            action=action,
            confidence=confidence,
        )
    return debate


@pytest.mark.django_db
def test_a_debate_weighs_only_reviews_known_by_its_instant(user, strategy):
    # given a voter reviewed at 6 earlier instants (each known 4 hours later, before AT)
    model = AIModelFactory(owner=user)
    earlier = [AT - timedelta(hours=4 * n) for n in range(2, 8)]
    verdicts = history(user, strategy, model, "bull", earlier, "open_long")
    right = verdicts.count("right")
    debate = voting_debate(user, strategy, [("bull", model, "open_long", 60)])
    participant = str(debate.participants.get().pk)
    before = calibrated_voter_weights(debate_id=debate.pk)
    assert before == {participant: calibrated_weight(right, len(verdicts))}
    # when the same voter is reviewed at later instants, and at one whose outcome was
    # still unknown at AT (2 hours before it, known 2 hours after)
    history(
        user, strategy, model, "bull", [AT + timedelta(hours=4 * n) for n in range(3)], "open_long"
    )
    history(user, strategy, model, "bull", [AT - timedelta(hours=2)], "open_short")
    assert VoteReview.objects.filter(ai_model=model).count() == 10
    # then the debate's weights have not changed
    assert calibrated_voter_weights(debate_id=debate.pk) == before


@pytest.mark.django_db
def test_a_calibrated_debate_follows_the_voter_that_was_right(user, strategy):
    # given two voters with earlier reviews: the bull long on a stretch, the bear short on
    # the same stretch, so one was right where the other was wrong
    bull, bear = AIModelFactory(owner=user), AIModelFactory(owner=user)
    earlier = [AT - timedelta(hours=4 * n) for n in range(2, 14)]
    bulls = history(user, strategy, bull, "bull", earlier, "open_long")
    bears = history(user, strategy, bear, "bear", earlier, "open_short")
    bull_weight = calibrated_weight(bulls.count("right"), len(bulls))
    bear_weight = calibrated_weight(bears.count("right"), len(bears))
    assert bull_weight != bear_weight
    # when a calibrated debate hears the better voter at 60 and the other at 70
    better, worse = ("bull", "bear") if bull_weight > bear_weight else ("bear", "bull")
    models = {"bull": bull, "bear": bear}
    actions = {"bull": "open_long", "bear": "open_short"}
    debate = voting_debate(
        user,
        strategy,
        [
            (better, models[better], actions[better], 60),
            (worse, models[worse], actions[worse], 70),
        ],
    )
    consensus_finalize(debate_id=debate.pk)
    # then the scores are confidence times weight, exactly
    decision = Decision.objects.get(debate=debate)
    high, low = max(bull_weight, bear_weight), min(bull_weight, bear_weight)
    assert decision.scores == {
        actions[better]: round(0.6 * high, 6),
        actions[worse]: round(0.7 * low, 6),
    }
    expected = actions[better] if 0.6 * high > 0.7 * low else actions[worse]
    assert decision.action == expected
