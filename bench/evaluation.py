"""Evaluation: the debate-effect ledger and the calibration over many reviews.

For each size (1,000 reviewed decisions, then 10,000), an owner of its own gets that
many completed debates (3 voters, one coin each) with their reviews, written in bulk;
then the ledger (``evaluations.selectors.ledger``) and the calibration
(``evaluations.selectors.calibration``) of all that owner's debates are computed,
``--runs`` times each. Reported per size: the median time, the time per review, and the
SQL queries each made; the 1,000-review size is the baseline the 10,000 is read against
(the queries must be the same, the time per review about so).

    python -m bench.evaluation [--sizes 1000,10000] [--runs 5]
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal

from bench.common import machine, setup_django

VOTERS = ("bull", "bear", "analyst")
ACTIONS = ("open_long", "open_short", "wait", "hold", "close_long")


VERDICTS = ("right", "wrong", "flat")


def populate(size: int, seed: int):
    """Return an owner holding ``size`` reviewed debates (made now, in bulk)."""
    from django.contrib.auth import get_user_model

    from debates.models import Debate
    from evaluations.models import DebateReview

    rng = random.Random(seed)
    users = get_user_model().objects
    owner, created = users.get_or_create(username=f"bench-evaluation-{size}")
    if not created and DebateReview.objects.filter(debate__owner=owner).count() == size:
        return owner
    Debate.objects.filter(owner=owner).delete()
    debates, decisions, votes = _debates(owner, size, rng)
    _reviews(debates, decisions, votes, rng)
    return owner


def _debates(owner, size: int, rng: random.Random) -> tuple[list, list, list]:
    """Write ``size`` completed debates of three voters on one coin, 15 minutes apart;
    return them, their decisions and their votes."""
    from debates.models import AIModel, Ballot, Debate, Decision, Participant, Vote
    from strategies.models import Strategy

    strategy = Strategy.objects.create(owner=owner, name="bench")
    models = [
        AIModel.objects.get_or_create(owner=owner, name=f"bench-{p}", provider="simulated")[0]
        for p in VOTERS
    ]
    start = datetime(2024, 5, 10, tzinfo=UTC)
    instants = [start + timedelta(minutes=15 * n) for n in range(size)]
    debates = Debate.objects.bulk_create(
        Debate(
            owner=owner,
            strategy=strategy,
            name=f"bench {n}",
            symbol="BTCUSDT",
            symbols=["BTCUSDT"],
            status="completed",
            as_of=at,
            market_snapshot={"as_of": at.isoformat()},
        )
        for n, at in enumerate(instants)
    )
    seats = Participant.objects.bulk_create(
        Participant(debate=d, ai_model=m, personality=p, speak_order=i)
        for d in debates
        for i, (m, p) in enumerate(zip(models, VOTERS, strict=True))
    )
    ballots = Ballot.objects.bulk_create(Ballot(debate=s.debate, participant=s) for s in seats)
    votes = Vote.objects.bulk_create(
        Vote(
            debate=b.debate,
            ballot=b,
            participant=b.participant,
            symbol="BTCUSDT",
            action=rng.choice(ACTIONS),
            confidence=rng.randint(0, 100),
        )
        for b in ballots
    )
    decisions = Decision.objects.bulk_create(
        Decision(debate=d, symbol="BTCUSDT", action=rng.choice(ACTIONS), confidence=60)
        for d in debates
    )
    return debates, decisions, votes


def _reviews(debates: list, decisions: list, votes: list, rng: random.Random) -> None:
    """Write a review of every debate, its decision and its votes, with random moves and
    verdicts."""
    from evaluations.models import DebateReview, DecisionReview, VoteReview

    reviews = DebateReview.objects.bulk_create(
        DebateReview(
            debate=d,
            instant=d.as_of,
            horizon_minutes=240,
            flat_pct=Decimal("0.1"),
            source="dataset",
            round_tokens=rng.randint(500, 3000),
        )
        for d in debates
    )
    moves = [rng.gauss(0, 0.01) for _ in debates]
    DecisionReview.objects.bulk_create(
        DecisionReview(
            review=r,
            decision=dec,
            symbol="BTCUSDT",
            instant=r.instant,
            action=dec.action,
            price_at_instant=Decimal("60000"),
            price_at_horizon=Decimal(str(round(60000 * (1 + m), 2))),
            realised_return=m,
            verdict=rng.choice(VERDICTS),
            round1_action=rng.choice(ACTIONS),
            round1_verdict=rng.choice(VERDICTS),
        )
        for r, dec, m in zip(reviews, decisions, moves, strict=True)
    )
    by_debate = {r.debate_id: (r, m) for r, m in zip(reviews, moves, strict=True)}
    VoteReview.objects.bulk_create(
        VoteReview(
            review=by_debate[v.debate_id][0],
            vote=v,
            ai_model_id=v.participant.ai_model_id,
            personality=v.participant.personality,
            speak_order=v.participant.speak_order,
            symbol="BTCUSDT",
            instant=by_debate[v.debate_id][0].instant,
            known_at=by_debate[v.debate_id][0].instant + timedelta(hours=4),
            action=v.action,
            confidence=v.confidence,
            price_at_instant=Decimal("60000"),
            price_at_horizon=Decimal("60000"),
            realised_return=by_debate[v.debate_id][1],
            verdict=rng.choice(VERDICTS),
        )
        for v in votes
    )


def measure(work, runs: int) -> tuple[float, list[float], int]:
    """Return the median seconds of ``work`` over ``runs``, each, and its queries."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    work()  # warm-up
    times = []
    for _ in range(runs):
        with CaptureQueriesContext(connection) as queries:
            started = time.perf_counter()
            work()
            times.append(time.perf_counter() - started)
    return statistics.median(times), times, len(queries.captured_queries)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    setup_django()
    from evaluations import selectors

    print(machine())
    results = {}
    for size in (int(s) for s in args.sizes.split(",")):
        populate_started = time.perf_counter()
        owner = populate(size, seed=size)
        made = time.perf_counter() - populate_started
        scope = selectors.Scope(owner_id=owner.pk)
        ledger = measure(lambda scope=scope: selectors.ledger(scope), args.runs)
        calibration = measure(lambda scope=scope: selectors.calibration(scope), args.runs)
        found = selectors.ledger(scope)
        assert found.decisions == size, found.decisions
        results[size] = (ledger, calibration)
        for name, (median, times, queries) in (("ledger", ledger), ("calibration", calibration)):
            print(
                f"{size} reviews, {name}: median {median * 1000:.1f} ms "
                f"[{', '.join(f'{t * 1000:.1f}' for t in times)}], "
                f"{median / size * 1e6:.2f} us per review, {queries} queries"
            )
        print(f"  ({size} reviewed debates with {3 * size} vote reviews ready in {made:.1f} s)")
    sizes = sorted(results)
    if len(sizes) > 1:
        base, top = sizes[0], sizes[-1]
        for index, name in enumerate(("ledger", "calibration")):
            (b_median, _, b_queries), (t_median, _, t_queries) = (
                results[base][index],
                results[top][index],
            )
            print(
                f"{name}: {top} against {base} reviews: queries {t_queries} vs {b_queries}, "
                f"time per review {t_median / top * 1e6:.2f} vs {b_median / base * 1e6:.2f} us "
                f"({(t_median / top) / (b_median / base):.2f}x)"
            )
    return results


if __name__ == "__main__":
    main()
