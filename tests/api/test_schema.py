"""The OpenAPI schema: valid, complete about errors, and true of the live API
(schemathesis against the WSGI application): what the schema calls valid is accepted,
what it calls invalid is refused, and every operation is reached past 404 to a 2xx, its
requests naming the user's seeded objects (``tests.api.seeds``)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
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
from schemathesis.openapi.checks import RejectedPositiveData
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    negative_data_rejection,
    positive_data_acceptance,
    response_schema_conformance,
    status_code_conformance,
)

from arena.apis import TOKEN_EXAMPLE
from arena.outbound import use_resolver
from arena.patterns import WHITESPACE
from arena.wsgi import application
from tests.api.conftest import SECRETS
from tests.api.seeds import Seeds
from tests.api.unstated import refused_by_unstated_rules
from tests.factories import UserFactory

SEED = 20240905
NOT_BLANK_TEXT = f"[^{WHITESPACE}]"
# The operations only staff may use: the run sends them as a staff user.
STAFF_PATHS = ("/api/prices",)
MAX_EXAMPLES = 25
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
    # What the schema calls invalid (an unknown field, a rule between fields broken, a
    # parameter out of its enum) is refused, and what it calls valid is accepted: the
    # requests name the user's seeded objects, so "no such object" is not the answer.
    negative_data_rejection,
    positive_data_acceptance,
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
    # then it is OpenAPI 3 and lists every operation of the REST API
    schema = yaml.safe_load(target.read_text())
    assert schema["openapi"].startswith("3.")
    documented = {(method.upper(), path) for path, method, _ in _operations()}
    assert documented >= OPERATIONS


@pytest.mark.parametrize(
    ("path", "parameters"),
    [
        ("/api/debates/{debate_id}/stream", ["Last-Event-ID", "debate_id", "lastEventId", "token"]),
        ("/api/backtests/{backtest_id}/stream", ["Last-Event-ID", "backtest_id", "lastEventId"]),
    ],
    ids=["debate", "backtest"],
)
def test_the_streams_are_described_as_server_sent_events(path, parameters):
    # when the schema is generated
    stream = SchemaGenerator().get_schema(request=None, public=True)["paths"][path]
    # then each stream is a GET answering Server-Sent Events, or a JSON error before any
    assert list(stream) == ["get"]
    responses = stream["get"]["responses"]
    assert responses["200"]["content"] == {"text/event-stream": {"schema": {"type": "string"}}}
    assert sorted(responses) == ["200", "400", "401", "404"]
    # with how it authenticates and resumes
    assert [parameter["name"] for parameter in stream["get"]["parameters"]] == parameters


def test_every_operation_documents_its_errors_with_the_error_body():
    # given every operation but the schema itself
    operations = [
        (path, method, operation)
        for path, method, operation in _operations()
        if path != "/api/schema/"
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


def _unresolvable(host: str, port: int) -> list[str]:
    raise OSError("the schema run resolves no name")


@pytest.fixture
def offline() -> Iterator[None]:
    """No generated URL is looked up in DNS: every name is unresolvable, which the
    outbound policy lets pass at save (it checks again when connecting)."""
    with use_resolver(_unresolvable):
        yield


@pytest.fixture
def user(db):
    """The user who sends the run's requests: alice of the token endpoint's example, so
    that the example logs in."""
    return UserFactory(username=TOKEN_EXAMPLE["username"], password=TOKEN_EXAMPLE["password"])


@pytest.fixture
def seeds(user) -> Seeds:
    """The user's objects, each in the state its operations act on (``tests.api.seeds``)."""
    return Seeds(user)


@pytest.fixture
def token(user) -> str:
    """The API token of ``user``, sent by every schemathesis request but staff's."""
    return Token.objects.create(user=user).key


@pytest.fixture
def staff_token(db) -> str:
    """A staff user's API token, sent by the requests of the operations only staff may
    use (``STAFF_PATHS``)."""
    return Token.objects.create(user=UserFactory(username="staff", is_staff=True)).key


@pytest.fixture
def answered(request) -> Iterator[list[int]]:
    """The statuses an operation answered in the run (to its own method); once its
    requests are sent, one of them must be a 2xx (every operation, none let off): the
    operation was reached past refusals and 404s to its work."""
    statuses: list[int] = []
    yield statuses
    assert any(200 <= status < 300 for status in statuses), (
        f"{request.node.name} answered no 2xx: {dict(Counter(statuses))}"
    )


# Loaded once at import: the schema view needs no database. (The lazy
# ``schemathesis.pytest.from_fixture`` loader does not run under pytest 9.2.) The live
# streams are left out: an answer that streams until the client leaves has no end for
# the run to check (tests/streams test them).
schema = schemathesis.openapi.from_wsgi(
    "/api/schema/",
    application,
    config=SchemathesisConfig.from_dict(
        {"seed": SEED, "generation": {"max-examples": MAX_EXAMPLES}}
    ),
).exclude(path_regex=r"/stream$")


@schema.hook
def filter_failure(context: Any, failure: Any, case: Any, response: Any) -> bool:
    """Count every failure but valid input refused by rules the schema cannot state,
    which the operation's description says (``tests.api.unstated``)."""
    if not isinstance(failure, RejectedPositiveData):
        return True
    body = response.json() if response.content else None
    return not refused_by_unstated_rules(case.operation.label, response.status_code, body)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
@schema.parametrize()
@hypothesis.settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(hypothesis.HealthCheck),
)
def test_every_operation_answers_as_its_schema_says(
    case, seeds, token, staff_token, answered, offline
):
    # given a request generated from the schema, valid or not, naming the user's objects
    seeds.place(case)
    # when it is sent (its status kept whatever the checks make of it, unless the coverage
    # phase tried the path with another method: a 405, or OPTIONS' 200, reaches nothing)
    sender = staff_token if case.path.startswith(STAFF_PATHS) else token
    headers = {"Authorization": f"Token {sender}"}
    response = case.call(headers=headers)
    if case.method.upper() == case.operation.method.upper():
        answered.append(response.status_code)
    # then it answers as the schema says: no server error, the documented status and body,
    # valid input accepted and invalid input refused; and no answer holds a stored secret
    case.validate_response(response, checks=CHECKS, headers=headers)
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
                        "base_url": {"not": {"enum": ["", None, []]}, "pattern": NOT_BLANK_TEXT},
                        "model_name": {"not": {"enum": ["", None, []]}, "pattern": NOT_BLANK_TEXT},
                    },
                },
                {"not": {"required": ["provider"]}},
            ]
        }
    ]
