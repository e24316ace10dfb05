"""A worker killed with SIGKILL at any point of a debate loses and duplicates nothing.

For each of ten points (the round-1 openings, each rebuttal turn, the votes, the
consensus, the execution), a debate with automatic execution on a paper trader runs on
a worker process that is killed, with every pool child, when the point is reached; a
new worker then starts. The debate must complete with one row per turn, vote and
decision, one market order, and no model request for a turn already stored.

The workers' step claims and model slots outlive them by 6 s instead of 15
(``STEP_CLAIM_TTL_S``), and their executions' leases by 6 s instead of 20
(``EXECUTION_LEASE_S``), so the new worker resumes the debate sooner;
tests/debates/test_crash.py resumes one with the defaults.
"""

from __future__ import annotations

from collections import Counter

import pytest

from debates.models import Ballot, Debate, Decision, Message, Vote
from debates.services import debate_start
from tests.debates.conftest import wait_for, wait_until_finished, worker_processes
from tests.debates.turns import turns_asked_again
from tests.traders.factories import TraderFactory
from traders.models import Execution, Order

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHORT_LEASES = {"STEP_CLAIM_TTL_S": "6", "EXECUTION_LEASE_S": "6"}


def in_flight(llm) -> bool:
    return llm.stats()["in_flight"] >= 1


def kill_points():
    """Return (name, condition(debate, llm)) for the ten points a worker dies at."""

    def messages(n):
        return lambda d, llm: Message.objects.filter(debate=d).count() == n and in_flight(llm)

    return [
        ("round 1 openings", lambda d, llm: in_flight(llm)),
        *[(f"rebuttal turn {n - 2}", messages(n)) for n in range(3, 9)],
        ("votes", lambda d, llm: Debate.objects.get(pk=d.pk).status == "voting" and in_flight(llm)),
        ("consensus", lambda d, llm: Ballot.objects.filter(debate=d).count() == 3),
        ("execution", lambda d, llm: Decision.objects.filter(debate=d).exists()),
    ]


@pytest.mark.parametrize(("point", "reached"), kill_points(), ids=[p for p, _ in kill_points()])
def test_sigkill_at_any_point_loses_and_duplicates_nothing(point, reached, llm, make_debate, user):
    # given a 3x3 debate that executes its consensus on a paper trader, on one worker
    llm.set_latency(0.3)
    trader = TraderFactory(owner=user, exchange="paper")
    debate = make_debate(auto_execute=True, trader=trader.pk)
    with worker_processes(**SHORT_LEASES) as workers:
        workers.start("first")
        debate_start(debate_id=debate.pk)
        # when the worker dies with SIGKILL at the point
        wait_for(lambda: reached(debate, llm), timeout=60, every=0.01)
        workers.kill("first")
        # and a new worker starts
        workers.start("second")
        finished = wait_until_finished(debate.pk, timeout=120)
        wait_for(
            lambda: Execution.objects.filter(decision__debate=debate, status="filled").exists(),
            timeout=60,
        )

    # then the debate completed with exactly one row per turn, vote and decision
    assert finished.status == "completed", finished.error
    turns = Counter(Message.objects.filter(debate=debate).values_list("round", "participant"))
    assert len(turns) == 9 and set(turns.values()) == {1}
    assert Vote.objects.filter(debate=debate).count() == 9
    assert Decision.objects.filter(debate=debate).count() == 3
    # and one execution placed one market order
    execution = Execution.objects.get(decision__debate=debate)
    assert Order.objects.filter(execution=execution, type="market").count() == 1
    # and no turn was asked again after it had been stored
    assert turns_asked_again(llm, debate) == []
