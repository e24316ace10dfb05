"""AI model configurations over the API: the key is write-only and shown masked."""

from datetime import date

import pytest
from django.utils import timezone

from debates.models import AIModel, Debate
from tests.api.conftest import MODEL_KEY, debate_body, refusal
from tests.debates.factories import AIModelFactory, ParticipantFactory, ScheduleFactory

pytestmark = pytest.mark.django_db


def test_create_a_simulated_model(api, user):
    response = api.post("/api/ai-models", {"name": "Sim", "provider": "simulated"}, format="json")
    assert response.status_code == 201
    model = AIModel.objects.get()
    body = response.json()
    assert (model.owner, model.name, model.provider) == (user, "Sim", "simulated")
    assert {k: v for k, v in body.items() if k not in ("created_at", "updated_at")} == {
        "id": model.pk,
        "name": "Sim",
        "provider": "simulated",
        "provider_name": "Simulated (built in)",
        "simulated": True,
        "model_name": "",
        "base_url": "",
        "api_key_masked": "",
        "has_api_key": False,
        "temperature": 0.7,
        "max_tokens": 2000,
        "timeout_seconds": 60,
        "output_mode": "tagged",
        "training_cutoff": None,
        "capabilities": {},
        "catalogue": {"status": "active", "shutdown": None, "replacement": "", "warning": ""},
        "enabled": True,
    }


def test_the_key_is_stored_and_only_shown_masked(api):
    # given a model posted with a key
    body = {"name": "GPT", "provider": "openai", "api_key": f"  {MODEL_KEY} "}
    # when it is created
    response = api.post("/api/ai-models", body, format="json")
    # then the key is stored (stripped) and the answer shows it masked only
    assert response.status_code == 201
    assert AIModel.objects.get().api_key == MODEL_KEY
    assert (response.json()["api_key_masked"], response.json()["has_api_key"]) == (
        "sk-...cdef",
        True,
    )
    assert "api_key" not in response.json()


@pytest.mark.parametrize(
    ("key", "mask"),
    [("abc", "****"), ("abcdefghi", "****"), ("sk-live-1234567890abcdef", "...cdef")],
)
def test_a_short_key_is_not_revealed_by_its_mask(api, key, mask):
    # given a model posted with a short key
    body = {"name": "GPT", "provider": "openai", "api_key": key}
    # when it is created and read back
    created = api.post("/api/ai-models", body, format="json")
    shown = api.get(f"/api/ai-models/{created.json()['id']}")
    # then both answers show the mask, which shows at most a quarter of the key
    assert (created.status_code, shown.status_code) == (201, 200)
    assert (created.json()["api_key_masked"], shown.json()["api_key_masked"]) == (mask, mask)


def test_create_an_openai_compatible_model_with_its_endpoint(api):
    body = {
        "name": "Local",
        "provider": "openai_compatible",
        "base_url": "http://127.0.0.1:11434/v1",
        "model_name": "llama3",
        "temperature": 0,
        "max_tokens": 200000,
        "timeout_seconds": 180,
        "enabled": False,
    }
    response = api.post("/api/ai-models", body, format="json")
    assert response.status_code == 201
    model = AIModel.objects.get()
    assert (model.base_url, model.model_name, model.temperature, model.enabled) == (
        "http://127.0.0.1:11434/v1",
        "llama3",
        0,
        False,
    )


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        (
            {"name": "X", "provider": "mistral"},
            {
                "provider": [
                    "'mistral' is not one of: deepseek, qwen, openai, claude, gemini, grok, "
                    "kimi, openai_compatible, simulated."
                ]
            },
        ),
        (
            {"name": "X", "provider": "openai_compatible"},
            {
                "base_url": ["Required for provider openai_compatible."],
                "model_name": ["Required for provider openai_compatible."],
            },
        ),
        (
            {"name": "X", "provider": "openai", "base_url": "ftp://example.com"},
            {"base_url": ["Must be an http or https URL."]},
        ),
        (
            {"name": "X", "provider": "simulated", "temperature": 2.5},
            {"temperature": ["Ensure this value is less than or equal to 2."]},
        ),
        (
            {"name": "X", "provider": "simulated", "max_tokens": 0},
            {"max_tokens": ["Ensure this value is greater than or equal to 1."]},
        ),
        (
            {"name": "X", "provider": "simulated", "timeout_seconds": 181},
            {"timeout_seconds": ["Ensure this value is less than or equal to 180."]},
        ),
        (
            {"name": "X", "provider": "simulated", "timeout_seconds": 0},
            {"timeout_seconds": ["Ensure this value is greater than or equal to 1."]},
        ),
        (
            {"name": "X", "provider": "simulated", "output_mode": "yaml"},
            {"output_mode": ["'yaml' is not one of: tagged, json_schema."]},
        ),
        (
            {"name": "X", "provider": "deepseek", "output_mode": "json_schema"},
            {"output_mode": ["Provider deepseek cannot decode under a JSON schema."]},
        ),
        ({"provider": "simulated"}, {"name": ["This field is required."]}),
        ({"name": "", "provider": "simulated"}, {"name": ["This field may not be blank."]}),
    ],
    ids=[
        "unknown-provider",
        "compatible-without-endpoint",
        "not-http",
        "temperature",
        "max-tokens",
        "timeout-high",
        "timeout-low",
        "unknown-output-mode",
        "no-json-schema-at-deepseek",
        "no-name",
        "blank-name",
    ],
)
def test_create_refuses_bad_input_naming_each_field(api, body, fields):
    response = api.post("/api/ai-models", body, format="json")
    assert response.status_code == 400
    assert response.json() == refusal(fields)
    assert AIModel.objects.count() == 0


