"""The leakage flag: a backtest window starting before a model's training cutoff."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from evaluations.selectors import contamination
from tests.debates.factories import AIModelFactory

pytestmark = pytest.mark.django_db


def test_a_model_created_without_a_cutoff_gets_the_catalogues(api_client):
    # when models are created without a training cutoff
    made = [
        api_client.post("/api/ai-models", body, format="json").json()
        for body in (
            {"name": "Mini", "provider": "openai", "api_key": "sk-0123456789"},
            {"name": "Sim", "provider": "simulated"},
            {"name": "Own", "provider": "openai", "model_name": "gpt-x", "api_key": "sk-012345"},
            {"name": "Set", "provider": "simulated", "training_cutoff": "2024-03-01"},
        )
    ]
    # then the catalogue's known model has its cutoff, the others none unless given
    assert [m["training_cutoff"] for m in made] == ["2026-06-01", None, None, "2024-03-01"]


def test_a_window_before_a_cutoff_is_contaminated_naming_the_model(user):
    known = AIModelFactory(
        owner=user, name="Known", provider="openai", training_cutoff=date(2024, 5, 31)
    )
    unknown = AIModelFactory(owner=user, name="Unknown", provider="openai", model_name="gpt-x")
    simulated = AIModelFactory(owner=user, name="Sim")
    ids = [known.pk, unknown.pk, simulated.pk]
    found = contamination(start=datetime(2024, 5, 8, 12, tzinfo=UTC), ai_model_ids=ids)
    assert found["contaminated"] is True
    assert [(m["name"], m["training_cutoff"]) for m in found["models"]] == [("Known", "2024-05-31")]
    assert [m["name"] for m in found["cutoff_unknown"]] == ["Unknown"]
    # and a window starting after the cutoff is not
    after = contamination(start=datetime(2024, 6, 1, tzinfo=UTC), ai_model_ids=ids)
    assert (after["contaminated"], after["models"]) == (False, [])
