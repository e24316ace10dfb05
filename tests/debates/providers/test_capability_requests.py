"""Requests built from the model's capabilities, and usage read where its provider puts
it; the fake server refuses what the real provider refuses."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from debates.providers import TerminalProviderError, complete
from debates.providers.catalog import capabilities_for
from tests.debates.providers.support import FAST_RETRIES, make_config, make_request
from tests.fakes.llm_catalogue import refusal
from tests.fakes.llm_server import FakeLLMServer, Reply


@pytest.mark.parametrize(
    ("provider", "model"),
    [("kimi", ""), ("openai", ""), ("claude", ""), ("openai", "gpt-5.6-terra")],
)
def test_a_model_that_fixes_or_refuses_temperature_is_sent_none(
    llm_server: FakeLLMServer, provider: str, model: str
) -> None:
    # given a model whose catalogue entry fixes or refuses the temperature
    config = make_config(llm_server, provider, model_name=model, temperature=0.7)

    # when: the fake answers 400 to any temperature, as the provider does
    response = complete(config, make_request(), policy=FAST_RETRIES)

    # then
    assert response.text
    assert "temperature" not in llm_server.requests[0].body


@pytest.mark.parametrize(
    ("provider", "model", "fields"),
    [
        ("openai", "", {"reasoning_effort": "low"}),
        ("grok", "", {"reasoning_effort": "low"}),
        ("gemini", "", {"reasoning_effort": "low"}),
        ("deepseek", "", {"thinking": {"type": "enabled"}, "reasoning_effort": "low"}),
        ("kimi", "", {"thinking": {"type": "disabled"}}),
        ("qwen", "", {"enable_thinking": False}),
        ("claude", "", {"output_config": {"effort": "low"}}),
    ],
)
def test_votes_and_judges_ask_low_effort_through_the_models_own_control(
    llm_server: FakeLLMServer, provider: str, model: str, fields: dict[str, Any]
) -> None:
    # given a vote and a judge call, and a turn
    config = make_config(llm_server, provider, model_name=model)

    # when
    for kind in ("vote", "judge_scores", "turn"):
        complete(config, make_request(kind=kind, labels=("A",)), policy=FAST_RETRIES)

    # then: brief calls carry the control, a turn leaves the provider's default
    vote, judge, turn = (request.body for request in llm_server.requests)
    assert {k: vote[k] for k in fields} == fields
    assert {k: judge[k] for k in fields} == fields
    assert not set(fields) & set(turn)


def test_an_ai_model_may_override_its_catalogue_capabilities(llm_server: FakeLLMServer) -> None:
    # given gpt-5.1, which takes a temperature and reasons only on request, told to take
    # no temperature and to reason at medium in votes and at high in turns
    caps = capabilities_for("openai", "gpt-5.1").merged(
        {"temperature": "absent", "brief_effort": "medium", "turn_effort": "high"}
    )
    config = make_config(
        llm_server, "openai", model_name="gpt-5.1", temperature=0.3, capabilities=caps
    )

    # when
    complete(config, make_request(kind="vote"), policy=FAST_RETRIES)
    complete(config, make_request(kind="turn"), policy=FAST_RETRIES)

    # then
    vote, turn = (request.body for request in llm_server.requests)
    assert "temperature" not in vote and "temperature" not in turn
    assert (vote["reasoning_effort"], turn["reasoning_effort"]) == ("medium", "high")


def test_xai_reasoning_tokens_reported_apart_are_counted_as_output(
    llm_server: FakeLLMServer,
) -> None:
    # given grok's answer: 300 output tokens, 250 of them reasoning, reported apart
    llm_server.enqueue(
        Reply.answer("<decision>[]</decision>", completion_tokens=300, reasoning_tokens=250)
    )
    config = make_config(llm_server, "grok")

    # when
    response = complete(config, make_request(), policy=FAST_RETRIES)

    # then: every billed output token is counted
    assert (response.completion_tokens, response.reasoning_tokens) == (300, 250)


@pytest.mark.parametrize(
    ("provider", "model"), [("kimi", "kimi-k2.6"), ("openai", "gpt-6.1-terra")]
)
def test_reasoning_inside_completion_is_not_counted_twice(
    llm_server: FakeLLMServer, provider: str, model: str
) -> None:
    llm_server.enqueue(
        Reply.answer("<decision>[]</decision>", completion_tokens=300, reasoning_tokens=250)
    )
    response = complete(
        make_config(llm_server, provider, model_name=model), make_request(), policy=FAST_RETRIES
    )
    assert (response.completion_tokens, response.reasoning_tokens) == (300, 250)


def test_the_fake_refuses_an_unknown_model_and_a_fixed_temperature(
    llm_server: FakeLLMServer,
) -> None:
    # given a body as the old code built it for Kimi
    import httpx

    url = f"{llm_server.url}/v1/chat/completions"
    old_kimi = {"model": "kimi-k2-0905-preview", "messages": [], "temperature": 0.7}
    fixed = {"model": "kimi-k2.6", "messages": [], "temperature": 0.7}

    # when / then
    assert httpx.post(url, json=old_kimi).status_code == 404
    refused = httpx.post(url, json=fixed)
    assert refused.status_code == 400
    assert "only 1 is allowed" in refused.json()["error"]["message"]


@pytest.mark.parametrize(
    ("provider", "model", "kind", "sent"),
    [
        ("openai", "gpt-6.1-terra", "turn", {"max_completion_tokens": 2000 + 8192}),
        ("openai", "gpt-6.1-terra", "vote", {"max_completion_tokens": 2000 + 1024}),
        ("claude", "claude-sonnet-5-5", "turn", {"max_tokens": 2000 + 24_576}),
        ("deepseek", "deepseek-flash", "vote", {"max_tokens": 2000 + 1024}),
        ("kimi", "kimi-k2.6", "vote", {"max_tokens": 2000}),
        ("qwen", "qwen-plus", "turn", {"max_tokens": 2000}),
        ("openai", "gpt-4.1", "turn", {"max_completion_tokens": 2000}),
        ("claude", "claude-sonnet-4-6", "turn", {"max_tokens": 2000}),
    ],
)
def test_a_reasoning_model_is_sent_room_to_reason_besides_the_answers_cap(
    llm_server: FakeLLMServer, provider: str, model: str, kind: str, sent: dict[str, int]
) -> None:
    # given a 2,000-token answer cap: reasoning models at the effort the call asks (else
    # their default), thinking off (Kimi's votes, Qwen by default), no reasoning at all
    config = make_config(llm_server, provider, model_name=model, max_tokens=2000)

    # when
    complete(config, make_request(kind=kind, labels=("A",)), policy=FAST_RETRIES)

    # then: the cap sent holds the effort's reasoning budget on top of the answer's cap
    [request] = llm_server.requests
    cap_param = next(iter(sent))
    assert {cap_param: request.body[cap_param]} == sent


def test_a_reasoning_model_answers_at_once_when_its_reasoning_fits_the_allowance(
    llm_server: FakeLLMServer,
) -> None:
    # given gpt-6.1-terra reasoning 6,000 tokens on a turn (medium effort, its default)
    # under a 2,000-token answer cap
    llm_server.enqueue(Reply(reasoning_tokens=6000))
    config = make_config(llm_server, "openai", max_tokens=2000)

    # when
    response = complete(config, make_request(), policy=FAST_RETRIES)

    # then: one call, whose cap left room for the reasoning and the answer
    [request] = llm_server.requests
    assert request.body["max_completion_tokens"] == 10_192
    assert (response.attempts, response.reasoning_tokens) == (1, 6000)
    assert response.text.startswith("<reasoning>")


def test_an_answer_the_cap_cut_empty_is_retried_once_under_a_larger_cap(
    llm_server: FakeLLMServer,
) -> None:
    # given a reasoning model that spends its whole cap on reasoning once: a 2,000-token
    # answer cap and 8,192 set aside for reasoning at medium effort
    llm_server.enqueue(Reply.fault_of("reasoning_exhausted"))
    config = make_config(llm_server, "openai", max_tokens=2000)

    # when
    response = complete(config, make_request(), policy=FAST_RETRIES)

    # then: the second call, under four times the cap sent first, answers
    first, second = (request.body for request in llm_server.requests)
    assert (first["max_completion_tokens"], second["max_completion_tokens"]) == (10_192, 40_768)
    assert response.text
    assert response.attempts == 2


def test_an_answer_cut_empty_twice_fails_naming_the_cap_and_the_reasoning_spent(
    llm_server: FakeLLMServer,
) -> None:
    # given a model that spends any cap on reasoning, sent 1,000 + 8,192 tokens first
    llm_server.enqueue(Reply.fault_of("reasoning_exhausted"), Reply.fault_of("reasoning_exhausted"))
    config = make_config(llm_server, "grok", max_tokens=1000)

    # when
    with pytest.raises(TerminalProviderError) as raised:
        complete(config, make_request(), policy=FAST_RETRIES)

    # then: one retry only, and the error says what was spent
    assert len(llm_server.requests) == 2
    assert raised.value.code == "output_cap_exhausted"
    assert raised.value.message == (
        "grok: the answer is empty: grok-4.3 spent the 36768-token output cap on "
        "reasoning (36768 reasoning tokens)"
    )


def test_a_cap_already_at_the_models_maximum_is_not_retried(llm_server: FakeLLMServer) -> None:
    llm_server.enqueue(Reply.fault_of("reasoning_exhausted"))
    config = make_config(llm_server, "qwen", max_tokens=32_768)
    with pytest.raises(TerminalProviderError) as raised:
        complete(config, make_request(), policy=FAST_RETRIES)
    assert len(llm_server.requests) == 1
    assert "32768-token output cap" in raised.value.message


def test_anthropics_529_overloaded_answer_is_retried(llm_server: FakeLLMServer) -> None:
    # given Claude overloaded once
    llm_server.enqueue(Reply(status=529, error_style="anthropic_overloaded"))
    config = make_config(llm_server, "claude")

    # when
    response = complete(config, make_request(), policy=FAST_RETRIES)

    # then
    assert response.attempts == 2
    assert llm_server.stats()["by_status"] == {"529": 1, "200": 1}


def test_geminis_list_wrapped_error_gives_its_message_to_the_log(
    llm_server: FakeLLMServer,
) -> None:
    # given Gemini refusing a request with its list-wrapped error body
    llm_server.enqueue(
        Reply.error(400, "Invalid reasoning_effort: minimal", error_style="gemini_list")
    )
    config = make_config(llm_server, "gemini")

    # when
    with pytest.raises(TerminalProviderError) as raised:
        complete(config, make_request(), policy=FAST_RETRIES)

    # then: the provider's words reach the log, not the message
    assert raised.value.upstream == "Invalid reasoning_effort: minimal"
    assert raised.value.message == "gemini returned HTTP 400: the provider refused the request"


def _keywords_in(node: Any) -> set[str]:
    """Return every key of every mapping in ``node``, property names included."""
    if isinstance(node, list):
        return set().union(*(_keywords_in(item) for item in node))
    if not isinstance(node, dict):
        return set()
    return set(node).union(*(_keywords_in(value) for value in node.values()))


def test_openai_is_sent_its_structured_output_schema_without_string_lengths(
    llm_server: FakeLLMServer,
) -> None:
    # given OpenAI's default model and a self-hosted server, both decoding under a schema
    openai = make_config(llm_server, "openai", output_mode="json_schema")
    local = make_config(
        llm_server, "openai_compatible", model_name="fake-model", output_mode="json_schema"
    )
    # when each answers a vote (the fake refuses a length keyword as OpenAI does)
    for config in (openai, local):
        complete(config, make_request(kind="vote"), policy=FAST_RETRIES)
    # then OpenAI's schema holds no string length; the local server's keeps its bounds
    sent = [r.body["response_format"]["json_schema"]["schema"] for r in llm_server.requests]
    assert not {"minLength", "maxLength"} & _keywords_in(sent[0])
    assert "maxLength" in _keywords_in(sent[1])
    assert sent[0]["properties"].keys() == sent[1]["properties"].keys()


def test_the_fake_refuses_a_length_keyword_in_openais_schema(llm_server: FakeLLMServer) -> None:
    # given an OpenAI model whose capabilities forget what OpenAI refuses
    forgetful = dataclasses.replace(capabilities_for("openai", ""), schema_refuses=())
    config = make_config(llm_server, "openai", output_mode="json_schema", capabilities=forgetful)
    # when / then: OpenAI's answer to a schema with maxLength, a 400 naming it
    with pytest.raises(TerminalProviderError, match="HTTP 400"):
        complete(config, make_request(kind="vote"), policy=FAST_RETRIES)
    sent = llm_server.requests[0]
    assert refusal(sent.wire, sent.body) == (
        400,
        "Invalid schema for response_format 'vote_answer': 'maxLength' is not permitted.",
    )
