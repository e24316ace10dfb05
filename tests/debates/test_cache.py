"""The durable model-call cache: a call made before is answered from PostgreSQL, with no
model call, zero latency and zero tokens; a call differing in any character is not."""

from __future__ import annotations

from dataclasses import replace
from decimal import Decimal

import pytest

from debates.models import Ballot, Debate, Decision, Message, ModelAnswer, Schedule
from debates.providers.base import ModelRequest, ProviderConfig
from debates.providers.catalog import capabilities_for
from debates.services import debate_start
from debates.services.answers import call_fingerprint
from debates.services.calls import call_model
from debates.services.schedules import schedule_create, schedule_fire
from tests.debates.conftest import wait_until_finished
from tests.debates.factories import AIModelFactory
from tests.fakes.llm_server import Reply
from tests.strategies.factories import StrategyFactory

CONFIG = ProviderConfig(
    provider="openai_compatible",
    model_name="fake-model",
    api_key="sk-not-part-of-the-key",
    base_url="http://127.0.0.1:9/v1",
    temperature=0.7,
    max_tokens=2000,
)
REQUEST = ModelRequest(system="You are P1, the bull.", user="BTCUSDT 1h: price 57,970.9.")


@pytest.mark.parametrize(
    ("config", "request_"),
    [
        (replace(CONFIG, provider="deepseek"), REQUEST),
        (replace(CONFIG, base_url="http://127.0.0.1:10/v1"), REQUEST),
        (replace(CONFIG, model_name="fake-model-2"), REQUEST),
        (replace(CONFIG, temperature=0.2), REQUEST),
        (replace(CONFIG, max_tokens=1999), REQUEST),
        (replace(CONFIG, output_mode="json_schema"), REQUEST),
        (CONFIG, replace(REQUEST, system="You are P1, the bull!")),
        (CONFIG, replace(REQUEST, user="BTCUSDT 1h: price 57,970.8.")),
        (CONFIG, replace(REQUEST, sample=1)),
    ],
    ids=[
        "provider",
        "base_url",
        "model",
        "temperature",
        "max_tokens",
        "output_mode",
        "system",
        "user",
        "sample",
    ],
)
def test_a_call_differing_in_anything_that_decides_its_answer_has_another_fingerprint(
    config, request_
):
    # given the call, with one thing that decides its answer changed
    # when both are fingerprinted / then they differ
    assert call_fingerprint(config, request_) != call_fingerprint(CONFIG, REQUEST)


def test_what_the_capabilities_send_is_in_the_fingerprint_and_nothing_else_of_them():
    # given a reasoning model, asked at low effort for its votes and the provider's own
    # for its turns, and the same model overridden to take no temperature
    reasoning = capabilities_for("openai", "gpt-6.1-terra")
    config = replace(CONFIG, provider="openai", model_name="gpt-6.1-terra", capabilities=reasoning)
    vote = replace(REQUEST, kind="vote")
    fixed = replace(
        CONFIG, capabilities=CONFIG.effective_capabilities.merged({"temperature": "absent"})
    )
    # when calls differing in what is sent are fingerprinted / then they differ
    assert call_fingerprint(config, vote) != call_fingerprint(config, REQUEST)
    assert call_fingerprint(fixed, REQUEST) != call_fingerprint(CONFIG, REQUEST)
    # and where nothing sent differs (no temperature either way), they do not
    assert call_fingerprint(fixed, REQUEST) == call_fingerprint(
        replace(fixed, temperature=0.2), REQUEST
    )


def test_the_output_cap_sent_reasoning_allowance_included_is_in_the_fingerprint():
    # given a reasoning model whose medium effort (its turns') is given another budget
    reasoning = capabilities_for("openai", "gpt-6.1-terra")
    config = replace(CONFIG, provider="openai", model_name="gpt-6.1-terra", capabilities=reasoning)
    budget = dict(reasoning.reasoning_budget) | {"medium": 4096}
    other = replace(config, capabilities=reasoning.merged({"reasoning_budget": budget}))
    vote = replace(REQUEST, kind="vote")
    # when a turn is fingerprinted under both / then the caps sent differ, and so do they
    assert call_fingerprint(other, REQUEST) != call_fingerprint(config, REQUEST)
    # and a vote, at low effort under both, is sent the same cap: the same fingerprint
    assert call_fingerprint(other, vote) == call_fingerprint(config, vote)


