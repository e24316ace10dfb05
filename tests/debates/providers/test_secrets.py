"""API keys never reach logs, exception text or anything stored from an error."""

from __future__ import annotations

import logging

import pytest

from debates.providers import ProviderError, complete
from debates.providers.base import redact
from tests.debates.providers.support import API_KEY, FAST_RETRIES, make_config, make_request
from tests.fakes.llm_server import FakeLLMServer, Reply


def _capture_everything(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    for name in ("httpx", "httpcore", "debates.providers"):
        caplog.set_level(logging.DEBUG, logger=name)


@pytest.mark.parametrize("provider", ["deepseek", "claude"])
def test_key_echoed_by_a_failing_provider_is_absent_from_logs_and_error(
    llm_server: FakeLLMServer, caplog: pytest.LogCaptureFixture, provider: str
) -> None:
    # given: a 500, then a 401 whose body echoes the key, as some providers do
    _capture_everything(caplog)
    llm_server.enqueue(Reply.server_error(), Reply.error(401, "Unauthorized", echo_auth=True))

    # when
    with pytest.raises(ProviderError) as caught:
        complete(make_config(llm_server, provider), make_request(), policy=FAST_RETRIES)

    # then
    error = caught.value
    assert len(llm_server.requests) == 2
    assert error.code == "auth_failed"
    # the error says what happened in our words; what the provider wrote is in the log,
    # redacted, and nowhere else
    assert error.message == f"{provider} returned HTTP 401: the provider refused the API key"
    assert "the provider said: Unauthorized: Incorrect API key provided: [redacted]" in (
        caplog.text
    )
    assert "Incorrect API key" not in f"{error} {error!r} {error.args}"
    assert "httpcore" in caplog.text  # the transport's debug logging was captured
    for text in (caplog.text, str(error), repr(error), error.message, str(error.args)):
        assert API_KEY not in text
        assert API_KEY[:8] not in text


def test_attempt_logs_carry_provider_model_status_attempt_and_latency(
    llm_server: FakeLLMServer, caplog: pytest.LogCaptureFixture
) -> None:
    # given
    caplog.set_level(logging.INFO, logger="debates.providers")
    llm_server.enqueue(Reply.rate_limited("0"), Reply.answer("<decision>[]</decision>"))
    request = make_request()

    # when
    complete(make_config(llm_server, model_name="deepseek-v4-pro"), request, policy=FAST_RETRIES)

    # then
    records = [r for r in caplog.records if r.name == "debates.providers"]
    assert [r.levelname for r in records] == ["WARNING", "INFO"]
    assert (
        records[0]
        .getMessage()
        .startswith(
            "model call failed provider=deepseek model=deepseek-v4-pro status=429 attempt=1 "
            "latency_ms="
        )
    )
    assert (
        records[1]
        .getMessage()
        .startswith(
            "model call ok provider=deepseek model=deepseek-v4-pro status=200 attempt=2 latency_ms="
        )
    )
    for record in records:
        assert request.system not in record.getMessage()
        assert request.user not in record.getMessage()


def test_a_transport_failure_keeps_the_key_out_of_the_error(
    caplog: pytest.LogCaptureFixture,
) -> None:
    # given: a port nobody listens on
    _capture_everything(caplog)
    with FakeLLMServer() as server:
        config = make_config(server)

    # when
    with pytest.raises(ProviderError) as caught:
        complete(config, make_request(), policy=FAST_RETRIES)

    # then
    assert caught.value.__cause__ is None
    for text in (caplog.text, str(caught.value), repr(caught.value)):
        assert API_KEY not in text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"bad key {API_KEY}!", "bad key [redacted]!"),
        (f"key starts {API_KEY[:8]}**** ends", "key starts [redacted]**** ends"),
        ("Authorization: Bearer abcdef123456", "Authorization: [redacted]"),
        ("got sk-proj-ABCDEFGH1234 from you", "got [redacted] from you"),
        ("nothing secret here", "nothing secret here"),
    ],
)
def test_redact_masks_keys_and_key_shaped_strings(text: str, expected: str) -> None:
    # when / then
    assert redact(text, [API_KEY]) == expected
