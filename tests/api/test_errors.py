"""One error shape everywhere: malformed JSON, wrong types, unknown fields, unknown URLs
and unhandled errors all answer ``{"code", "message", "fields"}``, never a trace."""

import pytest
from django.test import RequestFactory

from arena.apis import server_error
from debates.models import AIModel, Debate
from strategies.models import Strategy
from tests.api.conftest import debate_body

pytestmark = pytest.mark.django_db


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
            {"sandbox": ["Must be true or false."], "fee_rate": ["A valid number is required."]},
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
    assert response.json() == {
        "code": "validation_error",
        "message": "Invalid input.",
        "fields": fields,
    }


def test_a_body_that_is_not_an_object_is_refused(api):
    response = api.post("/api/strategies", ["BTCUSDT"], format="json")
    assert response.status_code == 400
    assert response.json() == {
        "code": "validation_error",
        "message": "Invalid input.",
        "fields": {"non_field_errors": ["Invalid data. Expected a dictionary, but got list."]},
    }
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
    "path", ["/api/nothing-here", "/api/debates/", "/api/debates/-1", "/api/debates/abc/start"]
)
def test_an_unknown_url_under_api_is_a_json_404(api, path):
    response = api.get(path)
    assert response.status_code == 404
    assert response.json() == {"code": "not_found", "message": "Not found.", "fields": {}}


def test_a_method_an_endpoint_does_not_have_is_405(api):
    response = api.put("/api/debates/personalities", {}, format="json")
    assert response.status_code == 405
    assert response.json() == {
        "code": "method_not_allowed",
        "message": 'Method "PUT" not allowed.',
        "fields": {},
    }


def test_an_unhandled_error_under_api_answers_json_without_details():
    request = RequestFactory().get("/api/debates")
    response = server_error(request)
    assert response.status_code == 500
    assert response.content == (
        b'{"code": "server_error", "message": "The server failed; the error was logged.", '
        b'"fields": {}}'
    )
