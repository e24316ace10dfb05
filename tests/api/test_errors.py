"""One error shape everywhere: malformed JSON, wrong types, unknown fields, unknown URLs,
deep nesting, non-finite numbers, oversized bodies, methods not allowed and unhandled
errors all answer ``{"code", "message", "fields"}``, never a trace or an HTML page."""

import json
import logging

import httpx
import pytest
from django.http import HttpResponseServerError
from django.test import RequestFactory, override_settings

from arena.middleware import ApiErrorsAsJson
from arena.parsers import MAX_DEPTH
from debates.models import AIModel, Debate
from strategies.models import Strategy
from tests.api.conftest import debate_body, refusal
from tests.web.conftest import server  # noqa: F401 (uvicorn, for what a client reads)

pytestmark = pytest.mark.django_db

# The errors ApiErrorsAsJson writes in place of a page or an empty body.
NOT_FOUND = {"code": "not_found", "message": "Not found.", "fields": {}}
NOT_ALLOWED = {
    "code": "method_not_allowed",
    "message": "This method is not allowed here.",
    "fields": {},
}


@pytest.mark.parametrize(
    "path", ["/api/debates", "/api/ai-models", "/api/strategies", "/api/traders", "/api/schedules"]
)
def test_malformed_json_is_a_parse_error(api, path):
    response = api.post(path, data='{"name": "x",', content_type="application/json")
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "parse_error"
    assert body["message"].startswith("JSON parse error")
    assert body["fields"] == {}


def test_a_form_body_is_refused_as_unsupported(api):
    response = api.post("/api/ai-models", {"name": "x", "provider": "simulated"})
    assert response.status_code == 415
    assert response.json()["code"] == "unsupported_media_type"
    assert AIModel.objects.count() == 0


@pytest.mark.parametrize(
    ("path", "body", "fields"),
    [
        (
            "/api/ai-models",
            {"name": "M", "provider": "simulated", "max_tokens": "2000"},
            {"max_tokens": ["A valid integer is required."]},
        ),
        (
            "/api/ai-models",
            {"name": "M", "provider": "simulated", "temperature": "hot", "enabled": "yes"},
            {"temperature": ["A valid number is required."], "enabled": ["Must be true or false."]},
        ),
        (
            "/api/ai-models",
            {"name": 12, "provider": 3},
            {
                "name": ["Must be a string."],
                "provider": [
                    "3 is not one of: deepseek, qwen, openai, claude, gemini, grok, kimi, "
                    "openai_compatible, simulated."
                ],
            },
        ),
        (
            "/api/strategies",
            {"name": "S", "static_coins": "BTCUSDT", "max_coins": 3.5},
            {
                "static_coins": ['Expected a list of items but got type "str".'],
                "max_coins": ["A valid integer is required."],
            },
        ),
        (
            "/api/traders",
            {"name": "T", "sandbox": 1, "fee_rate": [1]},
            {
                "sandbox": ["Must be true or false."],
                "fee_rate": ['Must be a decimal number in a string, written plainly: "2.5".'],
            },
        ),
        (
            "/api/schedules",
            {"name": "S", "strategy": "1", "participants": [{"ai_model": "x", "personality": 1}]},
            {
                "strategy": ["A valid integer is required."],
                "participants[0].ai_model": ["A valid integer is required."],
                "participants[0].personality": [
                    "1 is not one of: bull, bear, analyst, contrarian, risk_manager."
                ],
            },
        ),
    ],
    ids=["int-as-string", "number-and-bool", "string-and-choice", "list-and-int", "trader", "seat"],
)
def test_wrong_types_are_refused_naming_each_field(api, path, body, fields):
    response = api.post(path, body, format="json")
    assert response.status_code == 400
    assert response.json() == refusal(fields)


def test_a_body_that_is_not_an_object_is_refused(api):
    response = api.post("/api/strategies", ["BTCUSDT"], format="json")
    assert response.status_code == 400
    assert response.json() == refusal(
        {"non_field_errors": ["Invalid data. Expected a dictionary, but got list."]}
    )
    assert Strategy.objects.count() == 0


