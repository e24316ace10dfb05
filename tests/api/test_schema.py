"""The OpenAPI schema: valid, complete about errors, and true of the live API
(schemathesis against the WSGI application)."""

from __future__ import annotations

from typing import Any

import hypothesis
import pytest
import schemathesis
import yaml
from django.core.management import call_command
from drf_spectacular.generators import SchemaGenerator
from rest_framework.authtoken.models import Token
from schemathesis.checks import not_a_server_error
from schemathesis.config import SchemathesisConfig
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    response_schema_conformance,
    status_code_conformance,
)

from arena.wsgi import application
from debates.models import ModelPrice
from tests.api.conftest import MODEL_KEY, SECRETS
from tests.backtests.factories import BacktestFactory
from tests.debates.factories import (
    AIModelFactory,
    DebateFactory,
    DecisionFactory,
    MessageFactory,
    ParticipantFactory,
    ScheduleFactory,
    VoteFactory,
)
from tests.strategies.factories import StrategyFactory
from tests.traders.factories import ExecutionFactory, OrderFactory, PositionFactory, TraderFactory

SEED = 20240905
MAX_EXAMPLES = 25
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    # What the schema says is invalid (an unknown field, a rule between fields broken, a
    # parameter out of its enum) is refused. Its converse is not checked: a request
    # valid by the schema may still name an object that does not exist or is another
    # user's, which only the database knows.
    negative_data_rejection,
]


OPERATIONS = {
    ("POST", "/api/auth/token"),
    ("POST", "/api/auth/token/revoke"),
    ("GET", "/api/debates"),
    ("POST", "/api/debates"),
    ("GET", "/api/debates/personalities"),
    ("GET", "/api/debates/{debate_id}"),
    ("DELETE", "/api/debates/{debate_id}"),
    ("POST", "/api/debates/{debate_id}/start"),
    ("POST", "/api/debates/{debate_id}/cancel"),
    ("POST", "/api/debates/{debate_id}/retry"),
    ("POST", "/api/debates/{debate_id}/execute"),
    ("GET", "/api/debates/{debate_id}/messages"),
    ("GET", "/api/debates/{debate_id}/votes"),
    ("POST", "/api/debates/{debate_id}/turns"),
    ("POST", "/api/debates/{debate_id}/votes"),
    ("POST", "/api/debates/{debate_id}/skip-turn"),
    *{
        (method, path)
        for resource, key in (
            ("ai-models", "ai_model_id"),
            ("strategies", "strategy_id"),
            ("traders", "trader_id"),
            ("schedules", "schedule_id"),
        )
        for method, path in (
            ("GET", f"/api/{resource}"),
            ("POST", f"/api/{resource}"),
            ("GET", f"/api/{resource}/{{{key}}}"),
            ("PATCH", f"/api/{resource}/{{{key}}}"),
            ("DELETE", f"/api/{resource}/{{{key}}}"),
        )
    },
    ("GET", "/api/traders/{trader_id}/positions"),
    ("GET", "/api/traders/{trader_id}/orders"),
    ("GET", "/api/traders/{trader_id}/executions"),
    ("GET", "/api/backtests"),
    ("POST", "/api/backtests"),
    ("GET", "/api/backtests/{backtest_id}"),
    ("DELETE", "/api/backtests/{backtest_id}"),
    ("POST", "/api/backtests/{backtest_id}/cancel"),
    ("GET", "/api/evaluations/ledger"),
    ("GET", "/api/evaluations/calibration"),
    ("GET", "/api/evaluations/monitors"),
    *{
        ("GET", f"/api/{resource}/{{{key}}}/{figure}")
        for resource, key in (
            ("strategies", "strategy_id"),
            ("schedules", "schedule_id"),
            ("backtests", "backtest_id"),
        )
        for figure in ("ledger", "calibration", "monitors")
    },
}


def _operations() -> list[tuple[str, str, dict[str, Any]]]:
    schema = SchemaGenerator().get_schema(request=None, public=True)
    return [
        (path, method, operation)
        for path, methods in schema["paths"].items()
        for method, operation in methods.items()
    ]


def test_the_schema_is_valid_openapi(tmp_path):
    # when the schema is generated with validation
    target = tmp_path / "schema.yaml"
    call_command("spectacular", "--validate", "--file", str(target))
    # then it is OpenAPI 3, lists every operation of the REST API, and leaves the SSE
    # stream out (it is no JSON operation)
    schema = yaml.safe_load(target.read_text())
    assert schema["openapi"].startswith("3.")
    documented = {(method.upper(), path) for path, method, _ in _operations()}
    assert documented >= OPERATIONS
    assert "/api/debates/{debate_id}/stream" not in schema["paths"]
    assert "/api/backtests/{backtest_id}/stream" not in schema["paths"]


