"""Each provider against the fake server: request shape, answer parsing, usage."""

from __future__ import annotations

import pytest

from debates.engine.contract import decision_schema
from debates.providers import PROVIDERS, ProviderConfig, TerminalProviderError, complete
from tests.debates.providers.support import API_KEY, FAST_RETRIES, make_config, make_request
from tests.fakes.llm_server import FakeLLMServer, Reply

OPENAI_WIRE = ["deepseek", "qwen", "gemini", "grok", "kimi", "openai_compatible"]


@pytest.mark.parametrize("provider", OPENAI_WIRE)
def test_openai_wire_providers_send_a_chat_completions_request(
    llm_server: FakeLLMServer, provider: str
) -> None:
    # given a model the catalogue does not list (a new one), which takes its provider's
    # defaults; the fake, which knows the catalogue's models only, is told to answer it
    llm_server.strict = False
    config = make_config(
        llm_server, provider, model_name="some-model", temperature=0.3, max_tokens=1500
    )
    request = make_request()

    # when
    complete(config, request, policy=FAST_RETRIES)

    # then
    [seen] = llm_server.requests
    assert seen.path == "/v1/chat/completions"
    assert seen.headers["authorization"] == f"Bearer {API_KEY}"
    assert seen.headers["content-type"] == "application/json"
    assert seen.body == {
        "model": "some-model",
        "messages": [
            {"role": "system", "content": request.system},
            {"role": "user", "content": request.user},
        ],
        "max_tokens": 1500,
        "temperature": 0.3,
    }


def test_openai_sends_max_completion_tokens_and_temperature_to_a_sampling_model(
    llm_server: FakeLLMServer,
) -> None:
    # given
    config = make_config(llm_server, "openai", model_name="gpt-4.1", max_tokens=900)

    # when
    complete(config, make_request(), policy=FAST_RETRIES)

    # then
    body = llm_server.requests[0].body
    assert body["max_completion_tokens"] == 900
    assert "max_tokens" not in body
    assert body["temperature"] == 0.7


@pytest.mark.parametrize("model", ["gpt-5-mini", "gpt-5.6-terra", "gpt-6.1-terra"])
def test_openai_sends_no_temperature_to_reasoning_models(
    llm_server: FakeLLMServer, model: str
) -> None:
    # given
    config = make_config(llm_server, "openai", model_name=model)

    # when
    complete(config, make_request(), policy=FAST_RETRIES)

    # then
    body = llm_server.requests[0].body
    assert "temperature" not in body
    assert body["max_completion_tokens"] == 2000 + 8192  # answer, and reasoning at medium


def test_openai_keeps_temperature_for_gpt_5_1_which_reasons_only_on_request(
    llm_server: FakeLLMServer,
) -> None:
    # given
    config = make_config(llm_server, "openai", model_name="gpt-5.1", temperature=0.2)

    # when
    complete(config, make_request(), policy=FAST_RETRIES)

    # then
    assert llm_server.requests[0].body["temperature"] == 0.2


def test_openai_compatible_without_key_sends_no_authorization(llm_server: FakeLLMServer) -> None:
    # given
    config = make_config(llm_server, "openai_compatible", model_name="fake-model", api_key="")

    # when
    complete(config, make_request(), policy=FAST_RETRIES)

    # then
    assert "authorization" not in llm_server.requests[0].headers


def test_claude_sends_an_anthropic_messages_request(llm_server: FakeLLMServer) -> None:
    # given
    config = make_config(
        llm_server, "claude", model_name="claude-sonnet-4-6", temperature=0.4, max_tokens=1200
    )
    request = make_request()

    # when
    complete(config, request, policy=FAST_RETRIES)

    # then
    [seen] = llm_server.requests
    assert seen.path == "/v1/messages"
    assert seen.headers["x-api-key"] == API_KEY
    assert seen.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in seen.headers
    assert seen.body == {
        "model": "claude-sonnet-4-6",
        "system": [
            {"type": "text", "text": request.system, "cache_control": {"type": "ephemeral"}}
        ],
        "messages": [{"role": "user", "content": request.user}],
        "max_tokens": 1200,
        "temperature": 0.4,
    }


