"""What the schema says of an input's values is what the API does with them: text
without NUL characters, not blank where it must not be, no longer than its limit as
sent; decimals written plainly in a string, in their range; symbols in a form
``normalize_symbol`` reads; URLs; and the rules between a create's fields that the schema
states."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import jsonschema_rs
import pytest
from django.test import override_settings
from drf_spectacular.generators import SchemaGenerator
from hypothesis import given, settings
from hypothesis import strategies as st
from rest_framework import serializers

from arena.inputs import StrictDecimalField, UrlField
from arena.outbound import use_resolver
from arena.patterns import WHITESPACE
from debates.models import AIModel
from strategies.models import Strategy
from strategies.services import SymbolField
from tests.api.conftest import debate_body, refusal
from traders.models import Trader

pytestmark = pytest.mark.django_db

NUL = "Null characters are not allowed."


def matches(pattern: str, value: str) -> bool:
    """Say whether a pattern of the schema matches ``value`` as a JSON Schema validator
    reads it (ECMA 262; schemathesis's own validator)."""
    return jsonschema_rs.validator_for({"pattern": pattern}).is_valid(value)


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
        assert not matches(schema["pattern"], "BTC\x00"), where
        assert not matches(schema["pattern"], "\x00"), where


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
    assert not matches(pattern, blank)
    assert matches(pattern, " Trend ")
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
    # given every character (surrogates apart: no JSON text holds one alone)
    characters = [chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c <= 0xDFFF]
    # when the schema's whitespace class is read by a schema validator
    validator = jsonschema_rs.validator_for({"pattern": f"^[{WHITESPACE}]$"})
    matched = {c for c in characters if validator.is_valid(c)}
    # then it holds exactly what Python's str.strip() removes (DRF trims text with it)
    assert matched == {c for c in characters if c.isspace()}


# --- Decimals ----------------------------------------------------------------------------

DECIMAL_MESSAGE = 'Must be a decimal number in a string, written plainly: "2.5".'


@pytest.mark.parametrize(
    ("path", "body", "field", "component"),
    [
        ("/api/traders", {"name": "P", "fee_rate": ""}, "fee_rate", "TraderInput"),
        ("/api/strategies", {"name": "S", "min_order_usd": ""}, "min_order_usd", "StrategyInput"),
        (
            "/api/traders",
            {"name": "P", "starting_balance": "65."},
            "starting_balance",
            "TraderInput",
        ),
        ("/api/traders", {"name": "P", "fee_rate": 0.0005}, "fee_rate", "TraderInput"),
        (
            "/api/strategies",
            {"name": "S", "max_drawdown_pct": " "},
            "max_drawdown_pct",
            "StrategyInput",
        ),
    ],
    ids=["empty", "empty-strategy", "trailing-point", "json-number", "blank-where-null-is-allowed"],
)
def test_a_decimal_not_written_plainly_is_a_400_naming_it_as_the_schema_says(
    api, path, body, field, component
):
    # given the schema of the field
    schema = _input_components()[component]["properties"][field]
    # when the value is sent
    response = api.post(path, body, format="json")
    # then the API refuses it naming the field, and the schema refuses it too
    assert response.status_code == 400
    assert response.json() == refusal({field: [DECIMAL_MESSAGE]})
    assert schema["type"] == "string"
    value = body[field]
    assert not isinstance(value, str) or not matches(schema["pattern"], value)


def test_the_schema_states_a_decimals_range():
    # given the pattern of a trader's fee rate (0 to 0.099999, 6 decimals)
    pattern = _input_components()["TraderInput"]["properties"]["fee_rate"]["pattern"]
    # then it takes the values in range, written plainly, and no other
    taken = ["0", "0.0004", "0.05", "0.099999", "0.09", "0.0"]
    refused = ["", "0.1", "0.0999990", "1", "-0", "00", ".05", "0.", "4e-4", " 0.1", "0.0000001"]
    assert [v for v in taken if not matches(pattern, v)] == []
    assert [v for v in refused if matches(pattern, v)] == []


FIELDS = {
    "fee": StrictDecimalField(
        max_digits=8, decimal_places=6, min_value=Decimal("0"), max_value=Decimal("0.099999")
    ),
    "balance": StrictDecimalField(
        max_digits=20, decimal_places=8, min_value=Decimal("12"), max_value=Decimal("1000000000")
    ),
    "pct": StrictDecimalField(
        max_digits=5, decimal_places=2, min_value=Decimal("0.01"), max_value=Decimal("100")
    ),
    "usd": StrictDecimalField(max_digits=12, decimal_places=2, min_value=Decimal("0")),
    "nullable": StrictDecimalField(
        max_digits=6, decimal_places=2, min_value=Decimal("0.01"), allow_null=True
    ),
}
WRITTEN = st.one_of(
    st.text(alphabet="0123456789.-e ", max_size=14),
    st.decimals(allow_nan=False, allow_infinity=False, places=3).map(str),
    st.integers(min_value=0, max_value=10**12).map(str),
)


@pytest.mark.parametrize("name", sorted(FIELDS))
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_decimal_field_takes_exactly_what_its_pattern_matches(name, data):
    # given a decimal field and a string, one its pattern makes or any other
    field = FIELDS[name]
    value = data.draw(st.one_of(st.from_regex(field.pattern), WRITTEN))
    # when the field reads it
    try:
        field.run_validation(value)
        taken = True
    except serializers.ValidationError:
        taken = False
    # then it takes the string exactly when the pattern matches it
    assert taken == (matches(field.pattern, value)), value


# --- Symbols -----------------------------------------------------------------------------

SYMBOLS = SymbolField(), SymbolField(allow_blank=True)
SYMBOL_LIKE = st.lists(
    st.sampled_from(["ETH", "eth", "USDT", "usdT", "USD", "c", "9", "/", ":", "-", "_"])
    | st.sampled_from([" ", "\t", "\u3000", "\x00", "\u0131", "\u017f", "\u0661"]),
    max_size=8,
).map("".join)


@pytest.mark.parametrize("field", SYMBOLS, ids=["required", "blank-allowed"])
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_symbol_field_takes_exactly_what_its_schema_matches(field, data):
    # given a symbol field, its schema's pattern and length, and a string it makes or other
    pattern = field.schema_pattern()
    schema = jsonschema_rs.validator_for({"pattern": pattern, "maxLength": field.max_length})
    value = data.draw(st.one_of(st.from_regex(pattern, fullmatch=True), SYMBOL_LIKE))
    # when the field reads it
    try:
        field.run_validation(value)
        taken = True
    except serializers.ValidationError:
        taken = False
    # then it takes the string exactly when the schema does (blank fields: "" apart)
    assert taken == (schema.is_valid(value) or (field.allow_blank and value == "")), value


def test_a_malformed_symbol_is_a_400_naming_it_as_the_schema_says(api):
    # given the schema of a strategy's coins
    items = _input_components()["StrategyInput"]["properties"]["static_coins"]["items"]
    # when a coin that is no USDT pair is sent
    response = api.post("/api/strategies", {"name": "S", "static_coins": ["BTCUSD"]}, format="json")
    # then both refuse it, the API naming the coin
    assert not matches(items["pattern"], "BTCUSD")
    assert response.status_code == 400
    assert response.json() == refusal(
        {
            "static_coins[0]": [
                "unsupported symbol 'BTCUSD': looks like a USD pair; only USDT pairs are traded."
            ]
        }
    )


# --- Rules of a debate's fields ------------------------------------------------------------


def _schedule_body(seeded: dict[str, Any], **fields: Any) -> dict[str, Any]:
    body = debate_body(seeded, interval_minutes=60)
    del body["as_of"]
    return {**body, **fields}


def _backtest_body(seeded: dict[str, Any], **fields: Any) -> dict[str, Any]:
    body = {name: debate_body(seeded)[name] for name in ("name", "strategy", "participants")}
    window = {"start": "2024-08-10T00:00:00Z", "end": "2024-08-11T00:00:00Z"}
    return {**body, **window, "interval_minutes": 240, **fields}


def _seats(seeded: dict[str, Any], *kinds: str) -> list[dict[str, Any]]:
    models = iter(seeded["models"])
    return [
        {"kind": "human", "personality": "analyst"}
        if kind == "human"
        else {"ai_model": next(models).pk, "personality": "bull"}
        for kind in kinds
    ]


RULES = [
    ("DebateCreateInput", "/api/debates", lambda s: debate_body(s), True),
    (
        "DebateCreateInput",
        "/api/debates",
        lambda s: debate_body(s, participants=_seats(s, "model")),
        False,
    ),
    (
        "DebateCreateInput",
        "/api/debates",
        lambda s: debate_body(s, participants=_seats(s, "human", "model")),
        True,
    ),
    (
        "DebateCreateInput",
        "/api/debates",
        lambda s: debate_body(s, judge={"ai_model": s["models"][0].pk, "count": 2}),
        False,
    ),
    ("DebateCreateInput", "/api/debates", lambda s: debate_body(s, weighting="judge"), False),
    (
        "DebateCreateInput",
        "/api/debates",
        lambda s: debate_body(s, mode="custom", mode_models=[s["models"][0].pk]),
        False,
    ),
    (
        "DebateCreateInput",
        "/api/debates",
        lambda s: debate_body(s, mode="homogeneous", temperature_range=[0.2, 0.4]),
        False,
    ),
    ("ScheduleInput", "/api/schedules", lambda s: _schedule_body(s), True),
    (
        "ScheduleInput",
        "/api/schedules",
        lambda s: _schedule_body(s, participants=_seats(s, "human", "model")),
        False,
    ),
    ("ScheduleInput", "/api/schedules", lambda s: _schedule_body(s, weighting="judge"), False),
    (
        "ScheduleInput",
        "/api/schedules",
        lambda s: _schedule_body(s, role_model_map={"pundit": s["models"][0].pk}),
        False,
    ),
    ("BacktestCreateInput", "/api/backtests", lambda s: _backtest_body(s), True),
    (
        "BacktestCreateInput",
        "/api/backtests",
        lambda s: _backtest_body(s, interval_minutes=50),
        False,
    ),
    (
        "BacktestCreateInput",
        "/api/backtests",
        lambda s: _backtest_body(s, horizon_minutes=10),
        False,
    ),
]


@pytest.mark.parametrize(
    ("component", "path", "make", "valid"),
    RULES,
    ids=[
        "debate",
        "one-seat",
        "human-seat",
        "judge-count",
        "judge-weighting-without-judge",
        "custom-mode-with-models",
        "range-outside-temperature-mode",
        "schedule",
        "schedule-human-seat",
        "schedule-judge-weighting",
        "schedule-unknown-role",
        "backtest",
        "backtest-step",
        "backtest-horizon",
    ],
)
def test_the_schema_and_the_api_agree_on_a_debates_rules(api, seeded, component, path, make, valid):
    # given a body and the schema of its operation
    body = make(seeded)
    components = SchemaGenerator().get_schema(request=None, public=True)["components"]
    schema = {"$ref": f"#/components/schemas/{component}", "components": components}
    # when it is posted
    response = api.post(path, body, format="json")
    # then the schema and the API both take it, or both refuse it
    assert jsonschema_rs.validator_for(schema).is_valid(body) is valid
    assert (response.status_code == 201) is valid, response.json()


# --- URLs, lists, a strategy's market and a model's capabilities -------------------------


def _unresolvable(host: str, port: int) -> list[str]:
    raise OSError("no name resolves in this test")


URL_LIKE = st.lists(
    st.sampled_from(["http", "HTTPS", "://", "a", "b.c", "-", ":", "8080", "99999", "/", "?q"])
    | st.sampled_from(["[", "]", "::1", "@", " ", "\x00", "1.2.3.4", "#", "\u00e9", "%"]),
    max_size=9,
).map("".join)


@override_settings(OUTBOUND_ALLOWED_ADDRESSES=["0.0.0.0/0", "::/0"])
@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_a_url_field_takes_exactly_what_its_schema_matches(data):
    # given a URL field whose policy admits every address, and no name that resolves
    field = UrlField(allow_blank=True, max_length=200)
    pattern = field.schema_pattern()
    schema = jsonschema_rs.validator_for({"pattern": pattern, "maxLength": 200})
    value = data.draw(st.one_of(st.from_regex(pattern, fullmatch=True), URL_LIKE))
    # when the field reads a string the pattern makes, or any other
    with use_resolver(_unresolvable):
        try:
            field.run_validation(value)
            taken = True
        except serializers.ValidationError:
            taken = False
    # then it takes it exactly when the schema does ("" apart: blank is allowed)
    assert taken == (schema.is_valid(value) or value == ""), value


@pytest.mark.parametrize(
    ("body", "valid"),
    [
        ({"name": "S", "static_coins": ["btc", "ETH/USDT"]}, True),
        ({"name": "S", "static_coins": ["PEPE"]}, False),
        ({"name": "S", "static_coins": ["PEPE"], "market_source": "live"}, True),
        ({"name": "S", "coin_source": "oi_top"}, False),
        ({"name": "S", "coin_source": "oi_top", "market_source": "live"}, True),
        ({"name": "S", "timeframes": ["1h", "1h"]}, False),
    ],
    ids=["dataset-coins", "coin-not-in-dataset", "live-coin", "oi-on-dataset", "oi-live", "twice"],
)
def test_the_schema_and_the_api_agree_on_a_strategys_market(api, body, valid):
    # given a strategy's body and the schema of its create
    components = SchemaGenerator().get_schema(request=None, public=True)["components"]
    schema = {"$ref": "#/components/schemas/StrategyInput", "components": components}
    # when it is posted
    response = api.post("/api/strategies", body, format="json")
    # then the schema and the API both take it, or both refuse it
    assert jsonschema_rs.validator_for(schema).is_valid(body) is valid
    assert (response.status_code == 201) is valid, response.json()


def test_a_nul_character_in_a_models_capabilities_is_a_400_naming_them(api):
    # given capabilities whose effort names hold a NUL character
    capabilities = {"turn_effort": "hi\x00gh"}
    schema = _input_components()["AIModelInput"]["properties"]["capabilities"]
    # when a model is created with them
    body = {"name": "M", "provider": "simulated", "capabilities": capabilities}
    response = api.post("/api/ai-models", body, format="json")
    # then it is refused naming the field, as the schema says, and nothing is stored
    assert not jsonschema_rs.Draft4Validator(schema).is_valid(capabilities)
    assert response.status_code == 400
    assert response.json() == refusal({"capabilities": [NUL]})
    assert AIModel.objects.count() == 0
