"""An AI model's connection check: one real call of a few tokens, with the parameters a
debate sends, and one line saying whether the model answers or what was refused."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from tests.debates.factories import AIModelFactory, FakeLLMModelFactory

pytestmark = pytest.mark.django_db


def test_a_model_that_answers_passes_in_one_line(user, api_client, llm):
    # given a model answered by the fake server
    model = FakeLLMModelFactory(owner=user, llm=llm, name="Local")
    # when its owner checks it
    answer = api_client.post(f"/api/ai-models/{model.pk}/check").json()
    # then one vote-shaped call of a few tokens was made, and the line says it answers
    assert answer["ok"] is True
    assert answer["message"].startswith("Local (openai_compatible fake-model) answers (")
    [call] = llm.requests
    assert call.body["max_tokens"] == 16


def test_a_model_the_provider_does_not_know_is_named_as_refused(user, api_client, llm):
    # given a server refusing, as OpenAI does, a model its catalogue does not list
    model = FakeLLMModelFactory(
        owner=user,
        llm=llm,
        name="Typo",
        provider="openai",
        model_name="gpt-6.1-tera",
        api_key="sk-test-0123456789",
    )
    # when it is checked
    answer = api_client.post(f"/api/ai-models/{model.pk}/check").json()
    # then the line says the provider refused it, and shows no key
    assert answer["ok"] is False
    assert answer["message"].startswith("Typo (openai gpt-6.1-tera) refused the request: ")
    assert "404" in answer["message"] and "sk-test-0123456789" not in answer["message"]


def test_a_retired_model_is_refused_without_a_call(user, api_client, llm):
    model = FakeLLMModelFactory(
        owner=user,
        llm=llm,
        name="Old",
        provider="kimi",
        model_name="kimi-k2-0905-preview",
        api_key="sk-test-0123456789",
    )
    answer = api_client.post(f"/api/ai-models/{model.pk}/check").json()
    assert answer["ok"] is False and "Old" in answer["message"]
    assert llm.requests == []


def test_another_users_model_is_not_found_and_the_command_checks_by_id(user, api_client, llm):
    assert api_client.post(f"/api/ai-models/{AIModelFactory().pk}/check").status_code == 404
    model = FakeLLMModelFactory(owner=user, llm=llm, name="Local")
    call_command("check_venue", "--model", str(model.pk))
    typo = FakeLLMModelFactory(
        owner=user, llm=llm, provider="openai", model_name="gpt-x", api_key="sk-test-0123456789"
    )
    with pytest.raises(CommandError, match=r"refused the request: "):
        call_command("check_venue", "--model", str(typo.pk))