def test_claude_caps_temperature_at_anthropics_maximum_of_1(llm_server: FakeLLMServer) -> None:
    # given
    config = make_config(llm_server, "claude", model_name="claude-sonnet-4-6", temperature=1.5)

    # when
    complete(config, make_request(), policy=FAST_RETRIES)

    # then
    assert llm_server.requests[0].body["temperature"] == 1.0


@pytest.mark.parametrize(
    ("provider", "model"),
    [("deepseek", "deepseek-v4-pro"), ("openai", "gpt-5.6-terra"), ("claude", "claude-sonnet-4-6")],
)
def test_answer_text_usage_and_request_id_are_parsed(
    llm_server: FakeLLMServer, provider: str, model: str
) -> None:
    # given
    llm_server.enqueue(
        Reply.answer("<decision>[]</decision>", prompt_tokens=321, completion_tokens=45)
    )
    config = make_config(llm_server, provider, model_name=model)

    # when
    response = complete(config, make_request(), policy=FAST_RETRIES)

    # then
    expected_id = "msg_fake_1" if provider == "claude" else "chatcmpl-fake-1"
    assert response.text == "<decision>[]</decision>"
    assert (response.prompt_tokens, response.completion_tokens) == (321, 45)
    assert response.request_id == expected_id
    assert (response.provider, response.model) == (provider, model)
    assert (response.attempts, response.simulated, response.finish_reason) == (1, False, "stop")
    assert response.latency_ms >= 0


@pytest.mark.parametrize(
    ("provider", "model", "field"),
    [
        ("deepseek", "deepseek-flash", "prompt_cache_hit_tokens"),
        ("openai", "gpt-5-mini", "prompt_tokens_details"),
        ("kimi", "kimi-k2.6", "cached_tokens"),
        ("claude", "claude-sonnet-4-6", "cache_read_input_tokens"),
    ],
)
def test_input_tokens_served_from_the_providers_prompt_cache_are_read_from_its_field(
    llm_server: FakeLLMServer, provider: str, model: str, field: str
) -> None:
    # given
    llm_server.enqueue(
        Reply.answer(
            "<decision>[]</decision>", prompt_tokens=1000, completion_tokens=50, cached_tokens=600
        )
    )
    config = make_config(llm_server, provider, model_name=model)

    # when
    response = complete(config, make_request(), policy=FAST_RETRIES)

    # then: the fake reports the figure in ``field`` alone, so only that field can give it
    assert (response.prompt_tokens, response.cached_input_tokens) == (1000, 600)
    assert (response.completion_tokens, response.cache_write_tokens) == (50, 0)


def test_anthropic_cache_writes_are_counted_apart_from_cache_reads(
    llm_server: FakeLLMServer,
) -> None:
    # given
    llm_server.enqueue(
        Reply.answer(
            "<decision>[]</decision>",
            prompt_tokens=1000,
            completion_tokens=50,
            cached_tokens=100,
            cache_write_tokens=700,
        )
    )

    # when
    response = complete(make_config(llm_server, "claude"), make_request(), policy=FAST_RETRIES)

    # then
    assert (response.prompt_tokens, response.cached_input_tokens) == (1000, 100)
    assert response.cache_write_tokens == 700


def test_an_answer_without_cache_figures_has_no_cached_input(llm_server: FakeLLMServer) -> None:
    # given
    llm_server.enqueue(Reply.answer("<decision>[]</decision>", prompt_tokens=10))

    # when
    response = complete(make_config(llm_server, "openai"), make_request(), policy=FAST_RETRIES)

    # then
    assert (response.prompt_tokens, response.cached_input_tokens) == (10, 0)


def test_answer_cut_at_the_token_limit_is_returned_with_finish_reason_length(
    llm_server: FakeLLMServer,
) -> None:
    # given
    llm_server.enqueue(Reply.fault_of("truncated"))
    config = make_config(llm_server, "claude")

    # when
    response = complete(config, make_request(), policy=FAST_RETRIES)

    # then
    assert response.finish_reason == "length"
    assert "</decision>" not in response.text


