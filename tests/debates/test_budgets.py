"""Daily caps: past a user's or a schedule's hard cap on tokens, or a user's in USD, no
model call starts and the debate fails with ``budget_exhausted`` and the figures, however
many debates race for the last tokens or cents of the day."""

from __future__ import annotations

import dataclasses
import itertools
import threading
from decimal import Decimal

import pytest

from debates.models import Debate, ModelPrice, TokenBudget, TokenLedger
from debates.providers.base import ModelRequest, ProviderConfig
from debates.selectors import spend_of
from debates.services import debate_start
from debates.services.budgets import (
    BudgetExhausted,
    CallLimits,
    Cap,
    budget_reserve,
    most_cost,
    most_tokens,
)
from debates.services.costs import prices_forget
from tests.api.conftest import run_steps
from tests.debates.conftest import wait_until_finished
from tests.debates.factories import ScheduleFactory
from tests.fakes.llm_server import Reply
from tests.threads import run_at_once

# Every call at the fake server reports this many tokens, prompt plus completion.
CALL_TOKENS = 1000 + 100
# USD per million tokens: the fake model's price, and cache writes dearer than its input.
PRICE = {
    "input_usd_per_mtok": Decimal("0.5"),
    "cached_input_usd_per_mtok": Decimal("0.05"),
    "output_usd_per_mtok": Decimal("1.5"),
}
WRITES = {"cache_write_usd_per_mtok": Decimal("0.75")}


@pytest.fixture
def priced(db):
    """Price the fake model (0.5 USD a million input tokens, 1.5 output), read afresh."""
    prices_forget()
    ModelPrice.objects.create(provider="openai_compatible", model_name="fake-model", **PRICE)
    yield
    prices_forget()


def every_call_reports_fixed_usage(llm) -> None:
    llm.add_rule(Reply(match="## Your ", prompt_tokens=1000, completion_tokens=100))


@pytest.mark.parametrize(
    ("model", "kind", "output"),
    [
        ("gpt-6.1-terra", "turn", 2000 + 8192),
        ("gpt-6.1-terra", "vote", 2000 + 1024),
        ("gpt-4.1", "turn", 2000),
    ],
)
def test_a_call_reserves_its_prompt_and_the_output_cap_it_is_sent(model, kind, output):
    # given a 30-character prompt and a 2,000-token answer cap, on a reasoning model
    # (room for reasoning at the call's effort in the cap it is sent) and on another
    config = ProviderConfig("openai", model, max_tokens=2000)
    request = ModelRequest(system="s" * 12, user="u" * 18, kind=kind)
    # when / then: ten tokens of prompt (three characters a token) and the cap sent
    assert most_tokens(config, request) == 10 + output


@pytest.mark.django_db
def test_a_call_may_cost_at_most_its_reserved_tokens_at_the_dearest_input_price(priced):
    # given a 30-character prompt (10 tokens) and a 2,000-token answer cap
    request = ModelRequest(system="s" * 12, user="u" * 18)
    fake = ProviderConfig("openai_compatible", "fake-model", max_tokens=2000)
    # and a model whose cache writes cost more than its input, as Anthropic's do
    ModelPrice.objects.create(provider="claude", model_name="dear", **PRICE, **WRITES)
    dear = ProviderConfig("claude", "dear", max_tokens=2000)
    # when / then: 10 x 0.5 + 2,000 x 1.5 per million; the input at the cache-write 0.75
    assert most_cost(fake, request) == Decimal("0.003005")
    assert most_cost(dear, request) == Decimal("0.0030075")
    # and the simulated model costs nothing
    assert most_cost(ProviderConfig("simulated", ""), request) == 0