def test_a_local_server_model_may_ask_for_json_schema_output(api):
    # given a llama.cpp server behind openai_compatible
    body = {
        "name": "Local",
        "provider": "openai_compatible",
        "base_url": "http://127.0.0.1:8089/v1",
        "model_name": "qwen2.5-coder-0.5b-instruct",
        "output_mode": "json_schema",
    }
    # when
    response = api.post("/api/ai-models", body, format="json")
    # then
    assert response.status_code == 201
    assert response.json()["output_mode"] == "json_schema"
    assert AIModel.objects.get().output_mode == "json_schema"


def test_list_shows_own_models_newest_first(api, user, other_user):
    older, newer = AIModelFactory(owner=user), AIModelFactory(owner=user)
    AIModelFactory(owner=other_user)
    response = api.get("/api/ai-models")
    assert response.status_code == 200
    assert [m["id"] for m in response.json()["results"]] == [newer.pk, older.pk]


def test_detail(api, user):
    model = AIModelFactory(owner=user, provider="openai", api_key=MODEL_KEY)
    response = api.get(f"/api/ai-models/{model.pk}")
    assert response.status_code == 200
    assert (response.json()["id"], response.json()["api_key_masked"]) == (model.pk, "sk-...cdef")


def test_update_changes_only_the_given_fields_and_keeps_the_key(api, user):
    # given a keyed model
    model = AIModelFactory(owner=user, provider="openai", api_key=MODEL_KEY, temperature=0.7)
    # when only its temperature is changed
    response = api.patch(f"/api/ai-models/{model.pk}", {"temperature": 0.2}, format="json")
    # then the key and the other fields stay
    assert response.status_code == 200
    model.refresh_from_db()
    assert (model.temperature, model.api_key, model.provider) == (0.2, MODEL_KEY, "openai")
    assert response.json()["has_api_key"] is True


def test_update_with_an_empty_key_removes_it(api, user):
    model = AIModelFactory(owner=user, provider="openai", api_key=MODEL_KEY)
    response = api.patch(f"/api/ai-models/{model.pk}", {"api_key": ""}, format="json")
    assert response.status_code == 200
    model.refresh_from_db()
    assert (model.api_key, response.json()["has_api_key"]) == ("", False)


def test_update_checks_the_whole_model_again(api, user):
    # given a simulated model
    model = AIModelFactory(owner=user)
    # when it becomes openai_compatible without an endpoint
    response = api.patch(
        f"/api/ai-models/{model.pk}", {"provider": "openai_compatible"}, format="json"
    )
    # then it is refused and unchanged
    assert response.status_code == 400
    assert response.json()["fields"] == {"base_url": ["Required for provider openai_compatible."]}
    model.refresh_from_db()
    assert model.provider == "simulated"


