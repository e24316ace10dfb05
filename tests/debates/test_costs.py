"""What model calls cost: the price table, each stored call's cost, and the spend of a
debate, a schedule, a backtest and a user, adding up exactly for scripted token usage."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from debates.models import Ballot, Debate, Message, ModelPrice
from debates.providers.base import ModelResponse
from debates.providers.pricing import Price, call_cost
from debates.selectors import debate_spend, spend_by_day
from debates.services import debate_start
from debates.services.costs import price_for, prices_forget, response_cost
from tests.api.conftest import run_steps
from tests.fakes.llm_server import Reply

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def fresh_prices():
    """Each test reads the price table it stored, not a copy read by an earlier test."""
    prices_forget()
    yield
    prices_forget()


FAKE_PRICE = {
    "input_usd_per_mtok": Decimal("0.5"),
    "cached_input_usd_per_mtok": Decimal("0.05"),
    "output_usd_per_mtok": Decimal("1.5"),
}


def test_a_call_is_priced_by_input_cached_input_cache_writes_and_output() -> None:
    # given Anthropic-like prices with a cache-write price
    price = Price(Decimal("3"), Decimal("0.3"), Decimal("15"), Decimal("3.75"))
    # when 1000 input tokens (200 read from the cache, 300 written to it) and 100 output
    cost = call_cost(
        price,
        prompt_tokens=1000,
        completion_tokens=100,
        cached_input_tokens=200,
        cache_write_tokens=300,
    )
    # then: 500 x 3 + 200 x 0.3 + 300 x 3.75 + 100 x 15 per million
    assert cost == Decimal("0.0041850000")


def test_cache_writes_cost_the_input_price_when_the_table_gives_none() -> None:
    price = Price(Decimal("1"), Decimal("0.1"), Decimal("2"))
    cost = call_cost(price, prompt_tokens=100, completion_tokens=0, cache_write_tokens=100)
    assert cost == Decimal("0.0001000000")


def test_the_catalogue_models_have_default_prices_and_the_simulated_model_is_free() -> None:
    # given the price table of a new installation (an operator's rows come first)
    prices_forget()
    # when / then: each model costs the catalogue's list price
    assert price_for(provider="deepseek", model="deepseek-flash", at=DEEPSEEK_PEAK) == Price(
        Decimal("0.30"), Decimal("0.006"), Decimal("1.20"), None
    )
    assert price_for(provider="claude", model="claude-sonnet-4-6").cache_write == Decimal("3.75")
    assert price_for(provider="simulated", model="simulated-v1").output == Decimal(0)


# A Monday at 02:00 UTC (10:00 in Beijing) is in DeepSeek's peak hours; 12:00 UTC is not.
DEEPSEEK_PEAK = datetime(2026, 12, 7, 2, tzinfo=UTC)
DEEPSEEK_OFF_PEAK = datetime(2026, 12, 7, 12, tzinfo=UTC)


def test_deepseek_costs_half_off_its_weekday_peak_hours_under_either_name() -> None:
    # given a new installation's price table
    prices_forget()
    peak = price_for(provider="deepseek", model="deepseek-flash", at=DEEPSEEK_PEAK)
    # when / then: off peak, and all of Saturday, half the peak price
    for at in (DEEPSEEK_OFF_PEAK, DEEPSEEK_PEAK - timedelta(days=2)):
        off = price_for(provider="deepseek", model="deepseek-flash", at=at)
        assert (off.input, off.cached_input, off.output) == (
            peak.input / 2,
            peak.cached_input / 2,
            peak.output / 2,
        )
    # and the legacy name is the same model at the same prices
    assert price_for(provider="deepseek", model="deepseek-v4-flash", at=DEEPSEEK_PEAK) == peak
    # and the end of a peak span is off peak
    assert price_for(
        provider="deepseek", model="deepseek-flash", at=DEEPSEEK_PEAK.replace(hour=4)
    ) == price_for(provider="deepseek", model="deepseek-flash", at=DEEPSEEK_OFF_PEAK)


def test_a_catalogue_model_without_its_own_row_costs_its_catalogue_list_price() -> None:
    # given no stored row for OpenAI's default model
    assert not ModelPrice.objects.filter(provider="openai", model_name="gpt-6.1-terra").exists()
    # when / then: the catalogue's list price, not nothing
    assert price_for(provider="openai", model="gpt-6.1-terra") == Price(
        Decimal("1.00"), Decimal("0.05"), Decimal("5.00"), Decimal("1.25")
    )


def test_a_model_without_its_own_row_takes_its_providers_row_else_costs_nothing() -> None:
    # given a provider-wide row for openai_compatible and a row for one model
    ModelPrice.objects.create(provider="openai_compatible", model_name="", **FAKE_PRICE)
    ModelPrice.objects.create(
        provider="openai_compatible",
        model_name="big",
        input_usd_per_mtok=Decimal(9),
        cached_input_usd_per_mtok=Decimal(1),
        output_usd_per_mtok=Decimal(9),
    )
    # when / then
    assert price_for(provider="openai_compatible", model="big").input == Decimal(9)
    assert price_for(provider="openai_compatible", model="other").input == Decimal("0.5")
    assert price_for(provider="grok", model="grok-9").input == Decimal(0)


# An answer of DeepSeek's flash model to 1,000 input tokens, none from its prompt cache.
DEEPSEEK_ANSWER = ModelResponse(
    text="x",
    prompt_tokens=1000,
    completion_tokens=1000,
    latency_ms=1,
    request_id="r",
    provider="deepseek",
    model="deepseek-v4-flash",
    attempts=1,
)


@pytest.mark.parametrize("flag", ["simulated", "cached"])
def test_simulated_answers_and_cache_answers_cost_nothing(flag: str) -> None:
    response = replace(DEEPSEEK_ANSWER, **{flag: True})
    assert response_cost(response) == Decimal(0)


def _expected(prompt: int, completion: int, cached: int) -> Decimal:
    """The fake model's price, written out: 0.5 input, 0.05 cached input, 1.5 output."""
    micro = (
        (prompt - cached) * Decimal("0.5") + cached * Decimal("0.05") + completion * Decimal("1.5")
    )
    return micro / 1_000_000