@pytest.mark.django_db
@pytest.mark.parametrize("scope", ["user", "schedule"])
def test_past_the_cap_no_call_starts_and_the_debate_fails_with_the_figures(
    llm, make_debate, user, scope
):
    # given a debate whose user, or schedule, has no tokens left today
    debate = make_debate(personalities=("bull", "bear"), rounds=2)
    if scope == "user":
        TokenBudget.objects.create(owner=user, daily_token_cap=0)
    else:
        Debate.objects.filter(pk=debate.pk).update(
            origin="schedule", schedule=ScheduleFactory(owner=user, daily_token_cap=0)
        )
    debate_start(debate_id=debate.pk)
    # when it runs
    run_steps(debate.pk)
    # then not one call reached the model server, and the debate failed saying why
    debate.refresh_from_db()
    assert llm.requests == []
    assert debate.status == "failed"
    assert debate.error["code"] == "budget_exhausted"
    assert debate.error["step"] == "round 1 turn"
    assert debate.error["message"].startswith(
        f"The daily token cap of this {scope} is reached: 0 of 0 tokens used today (UTC), "
        "and the next call may use up to "
    )


@pytest.mark.django_db
def test_past_the_usd_cap_no_call_starts_and_the_debate_fails_with_the_figures(
    llm, make_debate, user, priced
):
    # given a debate of priced models whose user may spend nothing today
    debate = make_debate(personalities=("bull", "bear"), rounds=2)
    TokenBudget.objects.create(owner=user, daily_usd_cap=Decimal(0))
    debate_start(debate_id=debate.pk)
    # when it runs
    run_steps(debate.pk)
    # then not one call reached the model server, and the debate failed saying why
    debate.refresh_from_db()
    assert llm.requests == []
    assert (debate.status, debate.error["code"]) == ("failed", "budget_exhausted")
    assert debate.error["message"].startswith(
        "The daily USD cap of this user is reached: 0 of 0 USD spent today (UTC), "
        "and the next call may cost up to 0.00"
    )


@pytest.mark.django_db
def test_a_usd_cap_stops_a_debate_once_its_calls_have_spent_it(llm, make_debate, user, priced):
    # given calls of 0.0035 USD each (1,000 tokens in, 2,000 out), each reserving about
    # 0.005 before it goes out, under a cap of 0.009 USD a day
    llm.add_rule(Reply(match="## Your ", prompt_tokens=1000, completion_tokens=2000))
    TokenBudget.objects.create(owner=user, daily_usd_cap=Decimal("0.009"))
    debate = make_debate(personalities=("bull", "bear"), rounds=2)
    debate_start(debate_id=debate.pk)
    # when it runs
    run_steps(debate.pk)
    # then the two openings went out, and the first rebuttal could not: it might have
    # cost more than the 0.002 USD left
    debate.refresh_from_db()
    assert len(llm.requests) == 2
    assert (debate.status, debate.error["step"]) == ("failed", "round 2 turn")
    assert debate.error["message"].startswith(
        "The daily USD cap of this user is reached: 0.007 of 0.009 USD spent today (UTC), "
        "and the next call may cost up to 0.00"
    )
    # and the day's ledger holds exactly what the calls cost, as the spend does
    ledger = TokenLedger.objects.get(scope="user", scope_id=user.pk)
    assert ledger.used_usd == spend_of(owner_id=user.pk).cost_usd == Decimal("0.007")


@pytest.mark.django_db
def test_simulated_models_run_under_a_usd_cap_of_nothing(user):
    # given a user who may spend nothing, and a debate of simulated seats
    from debates.services import DebateInput, debate_create
    from tests.debates.factories import AIModelFactory
    from tests.strategies.factories import StrategyFactory

    TokenBudget.objects.create(owner=user, daily_usd_cap=Decimal(0))
    seats = [
        {"ai_model": AIModelFactory(owner=user).pk, "personality": p} for p in ("bull", "bear")
    ]
    strategy = StrategyFactory(owner=user).pk
    data = DebateInput(name="Free", strategy=strategy, max_rounds=2, participants=seats)
    debate = debate_create(owner=user, data=data)
    debate_start(debate_id=debate.pk)
    # when it runs / then it completes: the simulated model costs nothing
    assert run_steps(debate.pk).status == "completed"