def test_configured_latency_shows_in_latency_ms(llm_server: FakeLLMServer) -> None:
    # given
    llm_server.set_latency(0.2)

    # when
    response = complete(make_config(llm_server), make_request(), policy=FAST_RETRIES)

    # then
    assert 200 <= response.latency_ms < 600


@pytest.mark.parametrize(
    ("provider", "base_url", "model"),
    [
        ("deepseek", "https://api.deepseek.com", "deepseek-flash"),
        ("qwen", "https://dashscope-intl.aliyuncs.com/compatible-mode/v1", "qwen-plus"),
        ("openai", "https://api.openai.com/v1", "gpt-6.1-terra"),
        ("claude", "https://api.anthropic.com/v1", "claude-sonnet-5-5"),
        ("gemini", "https://generativelanguage.googleapis.com/v1beta/openai", "gemini-3.5-flash"),
        ("grok", "https://api.x.ai/v1", "grok-4.3"),
        ("kimi", "https://api.moonshot.ai/v1", "kimi-k2.6"),
        ("openai_compatible", "", ""),
        ("simulated", "", "simulated-v1"),
    ],
)
def test_provider_defaults_apply_when_the_config_leaves_them_empty(
    provider: str, base_url: str, model: str
) -> None:
    # given
    config = ProviderConfig(provider=provider, model_name="")

    # when / then
    assert (config.effective_base_url, config.effective_model) == (base_url, model)
    assert PROVIDERS[provider].default_base_url == base_url


def test_overrides_win_over_provider_defaults() -> None:
    # given
    config = ProviderConfig(
        provider="qwen",
        model_name="qwen-max",
        base_url="https://dashscope.aliyuncs.com/compatible-mode/v1/",
    )

    # when / then
    assert config.effective_base_url == "https://dashscope.aliyuncs.com/compatible-mode/v1"
    assert config.effective_model == "qwen-max"


@pytest.mark.parametrize(
    ("config", "message"),
    [
        (ProviderConfig("nope", "m", api_key="k"), "unknown provider 'nope'"),
        (ProviderConfig("openai_compatible", "m"), "openai_compatible: a base URL is required"),
        (
            ProviderConfig("openai_compatible", "", base_url="http://127.0.0.1:9"),
            "openai_compatible: a model name is required",
        ),
        (ProviderConfig("deepseek", ""), "deepseek: no API key configured"),
    ],
)
def test_bad_configuration_is_a_terminal_config_error_without_any_request(
    config: ProviderConfig, message: str
) -> None:
    # when
    with pytest.raises(TerminalProviderError) as caught:
        complete(config, make_request())

    # then
    assert (caught.value.code, caught.value.message, caught.value.retryable) == (
        "config_error",
        message,
        False,
    )


def test_config_repr_masks_the_key() -> None:
    # given
    config = ProviderConfig("deepseek", "m", api_key=API_KEY)

    # when
    text = repr(config)

    # then
    assert API_KEY not in text
    assert "api_key='***'" in text


@pytest.mark.parametrize(
    ("provider", "model"),
    [("openai", ""), ("gemini", ""), ("grok", ""), ("openai_compatible", "fake-model")],
)
def test_a_json_schema_model_asks_for_structured_output_under_the_contract_schema(
    llm_server: FakeLLMServer, provider: str, model: str
) -> None:
    # given a model whose output mode is json_schema
    config = make_config(llm_server, provider, model_name=model, output_mode="json_schema")
    request = make_request(kind="vote")

    # when
    complete(config, request, policy=FAST_RETRIES)

    # then the request carries the contract's schema for the request's coins, less the
    # keywords its provider refuses
    body = llm_server.requests[0].body
    caps = config.effective_capabilities
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {
            "name": "vote_answer",
            "strict": True,
            "schema": caps.schema_sent(decision_schema(("BTCUSDT", "ETHUSDT"))),
        },
    }


def test_a_tagged_model_asks_for_no_response_format(llm_server: FakeLLMServer) -> None:
    # given
    config = make_config(llm_server, "openai_compatible", model_name="fake-model")
    # when
    complete(config, make_request(), policy=FAST_RETRIES)
    # then
    assert "response_format" not in llm_server.requests[0].body