def test_every_call_of_a_debate_records_its_cost_and_the_spends_add_up_exactly(
    llm, make_debate, user, api_client
) -> None:
    # given a priced fake model and six scripted usages (4 turns and 2 votes of a 2x2)
    ModelPrice.objects.create(provider="openai_compatible", model_name="fake-model", **FAKE_PRICE)
    usages = [(1000 + 7 * n, 100 + 3 * n, 100 * n) for n in range(6)]
    llm.enqueue(
        *(Reply(prompt_tokens=p, completion_tokens=c, cached_tokens=k) for p, c, k in usages)
    )
    debate = make_debate(personalities=("bull", "bear"), rounds=2)
    debate_start(debate_id=debate.pk)

    # when the debate runs
    run_steps(debate.pk)

    # then each stored call carries its own figures and cost
    stored = [
        *Message.objects.filter(debate=debate).values_list(
            "prompt_tokens", "completion_tokens", "cached_input_tokens", "cost_usd"
        ),
        *Ballot.objects.filter(debate=debate).values_list(
            "prompt_tokens", "completion_tokens", "cached_input_tokens", "cost_usd"
        ),
    ]
    assert sorted(row[:3] for row in stored) == sorted(usages)
    for prompt, completion, cached, cost in stored:
        assert cost == _expected(prompt, completion, cached)
    total = sum((_expected(*usage) for usage in usages), Decimal(0))
    assert total == Decimal("0.003345")  # (4605 x 0.5 + 1500 x 0.05 + 645 x 1.5) per million
    # and the debate's spend is their exact sum, in the selector and the API
    spend = debate_spend(debate_id=debate.pk)
    assert (spend.calls, spend.cost_usd) == (6, total)
    assert spend.prompt_tokens == sum(p for p, _, _ in usages)
    assert spend.cached_input_tokens == sum(k for _, _, k in usages)
    detail = api_client.get(f"/api/debates/{debate.pk}").json()
    assert detail["tokens"] == sum(p + c for p, c, _ in usages)
    assert Decimal(detail["cost_usd"]) == total
    assert detail["spend"]["calls"] == 6
    message = detail["messages"][0]["usage"]
    assert Decimal(message["cost_usd"]) == _expected(
        message["prompt_tokens"], message["completion_tokens"], message["cached_input_tokens"]
    )
    # and the user's spend of today holds the same figures
    today = api_client.get("/api/spend?days=2").json()["days"]
    assert [day["day"] for day in today] == [
        (datetime.now(UTC).date() - timedelta(days=1)).isoformat(),
        datetime.now(UTC).date().isoformat(),
    ]
    assert (today[0]["calls"], today[0]["cost_usd"]) == (0, "0")
    assert (today[1]["calls"], Decimal(today[1]["cost_usd"])) == (6, total)