def test_unknown_fields_are_refused_rather_than_ignored(api, seeded):
    # given a debate body with a misspelt field
    body = debate_body(seeded, max_round=4)
    # when it is posted
    response = api.post("/api/debates", body, format="json")
    # then the misspelling is named and nothing is created
    assert response.status_code == 400
    assert response.json()["fields"] == {"max_round": ["Unknown field."]}
    assert Debate.objects.count() == 0


@pytest.mark.parametrize(
    "path",
    [
        "/api/nothing-here",
        "/api/debates/",
        "/api/debates/-1",
        "/api/debates/abc/start",
        "/api/ai-models/abc",
        "/api/debates/1/streamx",
    ],
)
def test_an_unknown_url_under_api_is_a_json_404(api, path):
    response = api.get(path)
    assert response.status_code == 404
    assert response.json() == NOT_FOUND
    assert response["Content-Length"] == str(len(response.content))


def test_a_method_an_endpoint_does_not_have_is_405(api):
    response = api.put("/api/debates/personalities", {}, format="json")
    assert response.status_code == 405
    assert response.json() == {
        "code": "method_not_allowed",
        "message": 'Method "PUT" not allowed.',
        "fields": {},
    }


def test_an_unhandled_error_under_api_answers_json_without_details():
    # given Django's HTML page for an unhandled error under /api/
    request = RequestFactory().get("/api/debates")
    middleware = ApiErrorsAsJson(lambda request: HttpResponseServerError(b"<h1>Trace</h1>"))
    # when it leaves through the middleware
    response = middleware(request)
    # then it is the JSON error, with no details
    assert response.status_code == 500
    assert response["Content-Type"] == "application/json"
    assert response.content == (
        b'{"code": "server_error", "message": "The server failed; the error was logged.", '
        b'"fields": {}}'
    )


def test_an_error_page_outside_api_stays_a_page():
    request = RequestFactory().get("/admin/nothing")
    middleware = ApiErrorsAsJson(lambda request: HttpResponseServerError(b"<h1>Trace</h1>"))
    assert middleware(request).content == b"<h1>Trace</h1>"


JSON_ENDPOINTS = [
    "/api/auth/token",
    "/api/debates",
    "/api/ai-models",
    "/api/strategies",
    "/api/traders",
    "/api/schedules",
    "/api/debates/1/execute",
]


@pytest.mark.parametrize("path", JSON_ENDPOINTS)
@pytest.mark.parametrize("depth", [MAX_DEPTH + 1, 1000, 100_000])
def test_deep_nesting_is_a_400_naming_the_body(api, caplog, path, depth):
    # given a body nested deeper than any body of the API (far past Python's recursion
    # limit, too)
    body = "[" * depth + "]" * depth
    # when it is posted, anonymously to the token endpoint, as a user elsewhere
    with caplog.at_level(logging.WARNING):
        response = api.post(path, data=body, content_type="application/json")
    # then it is refused naming the body, and nothing is logged as an error
    assert response.status_code == 400
    assert response.json() == refusal({"body": [f"Nested more than {MAX_DEPTH} levels deep."]})
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_nesting_up_to_the_limit_is_read():
    from arena.parsers import check_parsed

    # given MAX_DEPTH levels: an object holding lists in lists
    nested: list = []
    for _ in range(MAX_DEPTH - 2):
        nested = [nested]
    # then it is let through
    check_parsed({"a": nested})


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        (
            '{"name": "S", "max_position_multiple": NaN}',
            {"max_position_multiple": ["Must be a finite number; NaN is not valid JSON."]},
        ),
        (
            '{"name": "S", "min_risk_reward": Infinity, "min_order_usd": -Infinity}',
            {
                "min_order_usd": ["Must be a finite number; -Infinity is not valid JSON."],
                "min_risk_reward": ["Must be a finite number; Infinity is not valid JSON."],
            },
        ),
        (
            '{"name": "S", "static_coins": ["BTC", NaN]}',
            {"static_coins[1]": ["Must be a finite number; NaN is not valid JSON."]},
        ),
        ("NaN", {"body": ["Must be a finite number; NaN is not valid JSON."]}),
    ],
    ids=["nan", "infinities", "in-a-list", "the-whole-body"],
)
def test_non_finite_numbers_are_a_400_naming_the_field(api, body, fields):
    response = api.post("/api/strategies", data=body, content_type="application/json")
    assert response.status_code == 400
    assert response.json() == refusal(fields)
    assert Strategy.objects.count() == 0