@pytest.mark.django_db
def test_a_debate_under_its_cap_runs_and_the_ledger_counts_what_each_call_used(
    llm, make_debate, user
):
    # given a cap far above what a 2x2 debate uses
    every_call_reports_fixed_usage(llm)
    TokenBudget.objects.create(owner=user, daily_token_cap=10_000_000)
    debate = make_debate(personalities=("bull", "bear"), rounds=2)
    debate_start(debate_id=debate.pk)
    # when it runs
    run_steps(debate.pk)
    # then it completed, and the day's ledger holds exactly what its six calls used
    assert Debate.objects.get(pk=debate.pk).status == "completed"
    assert len(llm.requests) == 6
    assert TokenLedger.objects.get(scope="user", scope_id=user.pk).used_tokens == 6 * CALL_TOKENS


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    ("cap", "tokens", "usd", "ledger"),
    [
        (Cap("user", 0, tokens=10 * 777), 777, Decimal(0), (Decimal(0), 7770)),
        (Cap("user", 0, usd=Decimal("0.10")), 100, Decimal("0.01"), (Decimal("0.10"), 1000)),
    ],
    ids=["tokens", "usd"],
)
def test_concurrent_reservations_never_pass_the_cap(user, cap, tokens, usd, ledger):
    # given a cap of ten reservations (of tokens, or of a cent) and fifty calls wanting
    # one each
    limits = CallLimits(
        owner_id=user.pk,
        schedule_id=None,
        temperature=None,
        max_output_tokens=None,
        caps=(dataclasses.replace(cap, scope_id=user.pk),),
    )
    granted, refused = [], []
    lock = threading.Lock()

    def reserve() -> None:
        try:
            budget_reserve(limits, tokens, usd)
            outcome = granted
        except BudgetExhausted:
            outcome = refused
        with lock:
            outcome.append(1)

    # when they race
    run_at_once(reserve, 50)
    # then exactly ten were granted, and the ledger counts what they reserved
    assert (len(granted), len(refused)) == (10, 40)
    found = TokenLedger.objects.get(scope="user", scope_id=user.pk)
    assert (found.used_usd, found.used_tokens) == ledger


def test_twenty_debates_started_at_once_against_one_cap_never_pass_it(
    celery_worker, llm, make_debate, user, settings
):
    # given twenty 2x2 debates of one user whose cap holds a dozen calls
    settings.QUOTA_ACTIVE_DEBATES = 25
    every_call_reports_fixed_usage(llm)
    cap = 12 * CALL_TOKENS + 5_000
    TokenBudget.objects.create(owner=user, daily_token_cap=cap)
    debates = [make_debate(personalities=("bull", "bear"), rounds=2) for _ in range(20)]
    ids = itertools.count()

    # when they are all started at once and the workers run them
    run_at_once(lambda: debate_start(debate_id=debates[next(ids)].pk), 20)
    finished = [wait_until_finished(debate.pk, timeout=120) for debate in debates]

    # then what reached the model server stays under the cap, the ledger counts exactly
    # that, and every debate that could not go on failed for its budget
    used = TokenLedger.objects.get(scope="user", scope_id=user.pk).used_tokens
    assert len(llm.requests) >= 1
    assert used == len(llm.requests) * CALL_TOKENS <= cap
    outcomes = {(d.status, (d.error or {}).get("code")) for d in finished}
    assert outcomes <= {("completed", None), ("failed", "budget_exhausted")}
    assert ("failed", "budget_exhausted") in outcomes
    # and a debate started now fails without a call
    late = make_debate(personalities=("bull", "bear"), rounds=2)
    before = len(llm.requests)
    debate_start(debate_id=late.pk)
    assert wait_until_finished(late.pk).error["code"] == "budget_exhausted"
    assert len(llm.requests) == before


@pytest.mark.django_db
def test_a_cap_set_during_the_day_counts_the_calls_made_before_it(llm, make_debate, user):
    # given a debate run today before any cap, whose six calls used 6 x 1100 tokens
    every_call_reports_fixed_usage(llm)
    first = make_debate(personalities=("bull", "bear"), rounds=2)
    debate_start(debate_id=first.pk)
    run_steps(first.pk)
    # when a cap is set that those calls already used up, and another debate runs
    TokenBudget.objects.create(owner=user, daily_token_cap=6 * CALL_TOKENS + 100)
    second = make_debate(personalities=("bull", "bear"), rounds=2)
    debate_start(debate_id=second.pk)
    run_steps(second.pk)
    # then it made no call and failed with the day's figures
    second.refresh_from_db()
    assert len(llm.requests) == 6
    assert second.error["code"] == "budget_exhausted"
    assert "6,600 of 6,700 tokens used today" in second.error["message"]