def test_each_call_records_the_reasoning_tokens_its_provider_reports(
    llm, make_debate, api_client
) -> None:
    # given a model that spends 40 of its 120 output tokens on every call reasoning
    llm.enqueue(*(Reply(completion_tokens=120, reasoning_tokens=40) for _ in range(6)))
    debate = make_debate(personalities=("bull", "bear"), rounds=2)
    debate_start(debate_id=debate.pk)
    # when the debate runs
    run_steps(debate.pk)
    # then every turn and ballot stored them among its completion tokens, as the API shows
    rows = [
        *Message.objects.filter(debate=debate).values_list("completion_tokens", "reasoning_tokens"),
        *Ballot.objects.filter(debate=debate).values_list("completion_tokens", "reasoning_tokens"),
    ]
    assert rows == [(120, 40)] * 6
    usage = api_client.get(f"/api/debates/{debate.pk}").json()["messages"][0]["usage"]
    assert (usage["completion_tokens"], usage["reasoning_tokens"]) == (120, 40)


def test_the_spend_per_day_counts_each_call_on_its_own_utc_day(make_debate, user) -> None:
    # given calls stored yesterday and today
    debate = make_debate(personalities=("bull", "bear"), rounds=2)
    seat = debate.participants.first()
    yesterday = datetime.now(UTC) - timedelta(days=1)
    for round_number, cost in ((1, "0.25"), (2, "0.5")):
        Message.objects.create(
            debate=debate,
            participant=seat,
            round=round_number,
            message_type="analysis",
            attempts=1,
            prompt_tokens=10,
            completion_tokens=5,
            cost_usd=Decimal(cost),
        )
    Message.objects.filter(debate=debate, round=1).update(created_at=yesterday)
    # when
    days = spend_by_day(days=3, owner_id=user.pk)
    # then
    assert [(d["calls"], d["tokens"], d["cost_usd"]) for d in days] == [
        (0, 0, "0"),
        (1, 15, "0.25"),
        (1, 15, "0.5"),
    ]


def test_a_bad_number_of_days_is_refused_naming_the_field(api_client) -> None:
    response = api_client.get("/api/spend?days=0")
    assert response.status_code == 400
    assert list(response.json()["fields"]) == ["days"]


def test_a_schedules_spend_counts_only_its_own_debates(make_debate, user, api_client) -> None:
    # given a schedule with one debate that cost 0.125, and another debate
    from tests.debates.factories import ScheduleFactory

    schedule = ScheduleFactory(owner=user)
    mine, other = (make_debate(personalities=("bull", "bear")) for _ in range(2))
    mine.origin, mine.schedule = "schedule", schedule
    mine.save(update_fields=["origin", "schedule"])
    for debate in (mine, other):
        Message.objects.create(
            debate=debate,
            participant=debate.participants.first(),
            round=1,
            message_type="analysis",
            attempts=1,
            prompt_tokens=40,
            cost_usd=Decimal("0.125"),
        )
    # when
    days = api_client.get(f"/api/schedules/{schedule.pk}/spend?days=1").json()["days"]
    # then
    assert [(d["calls"], d["tokens"], d["cost_usd"]) for d in days] == [(1, 40, "0.125")]


