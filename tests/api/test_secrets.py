"""No answer of the API contains a stored API key or exchange credential.

Every test of this package already has its answers scanned (the ``answers`` fixture);
this one makes sure every endpoint is asked while secrets are stored, including the
answers to writes that carry secrets and to refused writes."""

import pytest

from tests.api.conftest import (
    EXCHANGE_KEY,
    EXCHANGE_PASSPHRASE,
    EXCHANGE_SECRET,
    MODEL_KEY,
    SECRETS,
    debate_body,
)
from tests.debates.factories import DecisionFactory, ScheduleFactory
from tests.traders.factories import ExecutionFactory

pytestmark = pytest.mark.django_db


def test_no_answer_contains_a_stored_secret(api, user, seeded, answers):
    # given secrets stored on a model and a trader, and objects of every kind using them
    model, trader = seeded["keyed_model"], seeded["real_trader"]
    debate_id = api.post(
        "/api/debates",
        debate_body(
            seeded,
            participants=[
                {"ai_model": model.pk, "personality": "bull"},
                {"ai_model": seeded["models"][0].pk, "personality": "bear"},
            ],
            trader=trader.pk,
        ),
        format="json",
    ).json()["id"]
    ExecutionFactory(decision=DecisionFactory(debate__owner=user), trader=trader)
    schedule = ScheduleFactory(owner=user, trader=trader)
    # when every endpoint is read, and secrets are written, accepted or refused
    reads = [
        "/api/debates",
        f"/api/debates/{debate_id}",
        f"/api/debates/{debate_id}/messages",
        f"/api/debates/{debate_id}/votes",
        "/api/ai-models",
        f"/api/ai-models/{model.pk}",
        "/api/strategies",
        "/api/traders",
        f"/api/traders/{trader.pk}",
        f"/api/traders/{trader.pk}/positions",
        f"/api/traders/{trader.pk}/orders",
        f"/api/traders/{trader.pk}/executions",
        "/api/schedules",
        f"/api/schedules/{schedule.pk}",
        "/api/schema/",
    ]
    for path in reads:
        assert api.get(path).status_code == 200, path
    writes = [
        ("post", "/api/ai-models", {"name": "K", "provider": "openai", "api_key": MODEL_KEY}),
        ("post", "/api/ai-models", {"name": "", "provider": "x", "api_key": MODEL_KEY}),
        ("patch", f"/api/ai-models/{model.pk}", {"api_key": MODEL_KEY, "temperature": 9}),
        ("patch", f"/api/ai-models/{model.pk}", {"api_key": MODEL_KEY}),
        (
            "post",
            "/api/traders",
            {
                "name": "OKX",
                "exchange": "okx",
                "api_key": EXCHANGE_KEY,
                "api_secret": EXCHANGE_SECRET,
                "api_passphrase": EXCHANGE_PASSPHRASE,
            },
        ),
        ("post", "/api/traders", {"name": "B", "exchange": "bybit", "api_secret": EXCHANGE_SECRET}),
        ("patch", f"/api/traders/{trader.pk}", {"api_secret": EXCHANGE_SECRET, "fee_rate": "1"}),
    ]
    for method, path, body in writes:
        getattr(api, method)(path, body, format="json")
    # then no answer holds any of them
    assert len(answers) == 1 + len(reads) + len(writes)
    leaks = [
        (response.request["PATH_INFO"], secret)
        for response in answers
        for secret in SECRETS
        if secret in response.content.decode(errors="replace")
    ]
    assert leaks == []
