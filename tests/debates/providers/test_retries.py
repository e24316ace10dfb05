"""Fault matrix: which faults are retried, how often, and what the caller finally sees."""

from __future__ import annotations

import signal
import socket
import threading
import time

import pytest

from debates.providers import (
    DeadlineExceeded,
    ProviderError,
    RetryableProviderError,
    TerminalProviderError,
    complete,
)
from debates.providers.transport import RetryPolicy
from tests.debates.conftest import wait_for
from tests.debates.providers.support import FAST_RETRIES, make_config, make_request
from tests.fakes.llm_server import FakeLLMServer, Reply

OK = Reply.answer("<decision>[]</decision>")

# (script, requests the server sees, outcome: "ok" or the error code)
FAULTS = {
    "429 then 200": ([Reply.rate_limited("0"), OK], 2, "ok"),
    "500 then 200": ([Reply.server_error(), OK], 2, "ok"),
    "503 then 200": ([Reply.server_error(503), OK], 2, "ok"),
    "500 x3": ([Reply.server_error()] * 3, 3, "server_error"),
    "429 x3": ([Reply.rate_limited("0")] * 3, 3, "rate_limited"),
    "reset then 200": ([Reply.fault_of("reset"), OK], 2, "ok"),
    "reset x3": ([Reply.fault_of("reset")] * 3, 3, "transport_error"),
    "body cut then 200": ([Reply.fault_of("truncated_body"), OK], 2, "ok"),
    "malformed": ([Reply.fault_of("malformed"), OK], 1, "malformed_response"),
    "no content": ([Reply.fault_of("empty"), OK], 1, "malformed_response"),
    "400": ([Reply.error(400), OK], 1, "bad_request"),
    "401": ([Reply.error(401), OK], 1, "auth_failed"),
    "403": ([Reply.error(403), OK], 1, "forbidden"),
    "404": ([Reply.error(404), OK], 1, "not_found"),
}


@pytest.mark.parametrize("provider", ["deepseek", "claude"])
@pytest.mark.parametrize("fault", list(FAULTS))
def test_fault_gives_the_specified_attempts_and_outcome(
    llm_server: FakeLLMServer, provider: str, fault: str
) -> None:
    # given
    script, expected_requests, outcome = FAULTS[fault]
    llm_server.enqueue(*script)
    config = make_config(llm_server, provider, timeout_s=5)

    # when
    try:
        response = complete(config, make_request(), policy=FAST_RETRIES)
        result, attempts = "ok", response.attempts
    except ProviderError as error:
        result, attempts = error.code, error.attempts

    # then
    assert result == outcome
    assert attempts == expected_requests
    assert len(llm_server.requests) == expected_requests


@pytest.mark.parametrize(
    ("reply", "error_class"),
    [
        (Reply.server_error(), RetryableProviderError),
        (Reply.error(401), TerminalProviderError),
        (Reply.fault_of("malformed"), TerminalProviderError),
    ],
)
def test_errors_say_whether_a_later_retry_may_help(
    llm_server: FakeLLMServer, reply: Reply, error_class: type[ProviderError]
) -> None:
    # given
    llm_server.enqueue(reply, reply, reply)

    # when
    with pytest.raises(ProviderError) as caught:
        complete(make_config(llm_server), make_request(), policy=FAST_RETRIES)

    # then
    assert type(caught.value) is error_class
    assert caught.value.retryable is (error_class is RetryableProviderError)


def test_401_reaches_the_server_exactly_once_and_keeps_its_status(
    llm_server: FakeLLMServer,
) -> None:
    # given
    llm_server.enqueue(Reply.error(401, "Invalid key"), OK)

    # when
    with pytest.raises(TerminalProviderError) as caught:
        complete(make_config(llm_server), make_request(), policy=FAST_RETRIES)

    # then
    assert len(llm_server.requests) == 1
    assert (caught.value.status, caught.value.message) == (
        401,
        "deepseek returned HTTP 401: the provider refused the API key",
    )


def test_retry_after_is_honoured_before_the_second_attempt(llm_server: FakeLLMServer) -> None:
    # given
    llm_server.enqueue(Reply.rate_limited("1"), OK)

    # when
    response = complete(make_config(llm_server), make_request(), policy=FAST_RETRIES)

    # then
    first, second = llm_server.requests
    assert response.attempts == 2
    assert 1.0 <= second.arrived_at - first.arrived_at < 1.5


def test_retry_after_beyond_the_deadline_gives_up_at_once(llm_server: FakeLLMServer) -> None:
    # given
    llm_server.enqueue(Reply.rate_limited("30"), OK)
    started = time.monotonic()

    # when
    with pytest.raises(RetryableProviderError) as caught:
        complete(make_config(llm_server, timeout_s=2), make_request(), policy=FAST_RETRIES)

    # then
    assert (caught.value.code, caught.value.attempts) == ("rate_limited", 1)
    assert len(llm_server.requests) == 1
    assert time.monotonic() - started < 0.5


def test_backoff_grows_between_attempts(llm_server: FakeLLMServer) -> None:
    # given
    llm_server.enqueue(*[Reply.server_error()] * 3)
    policy = RetryPolicy(backoff_base_s=0.1)

    # when
    with pytest.raises(RetryableProviderError):
        complete(make_config(llm_server), make_request(), policy=policy)

    # then
    first, second, third = (r.arrived_at for r in llm_server.requests)
    assert 0.05 <= second - first < 0.15
    assert 0.1 <= third - second < 0.25


