"""An automatic execution on a real-money account waits for its owner's approval: approved
it is sent once, rejected or lapsed (by time or by staleness) nothing is sent."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from arena.exceptions import InvalidState
from tests.threads import outcomes_at_once, results_at_once
from tests.traders.test_ccxt import placed
from traders.models import Execution
from traders.services import execution_request, execution_submit
from traders.services.approvals import execution_approve, execution_reject, executions_lapse

pytestmark = pytest.mark.django_db


def auto(user, trader, decision) -> Execution:
    return execution_request(
        owner=user, debate_id=decision.debate_id, trader_id=trader.pk, trigger="auto"
    )


def test_an_automatic_execution_on_an_exchange_account_waits_for_approval(
    user, binance_trader, fake_exchange, make_decision, django_capture_on_commit_callbacks
):
    # when an automatic execution is requested on an exchange account requiring approval
    with django_capture_on_commit_callbacks(execute=False) as sent:
        execution = auto(user, binance_trader, make_decision())
    # then it awaits approval for ten minutes, and nothing is sent or enqueued
    assert execution.status == "awaiting_approval"
    wait = execution.approval_deadline - timezone.now()
    assert timedelta(minutes=9) < wait <= timedelta(minutes=10)
    assert placed(fake_exchange) == []
    assert not [c for c in sent if "execution_submit" in repr(getattr(c, "func", c))]


def test_a_manual_execution_and_a_paper_account_never_wait(
    user, binance_trader, paper_trader, make_decision
):
    manual = execution_request(
        owner=user, debate_id=make_decision().debate_id, trader_id=binance_trader.pk
    )
    paper = auto(user, paper_trader, make_decision())
    assert (manual.status, paper.status) == ("pending", "pending")


def test_an_approved_execution_is_sent(user, binance_trader, fake_exchange, make_decision):
    execution = auto(user, binance_trader, make_decision())
    approved = execution_approve(execution_id=execution.pk, owner=user)
    assert (approved.status, approved.approval_deadline) == ("pending", None)
    filled = execution_submit(execution_id=execution.pk)
    assert filled.status == "filled"
    assert len(placed(fake_exchange)) == 1


def test_a_rejected_execution_sends_nothing_and_cannot_be_approved(
    user, binance_trader, fake_exchange, make_decision
):
    execution = auto(user, binance_trader, make_decision())
    rejected = execution_reject(execution_id=execution.pk, owner=user)
    assert (rejected.status, rejected.error) == ("rejected", "Rejected by its owner.")
    with pytest.raises(InvalidState):
        execution_approve(execution_id=execution.pk, owner=user)
    assert Execution.objects.get(pk=execution.pk).status == "rejected"
    assert placed(fake_exchange) == []


def test_an_execution_not_approved_in_time_lapses(
    user, binance_trader, fake_exchange, make_decision
):
    # given an execution awaiting approval
    execution = auto(user, binance_trader, make_decision())
    deadline = execution.approval_deadline
    # when the lapse sweep runs just before its deadline, then at it
    assert executions_lapse(now=deadline - timedelta(seconds=1)) == []
    assert executions_lapse(now=deadline) == [execution.pk]
    # then it lapsed, cannot be approved, and nothing was sent
    lapsed = Execution.objects.get(pk=execution.pk)
    assert (lapsed.status, lapsed.error) == ("lapsed", "Not approved in time.")
    with pytest.raises(InvalidState):
        execution_approve(execution_id=execution.pk, owner=user)
    assert placed(fake_exchange) == []


def test_an_execution_whose_decision_went_stale_lapses_at_its_approval(
    user, binance_trader, fake_exchange, make_decision
):
    # given an execution awaiting approval, whose debate's snapshot is by now days old
    execution = auto(user, binance_trader, make_decision())
    debate = execution.decision.debate
    debate.market_snapshot = {"as_of": "2024-09-01T00:00Z", "coins": []}
    debate.save(update_fields=["market_snapshot"])
    # when it is approved
    with pytest.raises(InvalidState) as refused:
        execution_approve(execution_id=execution.pk, owner=user)
    # then it lapsed with the staleness guard's reason, and nothing was sent
    lapsed = Execution.objects.get(pk=execution.pk)
    assert lapsed.status == "lapsed"
    assert lapsed.error.startswith("The decision on BTCUSDT is stale: ")
    assert refused.value.message == f"The execution lapsed: {lapsed.error}"
    assert placed(fake_exchange) == []


@pytest.mark.django_db(transaction=True)
def test_twenty_concurrent_approvals_send_one_order(
    user, binance_trader, fake_exchange, make_decision, monkeypatch
):
    # given an execution awaiting approval, its submissions recorded as they commit
    execution = auto(user, binance_trader, make_decision())
    sent: list[tuple] = []
    monkeypatch.setattr(
        "traders.services.executions.send_on_commit",
        lambda task: transaction.on_commit(lambda: sent.append((task.name, task.args))),
    )
    # when twenty approvals arrive at once
    results = results_at_once(
        lambda: execution_approve(execution_id=execution.pk, owner=user).status, 20
    )
    # then each answered with the approved execution, one submission was sent
    assert results == ["pending"] * 20
    assert sent == [("traders.execution_submit", (execution.pk,))]
    # and, submitted by five workers at once (those the first holds off retry later),
    # one order reached the exchange
    outcomes_at_once(lambda: execution_submit(execution_id=execution.pk), 5)
    execution_submit(execution_id=execution.pk)
    assert len(placed(fake_exchange)) == 1
    assert Execution.objects.get(pk=execution.pk).status == "filled"
