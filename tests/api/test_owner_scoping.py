"""Owner scoping: another user's debate, model, strategy, trader or schedule is a 404 for
every verb and is left as it was; lists never show it."""

from typing import Any

import pytest
from django.forms.models import model_to_dict

from debates.models import AIModel, Debate, Schedule
from strategies.models import Strategy
from tests.debates.factories import (
    AIModelFactory,
    DebateFactory,
    DecisionFactory,
    ParticipantFactory,
    ScheduleFactory,
)
from tests.strategies.factories import StrategyFactory
from tests.traders.factories import TraderFactory
from traders.models import Execution, Trader

pytestmark = pytest.mark.django_db


@pytest.fixture
def theirs(other_user) -> dict[str, Any]:
    """One object of each kind, owned by another user; the debate is completed, with an
    executable decision, so that every verb would otherwise succeed."""
    debate = DebateFactory(owner=other_user, status="completed")
    ParticipantFactory(debate=debate, ai_model__owner=other_user)
    DecisionFactory(debate=debate)
    return {
        "debate": debate,
        "ai_model": AIModelFactory(owner=other_user),
        "strategy": StrategyFactory(owner=other_user),
        "trader": TraderFactory(owner=other_user),
        "schedule": ScheduleFactory(owner=other_user),
    }


def _body(user) -> dict[str, Any]:
    return {"trader": TraderFactory(owner=user).pk}


# (method, path template, kind of the object in the path, body builder)
OPERATIONS = [
    ("get", "/api/debates/{id}", "debate", None),
    ("delete", "/api/debates/{id}", "debate", None),
    ("post", "/api/debates/{id}/start", "debate", None),
    ("post", "/api/debates/{id}/cancel", "debate", None),
    ("post", "/api/debates/{id}/retry", "debate", None),
    ("post", "/api/debates/{id}/execute", "debate", _body),
    ("get", "/api/debates/{id}/messages", "debate", None),
    ("get", "/api/debates/{id}/votes", "debate", None),
    ("get", "/api/ai-models/{id}", "ai_model", None),
    ("patch", "/api/ai-models/{id}", "ai_model", lambda u: {"name": "Mine now"}),
    ("delete", "/api/ai-models/{id}", "ai_model", None),
    ("get", "/api/strategies/{id}", "strategy", None),
    ("patch", "/api/strategies/{id}", "strategy", lambda u: {"name": "Mine now"}),
    ("delete", "/api/strategies/{id}", "strategy", None),
    ("get", "/api/traders/{id}", "trader", None),
    ("patch", "/api/traders/{id}", "trader", lambda u: {"status": "stopped"}),
    ("delete", "/api/traders/{id}", "trader", None),
    ("get", "/api/traders/{id}/positions", "trader", None),
    ("get", "/api/traders/{id}/orders", "trader", None),
    ("get", "/api/traders/{id}/executions", "trader", None),
    ("get", "/api/schedules/{id}", "schedule", None),
    ("patch", "/api/schedules/{id}", "schedule", lambda u: {"enabled": False}),
    ("delete", "/api/schedules/{id}", "schedule", None),
]
MODELS = {
    "debate": Debate,
    "ai_model": AIModel,
    "strategy": Strategy,
    "trader": Trader,
    "schedule": Schedule,
}
NAMES = {
    "debate": "Debate",
    "ai_model": "AI model",
    "strategy": "Strategy",
    "trader": "Trader",
    "schedule": "Schedule",
}


@pytest.mark.parametrize(
    ("method", "path", "kind", "body"),
    OPERATIONS,
    ids=[f"{method} {path}" for method, path, _, _ in OPERATIONS],
)
def test_another_users_object_is_not_found_for_every_verb(
    api, user, theirs, method, path, kind, body
):
    # given an object of another user, as stored
    obj = theirs[kind]
    before = model_to_dict(MODELS[kind].objects.get(pk=obj.pk))
    # when the user acts on it
    response = getattr(api, method)(
        path.format(id=obj.pk), body(user) if body else None, format="json"
    )
    # then it is not found, and nothing about it changed
    assert response.status_code == 404
    assert response.json() == {
        "code": "not_found",
        "message": f"{NAMES[kind]} not found.",
        "fields": {},
    }
    assert model_to_dict(MODELS[kind].objects.get(pk=obj.pk)) == before
    assert Execution.objects.count() == 0


@pytest.mark.parametrize(
    "path", ["/api/debates", "/api/ai-models", "/api/strategies", "/api/traders", "/api/schedules"]
)
def test_lists_never_show_another_users_objects(api, theirs, path):
    response = api.get(path)
    assert response.status_code == 200
    assert response.json() == {"count": 0, "next": None, "previous": None, "results": []}


def test_a_debate_cannot_be_executed_on_another_users_trader(api, user, theirs):
    # given the user's completed debate and another user's trader
    debate = DebateFactory(owner=user, status="completed")
    DecisionFactory(debate=debate)
    # when it is executed on that trader
    response = api.post(
        f"/api/debates/{debate.pk}/execute", {"trader": theirs["trader"].pk}, format="json"
    )
    # then the trader is not found, exactly like one that does not exist
    missing = api.post(f"/api/debates/{debate.pk}/execute", {"trader": 10**9}, format="json")
    assert response.status_code == missing.status_code == 404
    assert (
        response.json()
        == missing.json()
        == {
            "code": "not_found",
            "message": "Trader not found.",
            "fields": {},
        }
    )
    assert Execution.objects.count() == 0