def test_the_key_the_deadline_and_the_structured_context_are_not_in_the_fingerprint():
    # given the same call with another key, deadline, kind and seed
    other = replace(CONFIG, api_key="sk-another", timeout_s=5.0)
    # when both are fingerprinted / then they are the same call
    assert call_fingerprint(other, replace(REQUEST, kind="vote", seed=7)) == call_fingerprint(
        CONFIG, REQUEST
    )


def fake_config(llm) -> ProviderConfig:
    return replace(CONFIG, base_url=f"{llm.url}/v1", timeout_s=10.0)


@pytest.mark.django_db
def test_use_answers_a_repeated_call_from_the_cache_without_calling(llm):
    # given a call answered by the model with the cache in use
    config = fake_config(llm)
    first = call_model(config, REQUEST, still_wanted=lambda: True, cache="use")
    assert len(llm.requests) == 1
    # when the same call is made again
    again = call_model(config, REQUEST, still_wanted=lambda: True, cache="use")
    # then the model is not called, and the answer is the stored one, with no cost
    assert len(llm.requests) == 1
    assert again.response.text == first.response.text
    assert first.response.cached is False and again.response.cached is True
    assert (again.response.prompt_tokens, again.response.completion_tokens) == (0, 0)
    assert (again.response.latency_ms, again.response.attempts) == (0, 0)
    stored = ModelAnswer.objects.get()
    assert stored.fingerprint == call_fingerprint(config, REQUEST)
    assert stored.prompt_tokens == first.response.prompt_tokens


@pytest.mark.django_db
def test_an_answer_from_the_cache_keeps_what_the_call_it_repeats_took(llm):
    # given a priced model's call of 1,000 input and 200 output tokens, kept in the cache
    config = replace(fake_config(llm), provider="openai", model_name="gpt-5-mini")
    llm.enqueue(Reply(prompt_tokens=1000, completion_tokens=200))
    first = call_model(config, REQUEST, still_wanted=lambda: True, cache="use")
    # when the same call is answered from the cache
    again = call_model(config, REQUEST, still_wanted=lambda: True, cache="use")
    # then it bills nothing, and keeps the tokens and cost of the call it repeats
    cost = Decimal("0.0006500000")  # 1,000 x 0.25 + 200 x 2.00 per million, at any hour
    billed = ("prompt_tokens", "completion_tokens", "cost_usd", "answer_tokens", "answer_cost_usd")
    assert [first.usage_fields()[name] for name in billed] == [1000, 200, cost, 1200, cost]
    assert [again.usage_fields()[name] for name in billed] == [0, 0, Decimal(0), 1200, cost]
    assert ModelAnswer.objects.get().cost_usd == cost


@pytest.mark.django_db
def test_refresh_calls_again_and_keeps_the_new_answer(llm):
    # given a stored answer
    config = fake_config(llm)
    call_model(config, REQUEST, still_wanted=lambda: True, cache="use")
    llm.enqueue(Reply.answer("<reasoning>new</reasoning><decision>[]</decision>"))
    # when the call is made with refresh, then with use
    refreshed = call_model(config, REQUEST, still_wanted=lambda: True, cache="refresh")
    used = call_model(config, REQUEST, still_wanted=lambda: True, cache="use")
    # then refresh called the model and replaced the answer, which use then gives
    assert len(llm.requests) == 2
    assert refreshed.response.cached is False
    assert used.response.cached is True
    assert used.response.text == refreshed.response.text == ModelAnswer.objects.get().text