@pytest.mark.parametrize("fault", ["hang", "trickle"])
@pytest.mark.parametrize("provider", ["deepseek", "claude"])
def test_a_stalled_answer_ends_at_the_deadline(
    llm_server: FakeLLMServer, fault: str, provider: str
) -> None:
    # given
    llm_server.enqueue(Reply.fault_of(fault, trickle_interval_s=0.1), OK)
    config = make_config(llm_server, provider, timeout_s=0.5)
    started = time.monotonic()

    # when
    with pytest.raises(DeadlineExceeded) as caught:
        complete(config, make_request(), policy=FAST_RETRIES)

    # then
    elapsed = time.monotonic() - started
    assert 0.5 <= elapsed < 0.7
    assert (caught.value.code, caught.value.attempts) == ("deadline_exceeded", 1)
    assert len(llm_server.requests) == 1


class HeaderTrickler:
    """A server that sends its status line, then its headers one byte every 0.1 s."""

    def __init__(self, header: bytes = b"x-slow: " + b"a" * 22 + b"\r\n\r\n") -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._socket.getsockname()[1]}"
        self._header = header
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        connection, _ = self._socket.accept()
        with connection:
            connection.recv(65536)
            connection.sendall(b"HTTP/1.1 200 OK\r\n")
            for byte in self._header:
                if self._stop.wait(0.1):
                    return
                try:
                    connection.sendall(bytes([byte]))
                except OSError:
                    return

    def close(self) -> None:
        self._stop.set()
        self._socket.close()


def test_headers_trickled_past_the_deadline_end_at_the_deadline() -> None:
    # given a server that would take 3 s to send its headers, a byte at a time
    server = HeaderTrickler()
    started = time.monotonic()

    # when
    try:
        with pytest.raises(DeadlineExceeded):
            complete(make_config(server, timeout_s=0.5), make_request(), policy=FAST_RETRIES)
    finally:
        server.close()

    # then every read waited only until the deadline, though each byte came in time
    assert 0.5 <= time.monotonic() - started < 0.7


def test_the_callers_deadline_wins_when_it_comes_first(llm_server: FakeLLMServer) -> None:
    # given
    llm_server.enqueue(Reply.fault_of("hang"))
    started = time.monotonic()

    # when
    with pytest.raises(DeadlineExceeded):
        complete(
            make_config(llm_server, timeout_s=30),
            make_request(),
            deadline=started + 0.3,
            policy=FAST_RETRIES,
        )

    # then
    assert 0.3 <= time.monotonic() - started < 0.5


def test_a_deadline_already_past_sends_nothing(llm_server: FakeLLMServer) -> None:
    # when
    with pytest.raises(DeadlineExceeded):
        complete(make_config(llm_server), make_request(), deadline=time.monotonic() - 1)

    # then
    assert llm_server.requests == []


def test_retries_stop_at_the_deadline(llm_server: FakeLLMServer) -> None:
    # given: every answer takes 0.2 s and fails; three attempts would need 0.6 s
    llm_server.set_latency(0.2)
    llm_server.enqueue(*[Reply.server_error()] * 3)
    started = time.monotonic()

    # when
    with pytest.raises(DeadlineExceeded):
        complete(make_config(llm_server, timeout_s=0.5), make_request(), policy=FAST_RETRIES)

    # then
    assert 0.5 <= time.monotonic() - started < 0.6
    assert len(llm_server.requests) == 3


def test_connection_refused_is_a_retried_transport_error() -> None:
    # given: a port nobody listens on
    with FakeLLMServer() as server:
        config = make_config(server, timeout_s=2)

    # when
    with pytest.raises(RetryableProviderError) as caught:
        complete(config, make_request(), policy=FAST_RETRIES)

    # then
    assert (caught.value.code, caught.value.attempts) == ("transport_error", 3)


def test_calls_of_a_process_share_one_kept_alive_connection(llm_server: FakeLLMServer) -> None:
    # when three calls follow one another, from two threads
    for _ in range(2):
        complete(make_config(llm_server), make_request())
    worker = threading.Thread(target=complete, args=(make_config(llm_server), make_request()))
    worker.start()
    worker.join()

    # then the server saw three requests on a single TCP connection
    assert llm_server.stats()["requests"] == 3
    assert llm_server.stats()["connections"] == 1


def test_a_connection_the_server_dropped_is_replaced(llm_server: FakeLLMServer) -> None:
    # given a kept connection that the server then closes
    complete(make_config(llm_server), make_request())
    llm_server.enqueue(Reply.fault_of("reset"), OK)

    # when
    response = complete(make_config(llm_server), make_request(), policy=FAST_RETRIES)

    # then the call went through on a new connection
    assert response.attempts == 2
    assert llm_server.stats()["connections"] == 2


class SoftTimeLimit(Exception):
    """What a Celery soft time limit raises in the task's thread, from a signal handler."""


def test_an_interrupted_wait_abandons_the_call(llm_server: FakeLLMServer) -> None:
    # given a call the server answers only after 2 s
    llm_server.set_latency(2.0)

    def raise_limit(signum, frame):
        raise SoftTimeLimit

    previous = signal.signal(signal.SIGUSR1, raise_limit)
    try:
        # when the waiting thread gets the signal of a soft time limit
        threading.Timer(
            0.2, signal.pthread_kill, (threading.main_thread().ident, signal.SIGUSR1)
        ).start()
        with pytest.raises(SoftTimeLimit):
            complete(make_config(llm_server, timeout_s=2), make_request())
    finally:
        signal.signal(signal.SIGUSR1, previous)

    # then the request is abandoned: the server sees its client hang up
    wait_for(lambda: llm_server.stats()["by_status"].get("client_gone") == 1, timeout=1.5)
