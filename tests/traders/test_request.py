"""Asking for an execution: ownership, state, executability, exactly one per decision."""

from __future__ import annotations

import pytest

from arena.exceptions import InvalidState, NotFound, ValidationError
from tests.debates.events_helpers import published
from tests.debates.factories import DebateFactory, DecisionFactory
from tests.traders.factories import TraderFactory
from traders.exceptions import AlreadyExecuted, NotExecutable, TraderStopped
from traders.models import Execution, Order
from traders.services import client_order_id, execution_request, execution_resubmit

pytestmark = pytest.mark.django_db


def test_a_request_records_one_pending_execution_of_the_primary_decision(
    user, paper_trader, make_decision, django_capture_on_commit_callbacks
):
    # given a completed debate whose primary decision opens a BTC long
    decision = make_decision()
    DecisionFactory(debate=decision.debate, symbol="ETHUSDT", is_primary=False)
    # when its execution is requested
    with django_capture_on_commit_callbacks(execute=True):
        execution = execution_request(
            owner=user, debate_id=decision.debate_id, trader_id=paper_trader.pk
        )
    # then one pending execution of that decision exists, and the stream heard of it
    assert Execution.objects.count() == 1
    assert (execution.decision_id, execution.trader_id) == (decision.pk, paper_trader.pk)
    assert (execution.status, execution.trigger, execution.symbol, execution.action) == (
        "pending",
        "manual",
        "BTCUSDT",
        "open_long",
    )
    assert execution.client_order_id == client_order_id(decision.pk)
    assert [(kind, data["id"], data["status"]) for kind, data in published(decision.debate_id)] == [
        ("execution", execution.pk, "pending")
    ]


def test_the_client_order_id_is_short_alphanumeric_and_stable():
    # given a decision id
    # when its client order id is derived twice
    first, second = client_order_id(123456), client_order_id(123456)
    # then it is the same, alphanumeric, leaves room for a suffix and names the decision
    assert first == second
    assert first.isalnum() and len(first) <= 31
    assert first.startswith("arena123456")
    assert client_order_id(123457) != first


def test_a_coin_is_chosen_by_symbol_in_any_spelling(user, paper_trader, make_decision):
    # given a debate with an ETH decision besides the primary one
    primary = make_decision()
    eth = DecisionFactory(
        debate=primary.debate, symbol="ETHUSDT", action="open_short", is_primary=False
    )
    # when ETH is asked for as "eth/usdt"
    execution = execution_request(
        owner=user, debate_id=primary.debate_id, trader_id=paper_trader.pk, symbol="eth/usdt"
    )
    # then the ETH decision is executed
    assert (execution.decision_id, execution.action) == (eth.pk, "open_short")


def test_repeated_requests_return_the_same_execution(user, paper_trader, make_decision):
    # given an execution already requested
    decision = make_decision()
    first = execution_request(owner=user, debate_id=decision.debate_id, trader_id=paper_trader.pk)
    # when it is requested again
    again = execution_request(owner=user, debate_id=decision.debate_id, trader_id=paper_trader.pk)
    # then the same execution comes back and no other is made
    assert again.pk == first.pk
    assert Execution.objects.count() == 1


def test_another_users_debate_is_not_found(user, other_user, paper_trader):
    # given someone else's completed debate
    decision = DecisionFactory(debate__owner=other_user)
    # when the user asks to execute it
    with pytest.raises(NotFound) as refused:
        execution_request(owner=user, debate_id=decision.debate_id, trader_id=paper_trader.pk)
    # then it does not exist for them, and nothing is recorded
    assert (refused.value.status_code, refused.value.message) == (404, "Debate not found.")
    assert Execution.objects.count() == 0


def test_another_users_trader_is_not_found(user, other_user, make_decision):
    # given the user's debate and someone else's trader
    decision = make_decision()
    trader = TraderFactory(owner=other_user)
    # when the user asks to execute on that trader
    with pytest.raises(NotFound) as refused:
        execution_request(owner=user, debate_id=decision.debate_id, trader_id=trader.pk)
    # then the trader does not exist for them, and nothing is recorded or sent
    assert (refused.value.status_code, refused.value.message) == (404, "Trader not found.")
    assert (Execution.objects.count(), Order.objects.count()) == (0, 0)


