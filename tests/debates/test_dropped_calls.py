"""Every call a provider answered is in the spend and its debate's cost, its answer used or
dropped: an answer arriving after its debate stopped, or after another copy of its step
stored one, is kept as a dropped call; ten debates racing a daily cap spend exactly what
the model server billed."""

from __future__ import annotations

import itertools
from decimal import Decimal

import pytest

from debates.models import (
    Debate,
    DeletedSpend,
    DroppedCall,
    Message,
    ModelPrice,
    TokenBudget,
    TokenLedger,
)
from debates.selectors import debate_spend, spend_of
from debates.services import debate_cancel, debate_prepare, debate_start, debates_delete
from debates.services.costs import prices_forget
from debates.services.steps.turns import turn_ask
from tests.debates.conftest import wait_for, wait_until_finished
from tests.fakes.llm_server import Reply
from tests.threads import in_thread, run_at_once

pytestmark = pytest.mark.django_db(transaction=True)

# Every call at the fake server reports this usage: 1,100 tokens, at the price below
# (0.5 USD a million input tokens, 1.5 output) 0.00065 USD.
USAGE = {"prompt_tokens": 1000, "completion_tokens": 100}
CALL_COST = Decimal("0.00065")


@pytest.fixture(autouse=True)
def priced(llm):
    """Price the fake model and have every call report the same usage."""
    prices_forget()
    ModelPrice.objects.create(
        provider="openai_compatible",
        model_name="fake-model",
        input_usd_per_mtok=Decimal("0.5"),
        cached_input_usd_per_mtok=Decimal("0.05"),
        output_usd_per_mtok=Decimal("1.5"),
    )
    llm.add_rule(Reply(match="## Your ", **USAGE))
    yield
    prices_forget()


def _turn_in_flight(llm, debate: Debate, *, copies: int = 1) -> list:
    """Start ``copies`` of P1's round-1 turn in threads, each call held at the server for
    a second; return the threads once every call is in flight."""
    llm.set_latency(1.0)
    debate_prepare(debate_id=debate.pk)
    seat = debate.participants.get(speak_order=0)

    def ask() -> None:  # the step's service itself, with no claim: copies may race
        turn_ask(debate_id=debate.pk, round_number=1, participant_id=seat.pk, cached_only=False)

    threads = [in_thread(ask) for _ in range(copies)]
    wait_for(lambda: llm.stats()["in_flight"] == copies, timeout=10)
    return threads


def test_an_answer_arriving_after_its_debate_was_cancelled_is_counted_and_marked(
    llm, make_debate, user
):
    # given a debate whose first turn's call is at the model server
    debate = make_debate(personalities=("bull", "bear"), rounds=2)
    debate_start(debate_id=debate.pk)
    threads = _turn_in_flight(llm, debate)
    # when the debate is cancelled before the answer arrives
    debate_cancel(debate_id=debate.pk)
    for thread in threads:
        thread.join(10)
    # then no turn was stored, but the call is kept, marked dropped, with its cost
    assert not Message.objects.filter(debate=debate).exists()
    dropped = DroppedCall.objects.get(debate=debate)
    assert (dropped.kind, dropped.round, dropped.reason, dropped.debate_status) == (
        "turn",
        1,
        "stopped",
        "cancelled",
    )
    assert (dropped.prompt_tokens, dropped.completion_tokens, dropped.cost_usd) == (
        1000,
        100,
        CALL_COST,
    )
    # and the debate's cost and its owner's spend count it as the server billed it
    stats = llm.stats()
    assert (stats["billed_calls"], stats["billed_tokens"]) == (1, 1100)
    for spend in (debate_spend(debate_id=debate.pk), spend_of(owner_id=user.pk)):
        assert (spend.calls, spend.tokens, spend.cost_usd) == (1, 1100, CALL_COST)
        assert (spend.dropped_calls, spend.dropped_cost_usd) == (1, CALL_COST)


def test_the_second_copy_of_a_turn_is_counted_as_a_dropped_duplicate(llm, make_debate):
    # given two copies of one turn whose calls are both at the model server
    debate = make_debate(personalities=("bull", "bear"), rounds=2)
    debate_start(debate_id=debate.pk)
    threads = _turn_in_flight(llm, debate, copies=2)
    # when both answers arrive
    for thread in threads:
        thread.join(10)
    # then one turn is stored and the other call is kept as a duplicate
    assert Message.objects.filter(debate=debate).count() == 1
    dropped = DroppedCall.objects.get(debate=debate)
    assert (dropped.reason, dropped.debate_status) == ("duplicate", "running")
    spend = debate_spend(debate_id=debate.pk)
    assert (spend.calls, spend.dropped_calls, spend.cost_usd) == (2, 1, 2 * CALL_COST)


def test_an_answer_arriving_after_its_debate_was_deleted_stays_in_its_owners_spend(
    llm, make_debate, user
):
    # given a debate whose first turn's call is at the model server
    debate = make_debate(personalities=("bull", "bear"), rounds=2)
    debate_start(debate_id=debate.pk)
    threads = _turn_in_flight(llm, debate)
    # when the debate is deleted before the answer arrives
    debates_delete(debates=Debate.objects.filter(pk=debate.pk))
    for thread in threads:
        thread.join(10)
    # then the call is in the owner's deleted spend, marked dropped
    kept = DeletedSpend.objects.get(owner=user)
    assert (kept.calls, kept.prompt_tokens, kept.cost_usd, kept.dropped_calls) == (
        1,
        1000,
        CALL_COST,
        1,
    )
    spend = spend_of(owner_id=user.pk)
    assert (spend.calls, spend.tokens, spend.dropped_cost_usd) == (1, 1100, CALL_COST)


def test_ten_debates_racing_a_daily_token_cap_spend_what_the_model_server_billed(
    celery_worker, llm, make_debate, user, settings
):
    # given ten 2x2 debates of one user whose daily cap holds about a dozen calls, each
    # call taking 200 ms, so that answers arrive while other calls exhaust the cap
    settings.QUOTA_ACTIVE_DEBATES = 15
    llm.set_latency(0.2)
    TokenBudget.objects.create(owner=user, daily_token_cap=12 * 1100 + 5_000)
    debates = [make_debate(personalities=("bull", "bear"), rounds=2) for _ in range(10)]
    ids = itertools.count()
    # when they start at once and the workers run them
    run_at_once(lambda: debate_start(debate_id=debates[next(ids)].pk), 10)
    finished = [wait_until_finished(debate.pk, timeout=120) for debate in debates]
    wait_for(lambda: llm.stats()["in_flight"] == 0, timeout=10)
    # then the user's spend and the sum of the debates' costs are what the server billed
    assert {d.status for d in finished} <= {"completed", "failed"}
    billed = llm.stats()
    wait_for(lambda: spend_of(owner_id=user.pk).calls == billed["billed_calls"], timeout=10)
    spend = spend_of(owner_id=user.pk)
    assert (spend.calls, spend.tokens) == (billed["billed_calls"], billed["billed_tokens"])
    assert spend.cost_usd == billed["billed_calls"] * CALL_COST
    costs = [debate_spend(debate_id=debate.pk) for debate in debates]
    assert sum(c.tokens for c in costs) == billed["billed_tokens"]
    assert sum(c.cost_usd for c in costs) == spend.cost_usd
    # and every dropped call among them is marked so, and the day's token ledger, which
    # settles each call as it is answered, holds the same tokens
    assert spend.dropped_calls == DroppedCall.objects.filter(debate__owner=user).count()
    ledger = TokenLedger.objects.get(scope="user", scope_id=user.pk)
    assert ledger.used_tokens == billed["billed_tokens"]