def test_a_non_finite_number_deep_in_a_debate_is_named(api, seeded):
    body = json.dumps(debate_body(seeded)).replace(
        f'"ai_model": {seeded["models"][1].pk}', '"ai_model": NaN'
    )
    response = api.post("/api/debates", data=body, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["fields"] == {
        "participants[1].ai_model": ["Must be a finite number; NaN is not valid JSON."]
    }
    assert Debate.objects.count() == 0


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000)
@pytest.mark.parametrize("path", JSON_ENDPOINTS)
def test_an_oversized_body_is_a_413(api, caplog, path):
    # given a body one byte over the limit
    body = json.dumps({"name": "x" * 1000})[:1001]
    # when it is posted
    with caplog.at_level(logging.WARNING):
        response = api.post(path, data=body, content_type="application/json")
    # then it is refused as too large before it is read as JSON, and nothing is logged
    # as an error
    assert response.status_code == 413
    assert response.json() == {
        "code": "body_too_large",
        "message": "The body is larger than 1000 bytes.",
        "fields": {"body": ["Too large."]},
    }
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR]


def test_a_body_at_the_limit_is_read(api):
    body = json.dumps({"name": "S", "role_text": "x" * 500})
    with override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=len(body)):
        response = api.post("/api/strategies", data=body, content_type="application/json")
    assert response.status_code == 201


@pytest.mark.parametrize("method", ["post", "put", "delete"])
def test_a_method_the_stream_does_not_have_is_a_json_405(api, method):
    response = getattr(api, method)("/api/debates/1/stream")
    assert response.status_code == 405
    assert response["Allow"] == "GET"
    assert response.json() == NOT_ALLOWED
    assert response["Content-Length"] == str(len(response.content))


def test_a_method_the_schema_does_not_have_is_a_json_405(api):
    # given the schema view, which renders its own errors as YAML, its first format
    # when it is posted to
    response = api.post("/api/schema/")
    # then the answer is the JSON error, its length the length of that body
    assert response.status_code == 405
    assert response["Allow"] == "GET, HEAD, OPTIONS"
    assert response.json() == NOT_ALLOWED
    assert response["Content-Length"] == str(len(response.content))


@override_settings(DEBUG=True)
@pytest.mark.parametrize("path", ["/api/nothing-here", "/api/debates/"])
def test_an_unknown_url_under_api_is_json_in_debug_mode_too(api, path):
    response = api.get(path)
    assert response.status_code == 404
    assert response.json() == NOT_FOUND
    assert response["Content-Length"] == str(len(response.content))


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_client_of_the_server_reads_each_rewritten_error_whole(server):  # noqa: F811
    # given the app under uvicorn, and errors that leave its views as an HTML page, an
    # empty body or YAML before the middleware rewrites them
    expected = {
        ("GET", "/api/nonexistent"): (404, NOT_FOUND, True),
        ("GET", "/api/debates/"): (404, NOT_FOUND, True),
        ("GET", "/api/ai-models/abc"): (404, NOT_FOUND, True),
        ("GET", "/api/debates/1/streamx"): (404, NOT_FOUND, True),
        ("POST", "/api/debates/1/stream"): (405, NOT_ALLOWED, True),
        ("POST", "/api/schema/"): (405, NOT_ALLOWED, True),
    }
    # when a client asks for each
    answers = {}
    with httpx.Client(base_url=server.url) as client:
        for method, path in expected:
            response = client.request(method, path)
            answers[method, path] = (
                response.status_code,
                response.json(),
                int(response.headers["Content-Length"]) == len(response.content),
            )
    # then each arrives whole: the JSON error, its Content-Length the length of that body
    assert answers == expected


@pytest.mark.parametrize("path", ["/api/debates?status=", "/api/traders?status="])
def test_an_empty_choice_in_the_query_is_refused_not_ignored(api, path):
    response = api.get(path)
    assert response.status_code == 400
    assert list(response.json()["fields"]) == ["status"]


def test_an_empty_page_is_an_invalid_page(api):
    response = api.get("/api/debates?page=")
    assert response.status_code == 404
    assert response.json() == {"code": "not_found", "message": "Invalid page.", "fields": {}}