def test_every_operation_documents_its_errors_with_the_error_body():
    # given every operation but the token exchange and the schema itself
    operations = [
        (path, method, operation)
        for path, method, operation in _operations()
        if path not in ("/api/schema/", "/api/auth/token")
    ]
    for path, method, operation in operations:
        responses = operation["responses"]
        # then each documents 401, and 404 wherever the path names an object
        assert "401" in responses, (method, path)
        if "{" in path or (method == "get" and "results" in str(responses)):
            assert "404" in responses, (method, path)
        if "requestBody" in operation:
            assert "400" in responses, (method, path)
        for status in ("400", "401", "404", "409"):
            if status in responses:
                body = responses[status]["content"]["application/json"]["schema"]
                assert body == {"$ref": "#/components/schemas/Error"}, (method, path, status)


@pytest.fixture
def world(user) -> dict[str, int]:
    """Objects of every kind for the schemathesis run, with secrets stored, and their ids:
    every path parameter names one of them, so operations get past 404 to their real work.
    The debate is completed with an executable decision; its strategy is on the dataset."""
    strategy = StrategyFactory(owner=user)
    model = AIModelFactory(owner=user, provider="openai", api_key=MODEL_KEY)
    trader = TraderFactory(owner=user, exchange="paper")
    debate = DebateFactory(owner=user, strategy=strategy, status="completed", phase="done")
    participant = ParticipantFactory(debate=debate, ai_model=model, speak_order=0)
    MessageFactory(participant=participant)
    VoteFactory(ballot__participant=participant)
    DecisionFactory(debate=debate)
    execution = ExecutionFactory(
        decision=DecisionFactory(debate__owner=user), trader=trader, status="awaiting_approval"
    )
    PositionFactory(trader=trader)
    OrderFactory(trader=trader)
    schedule = ScheduleFactory(
        owner=user,
        strategy=strategy,
        participants=[{"ai_model": model.pk, "personality": "bull"}] * 2,
    )
    return {
        "debate_id": debate.pk,
        "ai_model_id": AIModelFactory(owner=user).pk,
        "strategy_id": StrategyFactory(owner=user).pk,
        "trader_id": trader.pk,
        "execution_id": execution.pk,
        "schedule_id": schedule.pk,
        "backtest_id": BacktestFactory(
            owner=user, name="Done", strategy=strategy, steps_done=6, status="completed"
        ).pk,
        "price_id": ModelPrice.objects.create(
            provider="deepseek",
            input_usd_per_mtok=1,
            cached_input_usd_per_mtok=0,
            output_usd_per_mtok=2,
        ).pk,
    }


@pytest.fixture
def token(user) -> str:
    """The API token of ``user``, sent by every schemathesis request."""
    return Token.objects.create(user=user).key


# Loaded once at import: the schema view needs no database. (The lazy
# ``schemathesis.pytest.from_fixture`` loader does not run under pytest 9.2.)
schema = schemathesis.openapi.from_wsgi(
    "/api/schema/",
    application,
    config=SchemathesisConfig.from_dict(
        {"seed": SEED, "generation": {"max-examples": MAX_EXAMPLES}}
    ),
)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@schema.parametrize()
@hypothesis.settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(hypothesis.HealthCheck),
)
def test_every_operation_answers_as_its_schema_says(case, world, token):
    # given a request generated from the schema, valid or not, naming the user's objects
    for name in case.path_parameters or {}:
        case.path_parameters[name] = world[name]
    # when it is sent
    response = case.call_and_validate(headers={"Authorization": f"Token {token}"}, checks=CHECKS)
    # then no answer is a server error, each matches its documented status and body,
    # and none holds a stored secret
    body = response.content.decode(errors="replace") if response.content else ""
    assert not [secret for secret in SECRETS if secret in body]


def test_inputs_declare_that_unknown_fields_and_broken_rules_are_refused():
    # given the schema's input components
    schemas = SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]
    inputs = {name: schema for name, schema in schemas.items() if name.endswith("Input")}
    # then each refuses keys it does not declare, and a required name may not be empty
    assert inputs and all(schema["additionalProperties"] is False for schema in inputs.values())
    assert schemas["StrategyInput"]["properties"]["name"]["minLength"] == 1
    # and the creates declare their rules between fields (a partial update has none)
    for name in ("AIModelInput", "DebateCreateInput", "ScheduleInput", "StrategyInput"):
        assert schemas[name]["allOf"], name
    assert "allOf" not in schemas["PatchedAIModelInput"]
    assert schemas["AIModelInput"]["allOf"] == [
        {
            "anyOf": [
                {
                    "required": ["provider"],
                    "properties": {"provider": {"not": {"enum": ["openai_compatible"]}}},
                },
                {
                    "required": ["base_url", "model_name"],
                    "properties": {
                        "base_url": {"not": {"enum": ["", None, []]}},
                        "model_name": {"not": {"enum": ["", None, []]}},
                    },
                },
                {"not": {"required": ["provider"]}},
            ]
        }
    ]