def test_delete(api, user):
    model = AIModelFactory(owner=user)
    response = api.delete(f"/api/ai-models/{model.pk}")
    assert response.status_code == 204
    assert AIModel.objects.count() == 0


def test_delete_refuses_a_model_seated_in_a_debate(api, user):
    # given a model seated in a debate
    participant = ParticipantFactory(debate__owner=user, ai_model__owner=user, ai_model__name="M")
    # when it is deleted
    response = api.delete(f"/api/ai-models/{participant.ai_model_id}")
    # then it is a conflict and the model stays
    assert response.status_code == 409
    assert response.json() == {
        "code": "conflict",
        "message": "AI model 'M' is seated in debates; delete those debates first.",
        "fields": {},
    }
    assert AIModel.objects.filter(pk=participant.ai_model_id).exists()


def test_delete_refuses_a_model_a_schedule_seats(api, user):
    model = AIModelFactory(owner=user, name="M")
    ScheduleFactory(
        owner=user, name="Hourly", participants=[{"ai_model": model.pk, "personality": "bull"}]
    )
    response = api.delete(f"/api/ai-models/{model.pk}")
    assert response.status_code == 409
    assert response.json()["message"] == (
        "AI model 'M' is seated by schedule(s) Hourly; change or delete them first."
    )
    assert AIModel.objects.filter(pk=model.pk).exists()


def test_an_ai_model_overrides_its_catalogue_capabilities(api):
    # given
    data = {
        "name": "Terra",
        "provider": "openai",
        "api_key": "sk-test-override-0001",
        "capabilities": {"temperature": "free", "brief_effort": "medium"},
    }
    # when
    response = api.post("/api/ai-models", data, format="json")
    # then
    assert response.status_code == 201
    assert AIModel.objects.get().capabilities == data["capabilities"]


@pytest.mark.parametrize(
    ("capabilities", "message"),
    [
        ({"temperature": "hot"}, "temperature: must be"),
        ({"reasoning": {"param": "mind", "efforts": ["low"]}}, "reasoning.param: must be"),
        ({"brief_effort": "extreme"}, "brief_effort: must be one of the model's efforts"),
        ({"vibes": 1}, "vibes: unknown capability"),
    ],
)
def test_a_bad_capability_override_is_a_400_naming_the_field(api, capabilities, message):
    # when
    response = api.post(
        "/api/ai-models",
        {"name": "X", "provider": "openai", "capabilities": capabilities},
        format="json",
    )
    # then
    assert response.status_code == 400
    assert list(response.json()["fields"]) == ["capabilities"]
    assert message in response.json()["fields"]["capabilities"][0]
    assert not AIModel.objects.exists()


def test_a_deprecated_model_shows_its_warning(api, user):
    # given gpt-5-mini, deprecated with a shutdown on 2026-12-11
    model = AIModelFactory(owner=user, provider="openai", model_name="gpt-5-mini")
    # when
    body = api.get(f"/api/ai-models/{model.pk}").json()
    # then (until the shutdown; from it the model is retired)
    today = timezone.localdate()
    status = "deprecated" if today < date(2026, 12, 11) else "retired"
    assert body["catalogue"]["status"] == status
    assert body["catalogue"]["shutdown"] == "2026-12-11"
    assert body["catalogue"]["replacement"] == "gpt-6.1-terra"
    assert "use gpt-6.1-terra instead" in body["catalogue"]["warning"]


def test_a_retired_model_cannot_be_seated_in_a_new_debate(api, user, seeded):
    # given an AI model on Kimi's discontinued kimi-k2-0905-preview
    model = AIModelFactory(
        owner=user, provider="kimi", model_name="kimi-k2-0905-preview", api_key="sk-kimi-0001"
    )
    seats = [
        {"ai_model": model.pk, "personality": "bull"},
        {"ai_model": model.pk, "personality": "bear"},
    ]
    # when
    response = api.post("/api/debates", debate_body(seeded, participants=seats), format="json")
    # then
    assert response.status_code == 400
    why = (
        f"AI model {model.name!r}: kimi-k2-0905-preview was retired on 2026-05-25; "
        "use kimi-k2.6 instead."
    )
    assert response.json() == refusal(
        {"participants[0].ai_model": [why], "participants[1].ai_model": [why]}
    )
    assert not Debate.objects.exists()
