"""What the schema says of an input's values is what the API does with them: text
without NUL characters, not blank where it must not be, no longer than its limit as
sent."""

from __future__ import annotations

import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from drf_spectacular.generators import SchemaGenerator

from arena.patterns import WHITESPACE
from debates.models import AIModel
from strategies.models import Strategy
from tests.api.conftest import refusal
from traders.models import Trader

pytestmark = pytest.mark.django_db

NUL = "Null characters are not allowed."


def _input_strings(schema: Any, where: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Yield every writable plain string of an input component (no enum, no format),
    each branch of a ``oneOf`` apart, with where it is."""
    if not isinstance(schema, dict):
        return
    plain = schema.get("type") == "string" and not {"enum", "format", "readOnly"} & set(schema)
    # (maxLength 0: the empty string a blank-allowing field takes apart)
    if plain and schema.get("maxLength") != 0:
        yield where, schema
    for key, value in schema.items():
        if isinstance(value, dict):
            yield from _input_strings(value, f"{where}.{key}")
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from _input_strings(item, f"{where}.{key}[{index}]")


def _input_components() -> dict[str, Any]:
    schemas = SchemaGenerator().get_schema(request=None, public=True)["components"]["schemas"]
    return {name: schema for name, schema in schemas.items() if name.endswith("Input")}


def test_every_text_of_every_input_refuses_nul_in_the_schema():
    # given every writable plain string of the schema's inputs
    strings = [item for name, s in _input_components().items() for item in _input_strings(s, name)]
    # then each has a pattern, which refuses a NUL character anywhere
    assert len(strings) > 30
    for where, schema in strings:
        assert re.search(schema["pattern"], "BTC\x00") is None, where
        assert re.search(schema["pattern"], "\x00") is None, where


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("post", "/api/strategies", {"name": "Trend\x00"}, "name"),
        (
            "post",
            "/api/ai-models",
            {"name": "M", "provider": "simulated", "api_key": "\x00"},
            "api_key",
        ),
        ("post", "/api/traders", {"name": "Paper\x00one"}, "name"),
        ("post", "/api/auth/token", {"username": "alice\x00", "password": "x"}, "username"),
    ],
    ids=["name", "write-only-secret", "name-inside", "login"],
)
def test_a_nul_character_in_any_text_is_a_400_naming_the_field(api, method, path, body, field):
    # when text holding a NUL character is sent
    response = getattr(api, method)(path, body, format="json")
    # then it is refused naming the field, and nothing is written
    assert response.status_code == 400
    assert response.json() == refusal({field: [NUL]})
    assert (Strategy.objects.count(), AIModel.objects.count(), Trader.objects.count()) == (0, 0, 0)


def test_a_nul_character_is_refused_in_a_change_too(api, user):
    # given a strategy
    strategy = Strategy.objects.create(owner=user, name="Trend")
    # when a change names it with a NUL character
    response = api.patch(f"/api/strategies/{strategy.pk}", {"role_text": "a\x00b"}, format="json")
    # then it is refused naming the field, and the strategy is unchanged
    assert response.status_code == 400
    assert response.json() == refusal({"role_text": [NUL]})
    strategy.refresh_from_db()
    assert strategy.role_text == ""


def test_blank_text_is_refused_where_the_schema_refuses_it(api):
    # given the pattern of a strategy's name
    pattern = _input_components()["StrategyInput"]["properties"]["name"]["pattern"]
    blank = " \t\u3000\n"
    # when a blank name is sent
    response = api.post("/api/strategies", {"name": blank}, format="json")
    # then the schema and the API both refuse it
    assert re.search(pattern, blank) is None
    assert re.search(pattern, " Trend ") is not None
    assert response.status_code == 400
    assert response.json() == refusal({"name": ["This field may not be blank."]})


def test_a_length_limit_counts_the_text_as_sent(api):
    # given a name as long as its limit (100), then padded past it
    response = api.post("/api/strategies", {"name": "x" * 100}, format="json")
    assert response.status_code == 201
    # when it is sent padded with spaces past the limit
    padded = api.post("/api/strategies", {"name": " " + "y" * 100}, format="json")
    # then it is refused, as the schema's maxLength says, though trimmed it would fit
    assert padded.status_code == 400
    assert padded.json() == refusal(
        {"name": ["Ensure this field has no more than 100 characters."]}
    )


def test_the_schemas_whitespace_is_what_the_api_trims():
    # given every character Python's str.strip() removes (DRF trims text with it)
    trimmed = {chr(code) for code in range(sys.maxunicode + 1) if chr(code).isspace()}
    # then the schema's whitespace class holds exactly those
    matched = {c for c in map(chr, range(sys.maxunicode + 1)) if re.match(f"[{WHITESPACE}]", c)}
    assert matched == trimmed
