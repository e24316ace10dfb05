"""Automatic execution of the primary decision once a debate reaches its consensus."""

from __future__ import annotations

import pytest

from debates.services import consensus_finalize
from tests.debates.events_helpers import published
from tests.debates.factories import DebateFactory, DecisionFactory, VoteFactory
from tests.traders.factories import TraderFactory
from traders.hooks import debate_execute
from traders.models import Execution

pytestmark = pytest.mark.django_db


def test_the_consensus_of_an_auto_executed_debate_requests_its_execution(user, paper_trader):
    # given a voting debate that asked for automatic execution on a paper trader
    debate = DebateFactory(
        owner=user, status="voting", auto_execute=True, trader=paper_trader, symbols=["BTCUSDT"]
    )
    VoteFactory(debate=debate, ballot__participant__debate=debate, confidence=80)
    # when its consensus is stored and the plan's execution step runs
    consensus_finalize(debate_id=debate.pk)
    assert Execution.objects.count() == 0  # no trading inside the consensus
    debate_execute(debate_id=debate.pk)
    # then the primary decision's execution was recorded, as an automatic one, and the
    # step's outcome with it
    execution = Execution.objects.get()
    assert (execution.decision.debate_id, execution.decision.is_primary) == (debate.pk, True)
    assert (execution.trader_id, execution.trigger, execution.status) == (
        paper_trader.pk,
        "auto",
        "pending",
    )
    debate.refresh_from_db()
    assert debate.step_outcomes == {"execution": {"status": "done", "execution": execution.pk}}
    # and the step runs once
    debate_execute(debate_id=debate.pk)
    assert Execution.objects.count() == 1


@pytest.mark.parametrize("action", ["hold", "wait"])
def test_a_hold_or_wait_consensus_executes_nothing(user, paper_trader, action):
    # given an auto-executed debate whose primary decision holds or waits
    debate = DebateFactory(owner=user, status="completed", auto_execute=True, trader=paper_trader)
    DecisionFactory(debate=debate, action=action)
    # when the execution step runs
    debate_execute(debate_id=debate.pk)
    # then nothing is executed, and the step is recorded as skipped
    assert Execution.objects.count() == 0
    debate.refresh_from_db()
    assert debate.step_outcomes["execution"]["status"] == "skipped"


def test_a_debate_without_auto_execute_executes_nothing(user, paper_trader):
    # given a debate that did not ask for automatic execution
    debate = DebateFactory(owner=user, status="completed", trader=paper_trader)
    DecisionFactory(debate=debate)
    # when the execution step is run all the same
    debate_execute(debate_id=debate.pk)
    # then nothing is recorded
    assert Execution.objects.count() == 0
    debate.refresh_from_db()
    assert debate.step_outcomes == {}


def test_a_refused_automatic_execution_is_announced_and_keeps_the_consensus(
    user, api_client, django_capture_on_commit_callbacks
):
    # given an auto-executed debate whose trader is stopped
    trader = TraderFactory(owner=user, status="stopped", name="Sleepy")
    debate = DebateFactory(owner=user, status="completed", auto_execute=True, trader=trader)
    DecisionFactory(debate=debate)
    # when the execution step runs
    with django_capture_on_commit_callbacks(execute=True):
        debate_execute(debate_id=debate.pk)
    # then nothing is recorded, the stream says why, and the step failed with the reason,
    # which the plan shows on the stream and in the detail
    assert Execution.objects.count() == 0
    refusal = {"code": "trader_stopped", "message": "Trader Sleepy is stopped."}
    events = published(debate.pk)
    assert events[0] == ("error", {"step": "execution", **refusal})
    assert [kind for kind, _ in events] == ["error", "status"]
    step = {
        "index": 2,  # after the prepare step and the consensus (the debate has no seats)
        "kind": "execution",
        "round": None,
        "speaker": None,
        "status": "failed",
        "outcome": refusal,
    }
    assert events[1][1]["steps"][-1] == step
    assert api_client.get(f"/api/debates/{debate.pk}").json()["steps"][-1] == step
    debate.refresh_from_db()
    assert debate.step_outcomes == {"execution": {"status": "failed", **refusal}}
    assert debate.status == "completed"


@pytest.mark.parametrize(
    ("execute_coins", "executed"),
    [("primary", ["BTCUSDT"]), ("all", ["BTCUSDT", "ETHUSDT", "SOLUSDT"])],
)
def test_an_automatic_execution_acts_on_the_coins_its_strategy_says(
    user, paper_trader, execute_coins, executed
):
    # given an auto-executed debate with an executable decision on each of three coins
    # (ETH's a close, SOL's an opening) and a hold on a fourth, on a strategy executing
    # the primary coin or every coin
    debate = DebateFactory(
        owner=user,
        status="completed",
        auto_execute=True,
        trader=paper_trader,
        strategy__execute_coins=execute_coins,
    )
    DecisionFactory(debate=debate, symbol="BTCUSDT", is_primary=True)
    DecisionFactory(debate=debate, symbol="ETHUSDT", is_primary=False, action="close_long")
    DecisionFactory(debate=debate, symbol="SOLUSDT", is_primary=False, action="open_short")
    DecisionFactory(debate=debate, symbol="XRPUSDT", is_primary=False, action="hold")
    # when the execution step runs
    debate_execute(debate_id=debate.pk)
    # then the coins the strategy says were executed, the primary first, and the step's
    # outcome names them
    executions = list(Execution.objects.order_by("pk"))
    assert [e.symbol for e in executions] == executed
    debate.refresh_from_db()
    outcome = debate.step_outcomes["execution"]
    assert (outcome["status"], outcome["execution"]) == ("done", executions[0].pk)
    if execute_coins == "all":
        assert outcome["executions"] == [e.pk for e in executions]