def test_a_judge_call_stores_its_cached_input_tokens_and_cost_as_a_turn_does() -> None:
    # given the answer of a judge call that read 400 of its 1,000 input tokens from the
    # provider's prompt cache, priced at 0.00123 USD
    from debates.services.calls import CallOutcome
    from debates.services.judge import _call_fields

    response = replace(
        DEEPSEEK_ANSWER, text="scores", completion_tokens=200, latency_ms=5, cached_input_tokens=400
    )
    outcome = CallOutcome(response=response, error=None, cost_usd=Decimal("0.00123"))
    # when the judge call's columns are made
    fields = _call_fields(outcome)
    # then they hold its usage and cost like a turn's, with its answer
    assert fields["cached_input_tokens"] == 400
    assert fields["cost_usd"] == Decimal("0.00123")
    assert (fields["prompt_tokens"], fields["completion_tokens"]) == (1000, 200)
    assert (fields["status"], fields["content"]) == ("ok", "scores")


def _paid_debate(owner, **fields):
    """A completed debate of ``owner`` whose turn, ballot and judge call cost 0.01, 0.02
    and 0.04 USD, 120 tokens each; the turn was made yesterday (UTC)."""
    from tests.debates.factories import (
        BallotFactory,
        DebateFactory,
        JudgeCallFactory,
        MessageFactory,
        ParticipantFactory,
    )

    seat = ParticipantFactory(debate=DebateFactory(owner=owner, status="completed", **fields))
    usage = {"attempts": 1, "prompt_tokens": 100, "completion_tokens": 20}
    turn = MessageFactory(participant=seat, cost_usd=Decimal("0.01"), **usage)
    BallotFactory(participant=seat, cost_usd=Decimal("0.02"), **usage)
    JudgeCallFactory(debate=seat.debate, cost_usd=Decimal("0.04"), **usage)
    Message.objects.filter(pk=turn.pk).update(created_at=datetime.now(UTC) - timedelta(days=1))
    return seat.debate


def test_deleting_a_debate_leaves_what_its_calls_cost_in_the_spend(user, api_client) -> None:
    # given two paid debates of a schedule, and what the user and the schedule spent
    from tests.debates.factories import ScheduleFactory

    schedule = ScheduleFactory(owner=user)
    kept, deleted = (_paid_debate(user, schedule=schedule) for _ in range(2))
    spends = ("/api/spend?days=2", f"/api/schedules/{schedule.pk}/spend?days=2")
    before = [api_client.get(url).json()["days"] for url in spends]
    # when one debate is deleted
    response = api_client.delete(f"/api/debates/{deleted.pk}")
    # then its turns are gone, but each day's spend is what it was: the calls were paid for
    assert response.status_code == 204
    assert not Message.objects.filter(debate_id=deleted.pk).exists()
    assert [api_client.get(url).json()["days"] for url in spends] == before
    for days in before:
        assert [(d["calls"], d["tokens"], d["cost_usd"]) for d in days] == [
            (2, 240, "0.02"),
            (4, 480, "0.12"),
        ]
    # and the debate left shows only its own calls
    detail = api_client.get(f"/api/debates/{kept.pk}").json()
    assert (detail["spend"]["calls"], detail["cost_usd"]) == (3, "0.07")


def test_deleting_a_backtest_leaves_what_its_debates_calls_cost_in_the_spend(
    user, api_client
) -> None:
    # given a completed backtest with two paid debates, and what the user spent
    from backtests.models import BacktestStep
    from tests.backtests.factories import BacktestFactory

    backtest = BacktestFactory(owner=user, status="completed")
    for index in range(2):
        BacktestStep.objects.create(
            backtest=backtest, index=index, as_of=backtest.start, debate=_paid_debate(user)
        )
    before = api_client.get("/api/spend?days=2").json()["days"]
    # when the backtest is deleted
    response = api_client.delete(f"/api/backtests/{backtest.pk}")
    # then its debates are gone, and the spend of each day is what it was
    assert response.status_code == 204
    assert not Debate.objects.exists()
    assert api_client.get("/api/spend?days=2").json()["days"] == before
    assert [(d["calls"], d["cost_usd"]) for d in before] == [(2, "0.02"), (4, "0.12")]