@pytest.mark.parametrize("status", ["pending", "running", "voting", "cancelled", "failed"])
def test_only_a_completed_debate_is_executed(user, paper_trader, status):
    # given a debate that is not completed, with a decision
    debate = DebateFactory(owner=user, status=status)
    DecisionFactory(debate=debate)
    # when its execution is requested
    with pytest.raises(InvalidState) as refused:
        execution_request(owner=user, debate_id=debate.pk, trader_id=paper_trader.pk)
    # then it is refused as a 409 invalid_state, and nothing is recorded
    assert (refused.value.status_code, refused.value.code) == (409, "invalid_state")
    assert Execution.objects.count() == 0


@pytest.mark.parametrize("action", ["hold", "wait"])
def test_hold_and_wait_are_not_executable(user, paper_trader, make_decision, action):
    # given a primary decision that holds or waits
    decision = make_decision(action=action)
    # when its execution is requested
    with pytest.raises(NotExecutable) as refused:
        execution_request(owner=user, debate_id=decision.debate_id, trader_id=paper_trader.pk)
    # then it is refused as not_executable, and nothing is recorded
    assert (refused.value.status_code, refused.value.code) == (409, "not_executable")
    assert refused.value.message == (
        f"The decision on BTCUSDT is {action}: only open and close decisions are executed."
    )
    assert Execution.objects.count() == 0


def test_a_stopped_trader_is_refused(user, make_decision):
    # given a stopped trader
    decision = make_decision()
    trader = TraderFactory(owner=user, status="stopped", name="Sleepy")
    # when an execution on it is requested
    with pytest.raises(TraderStopped) as refused:
        execution_request(owner=user, debate_id=decision.debate_id, trader_id=trader.pk)
    # then it is refused as trader_stopped (a kind of not_executable), nothing recorded
    assert (refused.value.status_code, refused.value.code) == (409, "trader_stopped")
    assert isinstance(refused.value, NotExecutable)
    assert refused.value.message == "Trader Sleepy is stopped."
    assert Execution.objects.count() == 0


def test_a_decision_executed_on_another_trader_is_already_executed(
    user, paper_trader, make_decision
):
    # given a decision executed on one trader
    decision = make_decision()
    first = execution_request(owner=user, debate_id=decision.debate_id, trader_id=paper_trader.pk)
    other = TraderFactory(owner=user)
    # when it is requested on another trader
    with pytest.raises(AlreadyExecuted) as refused:
        execution_request(owner=user, debate_id=decision.debate_id, trader_id=other.pk)
    # then it is refused as already_executed, and the first execution is untouched
    assert (refused.value.status_code, refused.value.code) == (409, "already_executed")
    assert list(Execution.objects.values_list("pk", "trader_id")) == [(first.pk, paper_trader.pk)]


def test_a_coin_without_a_decision_is_not_found(user, paper_trader, make_decision):
    # given a debate with a BTC decision only
    decision = make_decision()
    # when DOGE is asked for
    with pytest.raises(NotFound) as refused:
        execution_request(
            owner=user, debate_id=decision.debate_id, trader_id=paper_trader.pk, symbol="DOGE"
        )
    # then there is no such decision
    assert refused.value.message == "The debate has no decision on DOGEUSDT."


def test_a_malformed_symbol_is_a_validation_error(user, paper_trader, make_decision):
    # given a debate
    decision = make_decision()
    # when the symbol is not a symbol
    with pytest.raises(ValidationError) as refused:
        execution_request(
            owner=user, debate_id=decision.debate_id, trader_id=paper_trader.pk, symbol="??"
        )
    # then the field is named
    assert list(refused.value.fields) == ["symbol"]


def test_only_unfinished_executions_are_resubmitted(
    user, paper_trader, make_decision, django_capture_on_commit_callbacks
):
    # given a pending execution and a filled one
    pending = execution_request(
        owner=user, debate_id=make_decision().debate_id, trader_id=paper_trader.pk
    )
    filled = execution_request(
        owner=user, debate_id=make_decision().debate_id, trader_id=paper_trader.pk
    )
    Execution.objects.filter(pk=filled.pk).update(status="filled")
    # when an operator resubmits both
    with django_capture_on_commit_callbacks() as enqueued:
        answers = [execution_resubmit(execution_id=e.pk) for e in (pending, filled)]
    # then only the pending one goes back to the workers
    assert answers == [True, False]
    assert len(enqueued) == 1
