"""Automatic execution of the primary decision once a debate reaches its consensus."""

from __future__ import annotations

import pytest

from debates.services import consensus_finalize
from tests.debates.events_helpers import published
from tests.debates.factories import DebateFactory, DecisionFactory, VoteFactory
from tests.traders.factories import TraderFactory
from traders.hooks import auto_execute
from traders.models import Execution

pytestmark = pytest.mark.django_db


def test_the_consensus_of_an_auto_executed_debate_requests_its_execution(user, paper_trader):
    # given a voting debate that asked for automatic execution on a paper trader
    debate = DebateFactory(
        owner=user, status="voting", auto_execute=True, trader=paper_trader, symbols=["BTCUSDT"]
    )
    VoteFactory(debate=debate, ballot__participant__debate=debate, confidence=80)
    # when its consensus is stored
    consensus_finalize(debate_id=debate.pk)
    # then the primary decision's execution was recorded with it, as an automatic one
    execution = Execution.objects.get()
    assert (execution.decision.debate_id, execution.decision.is_primary) == (debate.pk, True)
    assert (execution.trader_id, execution.trigger, execution.status) == (
        paper_trader.pk,
        "auto",
        "pending",
    )


@pytest.mark.parametrize("action", ["hold", "wait"])
def test_a_hold_or_wait_consensus_executes_nothing(user, paper_trader, action):
    # given an auto-executed debate whose primary decision holds or waits
    debate = DebateFactory(owner=user, status="completed", auto_execute=True, trader=paper_trader)
    DecisionFactory(debate=debate, action=action)
    # when the hook runs
    auto_execute(debate_id=debate.pk)
    # then nothing is recorded
    assert Execution.objects.count() == 0


def test_a_debate_without_auto_execute_executes_nothing(user, paper_trader):
    # given a debate that did not ask for automatic execution
    debate = DebateFactory(owner=user, status="completed", trader=paper_trader)
    DecisionFactory(debate=debate)
    # when the hook runs
    auto_execute(debate_id=debate.pk)
    # then nothing is recorded
    assert Execution.objects.count() == 0


def test_a_refused_automatic_execution_is_announced_and_keeps_the_consensus(
    user, django_capture_on_commit_callbacks
):
    # given an auto-executed debate whose trader is stopped
    trader = TraderFactory(owner=user, status="stopped", name="Sleepy")
    debate = DebateFactory(owner=user, status="completed", auto_execute=True, trader=trader)
    DecisionFactory(debate=debate)
    # when the hook runs
    with django_capture_on_commit_callbacks(execute=True):
        auto_execute(debate_id=debate.pk)
    # then nothing is recorded and the stream says why
    assert Execution.objects.count() == 0
    assert published(debate.pk) == [
        (
            "error",
            {"step": "execution", "code": "trader_stopped", "message": "Trader Sleepy is stopped."},
        )
    ]