@pytest.mark.django_db
def test_off_neither_reads_nor_writes_the_cache(llm):
    # given a stored answer
    config = fake_config(llm)
    call_model(config, REQUEST, still_wanted=lambda: True, cache="use")
    # when the call is made twice with the cache off
    for _ in range(2):
        outcome = call_model(config, REQUEST, still_wanted=lambda: True, cache="off")
        assert outcome.response.cached is False
    # then the model answered both times and nothing more was stored
    assert len(llm.requests) == 3
    assert ModelAnswer.objects.count() == 1


@pytest.mark.django_db
def test_a_failed_call_is_not_cached(llm):
    # given a model answering 400
    llm.enqueue(Reply.error(400, "bad request"))
    # when a call fails with the cache in use
    outcome = call_model(fake_config(llm), REQUEST, still_wanted=lambda: True, cache="use")
    # then nothing is stored
    assert outcome.error is not None
    assert not ModelAnswer.objects.exists()


def stored_calls(debate: Debate) -> list:
    """Return each stored turn and ballot of ``debate`` as (cached, latency, tokens)."""
    rows = [*Message.objects.filter(debate=debate), *Ballot.objects.filter(debate=debate)]
    return [(r.cached, r.latency_ms, r.prompt_tokens + r.completion_tokens) for r in rows]


def decisions_of(debate: Debate | int) -> list:
    fields = ("symbol", "action", "confidence", "leverage", "position_pct", "stop_loss")
    return list(Decision.objects.filter(debate=debate).order_by("symbol").values_list(*fields))


@pytest.mark.django_db(transaction=True)
def test_a_debate_run_again_with_use_makes_no_model_call(celery_worker, llm, make_debate):
    # given a 3x2 debate run with the cache in use
    first = make_debate(rounds=2, cache="use")
    debate_start(debate_id=first.pk)
    assert wait_until_finished(first.pk).status == "completed"
    calls = len(llm.requests)
    assert calls == 9
    # when the same debate is made and run again
    again = make_debate(rounds=2, cache="use")
    debate_start(debate_id=again.pk)
    finished = wait_until_finished(again.pk)
    # then no model was called, every turn and ballot is cached at no cost, and the
    # decisions are the same
    assert finished.status == "completed"
    assert len(llm.requests) == calls
    assert stored_calls(again) == [(True, 0, 0)] * 9
    assert all(cached is False for cached, *_ in stored_calls(first))
    assert decisions_of(again) == decisions_of(first)
    contents = sorted(Message.objects.filter(debate=again).values_list("content", flat=True))
    assert contents == sorted(
        Message.objects.filter(debate=first).values_list("content", flat=True)
    )


@pytest.mark.django_db(transaction=True)
def test_one_character_of_the_custom_prompt_makes_every_call_again(celery_worker, llm, make_debate):
    # given a debate run with the cache in use
    first = make_debate(rounds=2, cache="use")
    debate_start(debate_id=first.pk)
    assert wait_until_finished(first.pk).status == "completed"
    # when the same debate runs with one character more in its strategy's custom prompt
    again = make_debate(rounds=2, cache="use")
    again.strategy.custom_prompt += "."
    again.strategy.save()
    debate_start(debate_id=again.pk)
    assert wait_until_finished(again.pk).status == "completed"
    # then every call went to the model again
    assert len(llm.requests) == 18
    assert all(cached is False for cached, *_ in stored_calls(again))


@pytest.mark.django_db
def test_a_schedules_debates_take_its_cache_mode(user):
    # given a schedule with the cache in use
    model = AIModelFactory(owner=user, provider="simulated")
    schedule = schedule_create(
        owner=user,
        data={
            "name": "Cached",
            "strategy": StrategyFactory(owner=user).pk,
            "participants": [
                {"ai_model": model.pk, "personality": "bull"},
                {"ai_model": model.pk, "personality": "bear"},
            ],
            "cache": "use",
        },
    )
    assert Schedule.objects.get(pk=schedule.pk).cache == "use"
    # when it fires
    firing = schedule_fire(schedule_id=schedule.pk)
    # then its debate uses the cache
    assert Debate.objects.get(pk=firing.debate_id).cache == "use"