def test_the_daily_token_cap_still_counts_the_calls_of_a_deleted_debate(user) -> None:
    # given a user capped at 400 tokens a day whose deleted debate used 240 of them today
    from debates.services import debate_delete
    from debates.services.budgets import BudgetExhausted, CallLimits, Cap, budget_reserve

    debate_delete(debate_id=_paid_debate(user).pk)
    limits = CallLimits(
        owner_id=user.pk,
        schedule_id=None,
        temperature=None,
        max_output_tokens=None,
        caps=(Cap("user", user.pk, tokens=400),),
    )
    # when the day's first call asks for 200 tokens, then / it is refused: 240 were used
    with pytest.raises(BudgetExhausted, match="240 of 400"):
        budget_reserve(limits, 200)


def test_deleting_debates_in_the_admin_leaves_what_their_calls_cost_in_the_spend(
    user, staff_user, client
) -> None:
    # given two paid debates of the user, and what the user spent
    from debates.selectors import spend_by_day

    debates = [_paid_debate(user) for _ in range(2)]
    before = spend_by_day(days=2, owner_id=user.pk)
    client.force_login(staff_user)
    # when an operator deletes one from its page and the other from the list
    client.post(f"/admin/debates/debate/{debates[0].pk}/delete/", {"post": "yes"})
    client.post(
        "/admin/debates/debate/",
        {"action": "delete_selected", "_selected_action": [debates[1].pk], "post": "yes"},
    )
    # then both are gone, and the spend of each day is what it was
    assert not Debate.objects.exists()
    assert spend_by_day(days=2, owner_id=user.pk) == before
    assert [(d["calls"], d["cost_usd"]) for d in before] == [(2, "0.02"), (4, "0.12")]


def test_the_simulated_models_tokens_are_labelled_estimates_in_each_call_and_the_spend(
    llm, make_debate, user, api_client
) -> None:
    # given a 2x2 debate of simulated seats and one of seats on the fake model server
    from debates.services import DebateInput, debate_create
    from tests.debates.factories import AIModelFactory
    from tests.strategies.factories import StrategyFactory

    model = AIModelFactory(owner=user)
    seats = [{"ai_model": model.pk, "personality": p} for p in ("bull", "bear")]
    data = DebateInput(
        name="Simulated", strategy=StrategyFactory(owner=user).pk, max_rounds=2, participants=seats
    )
    simulated = debate_create(owner=user, data=data)
    served = make_debate(personalities=("bull", "bear"), rounds=2)
    # when both run
    for debate in (simulated, served):
        debate_start(debate_id=debate.pk)
        run_steps(debate.pk)
    # then every call of the simulated seats says its tokens are estimates, and so does
    # the debate's spend for all of them; the provider's counts are not estimates
    shown = api_client.get(f"/api/debates/{simulated.pk}").json()
    assert [m["usage"]["estimated"] for m in shown["messages"]] == [True] * 4
    assert shown["spend"]["estimated_tokens"] == shown["tokens"] > 0
    other = api_client.get(f"/api/debates/{served.pk}").json()
    assert [m["usage"]["estimated"] for m in other["messages"]] == [False] * 4
    assert other["spend"]["estimated_tokens"] == 0
    # and the user's spend keeps them apart once the simulated debate is deleted
    assert api_client.delete(f"/api/debates/{simulated.pk}").status_code == 204
    today = api_client.get("/api/spend?days=1").json()["days"][0]
    assert today["estimated_tokens"] == shown["tokens"]
    assert today["tokens"] == shown["tokens"] + other["tokens"]
