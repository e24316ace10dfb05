"""The fake model server itself: default answers, scripting, and control from another process."""

from __future__ import annotations

import threading

import httpx
import pytest

from debates.engine.parsing import parse_output
from debates.engine.types import ParseStatus
from debates.providers import RetryableProviderError, complete
from tests.debates.providers.support import FAST_RETRIES, make_config, make_request
from tests.fakes.llm_server import FakeLLMServer, Reply, llm_server_process


def test_default_answer_is_a_valid_contract_answer_for_the_prompts_candidates(
    llm_server: FakeLLMServer,
) -> None:
    # given
    request = make_request(system="Candidates: SOLUSDT, BTCUSDT. Also SOLUSDT again.")

    # when
    text = complete(make_config(llm_server), request, policy=FAST_RETRIES).text

    # then
    result = parse_output(text, ["BTCUSDT", "SOLUSDT"])
    assert result.status == ParseStatus.OK
    assert [(d.symbol, d.action.value) for d in result.decisions] == [
        ("SOLUSDT", "open_long"),
        ("BTCUSDT", "open_long"),
    ]


def test_rules_answer_by_prompt_marker_before_the_queue(llm_server: FakeLLMServer) -> None:
    # given
    llm_server.add_rule(Reply.answer("bear answer", match="You are the bear", times=1))
    llm_server.enqueue(Reply.answer("queued answer"))
    config = make_config(llm_server)

    # when
    texts = [
        complete(config, make_request(system=system), policy=FAST_RETRIES).text
        for system in ("You are the bear.", "You are the bear.", "You are the bull.")
    ]

    # then
    assert texts[:2] == ["bear answer", "queued answer"]
    assert texts[2].startswith("<reasoning>\nFake model answer")


def test_a_responder_function_scripts_replies_from_the_request(
    llm_server: FakeLLMServer,
) -> None:
    # given
    llm_server.responder = lambda seen: Reply.answer(f"model was {seen.body['model']}")

    # when
    text = complete(make_config(llm_server, model_name="deepseek-v4-pro"), make_request()).text

    # then
    assert text == "model was deepseek-v4-pro"


def test_server_tracks_the_maximum_of_simultaneous_requests(llm_server: FakeLLMServer) -> None:
    # given
    llm_server.set_latency(0.2)
    config = make_config(llm_server)
    threads = [threading.Thread(target=complete, args=(config, make_request())) for _ in range(4)]

    # when
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    # then
    stats = llm_server.stats()
    assert (stats["requests"], stats["in_flight"], stats["max_in_flight"]) == (4, 0, 4)


def test_control_endpoint_scripts_a_server_in_another_process() -> None:
    # given
    with llm_server_process() as remote:
        remote.control(
            latency_s=0.05,
            replies=[Reply.rate_limited("0"), {"fault": "server_error"}, {"status": 500}],
        )
        config = make_config(remote)

        # when
        with pytest.raises(RetryableProviderError) as caught:
            complete(config, make_request(), policy=FAST_RETRIES)
        stats = remote.stats()
        seen = remote.requests()
        after_reset = remote.reset()

    # then
    assert (caught.value.code, caught.value.attempts) == ("server_error", 3)
    assert {name: value for name, value in stats.items() if name != "connections"} == {
        "requests": 3,
        "in_flight": 0,
        "max_in_flight": 1,
        "by_status": {"429": 1, "500": 2},
        "queued_replies": 0,
        "rules": 0,
        "latency_s": 0.05,
        "billed_calls": 0,
        "billed_tokens": 0,
    }
    assert [r["path"] for r in seen] == ["/v1/chat/completions"] * 3
    assert seen[0]["body"]["model"] == "deepseek-flash"
    assert (after_reset["requests"], after_reset["latency_s"]) == (0, 0.0)


def test_control_endpoint_refuses_an_unknown_fault(llm_server: FakeLLMServer) -> None:
    # when
    response = httpx.post(f"{llm_server.url}/_control", json={"replies": [{"fault": "nope"}]})

    # then
    assert response.status_code == 400
    assert llm_server.stats()["queued_replies"] == 0


@pytest.mark.parametrize(
    ("reasoning", "answered", "finish", "reported"),
    [(1999, True, "stop", 1999), (2000, False, "length", 2000), (9000, False, "length", 2000)],
)
def test_a_replys_reasoning_is_spent_inside_the_requests_output_cap(
    llm_server: FakeLLMServer, reasoning: int, answered: bool, finish: str, reported: int
) -> None:
    # given a reply that reasons, asked under a 2,000-token output cap
    llm_server.enqueue(Reply(reasoning_tokens=reasoning))
    body = {
        "model": "gpt-6.1-terra",
        "messages": [{"role": "user", "content": "BTCUSDT"}],
        "max_completion_tokens": 2000,
    }

    # when
    answer = httpx.post(f"{llm_server.url}/v1/chat/completions", json=body).json()

    # then: reasoning that reaches the cap leaves the answer empty, cut at the cap
    choice = answer["choices"][0]
    assert (bool(choice["message"]["content"]), choice["finish_reason"]) == (answered, finish)
    assert answer["usage"]["completion_tokens_details"]["reasoning_tokens"] == reported


def test_the_fake_serves_its_own_models_as_a_local_server_and_refuses_other_unknown_ones(
    llm_server: FakeLLMServer,
) -> None:
    # given a request for the fake's own model, and for a name neither it nor the
    # catalogue knows
    url = f"{llm_server.url}/v1/chat/completions"
    body = {"messages": [{"role": "user", "content": "BTCUSDT"}], "max_tokens": 100}

    # when / then: its own is answered, the other refused as a provider refuses it
    assert httpx.post(url, json={**body, "model": "fake-model"}).status_code == 200
    assert httpx.post(url, json={**body, "model": "llama3"}).status_code == 404
    # and once the server serves it too, it is answered
    llm_server.local_models.add("llama3")
    assert httpx.post(url, json={**body, "model": "llama3"}).status_code == 200


def test_the_server_counts_the_answers_it_billed_and_their_tokens(
    llm_server: FakeLLMServer,
) -> None:
    # given two answers of scripted usage around a server error
    llm_server.enqueue(
        Reply(prompt_tokens=1000, completion_tokens=100),
        Reply.server_error(),
        Reply(prompt_tokens=2000, completion_tokens=50),
    )
    config = make_config(llm_server)

    # when three calls are made, the second retried after its error
    answers = [complete(config, make_request(), policy=FAST_RETRIES) for _ in range(2)]

    # then the server billed the two answers, the error not, as the client counted them
    stats = llm_server.stats()
    assert (stats["requests"], stats["billed_calls"], stats["billed_tokens"]) == (3, 2, 3150)
    assert sum(a.prompt_tokens + a.completion_tokens for a in answers) == 3150
