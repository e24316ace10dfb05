"""A user's own daily budget and caps, and the price table (staff only), over the API:
read, changed, bad input refused naming the field with nothing changed."""

from __future__ import annotations

from decimal import Decimal

import pytest

from debates.models import ModelPrice, TokenBudget
from debates.services.costs import price_for, prices_forget
from tests.api.conftest import refusal
from tests.debates.factories import MessageFactory, ParticipantFactory

pytestmark = pytest.mark.django_db

NO_SPEND = {
    "calls": 0,
    "cached_calls": 0,
    "attempts": 0,
    "prompt_tokens": 0,
    "completion_tokens": 0,
    "cached_input_tokens": 0,
    "estimated_tokens": 0,
    "cost_usd": "0",
    "dropped_calls": 0,
    "dropped_cost_usd": "0",
    "tokens": 0,
}
PRICE = {
    "provider": "openai",
    "model_name": "gpt-6.1-terra",
    "input_usd_per_mtok": "1.25",
    "cached_input_usd_per_mtok": "0.125",
    "output_usd_per_mtok": "10",
}


@pytest.fixture(autouse=True)
def fresh_prices():
    """Each test starts from an empty price table (the row the first migration seeds for
    the simulated model is gone once a test before flushed the database) and reads the
    table it stored, not a copy read by an earlier test."""
    ModelPrice.objects.all().delete()
    prices_forget()
    yield
    prices_forget()


def _table() -> list[tuple[str, Decimal]]:
    """Return each row of the price table by its provider and input price."""
    return ModelPrice.objects.order_by("provider").values_list("provider", "input_usd_per_mtok")


@pytest.fixture
def staff(client_for, staff_user):
    """A recording client authenticated as a staff user."""
    return client_for(staff_user)


def test_a_user_without_a_budget_reads_no_caps_and_todays_spend(api, user):
    # given a call of the user's today
    seat = ParticipantFactory(debate__owner=user)
    MessageFactory(participant=seat, attempts=1, prompt_tokens=100, cost_usd=Decimal("0.01"))
    # when the budget is read
    shown = api.get("/api/budget").json()
    # then it has no budget and no cap, and today's spend
    assert shown == {
        "daily_token_budget": None,
        "daily_token_cap": None,
        "daily_usd_cap": None,
        "updated_at": None,
        "today": {**NO_SPEND, "calls": 1, "attempts": 1, "prompt_tokens": 100, "tokens": 100}
        | {"cost_usd": "0.01"},
    }


def test_the_owner_sets_and_changes_their_own_caps(api, client_for, user, other_user):
    # when the user sets a token budget and a USD cap, then changes the cap
    first = api.patch(
        "/api/budget", {"daily_token_budget": 50_000, "daily_usd_cap": "2.5"}, format="json"
    )
    second = api.patch(
        "/api/budget", {"daily_usd_cap": "1.25", "daily_token_cap": 90_000}, format="json"
    )
    # then both answered what is stored
    assert first.status_code == second.status_code == 200
    assert {k: second.json()[k] for k in ("daily_token_budget", "daily_token_cap")} == {
        "daily_token_budget": 50_000,
        "daily_token_cap": 90_000,
    }
    assert second.json()["daily_usd_cap"] == "1.2500"
    budget = TokenBudget.objects.get(owner=user)
    assert (budget.daily_token_budget, budget.daily_token_cap, budget.daily_usd_cap) == (
        50_000,
        90_000,
        Decimal("1.25"),
    )
    # and null removes a cap
    api.patch("/api/budget", {"daily_usd_cap": None}, format="json")
    assert TokenBudget.objects.get(owner=user).daily_usd_cap is None
    # and another user's budget is theirs alone
    assert client_for(other_user).get("/api/budget").json()["daily_token_cap"] is None
    assert not TokenBudget.objects.filter(owner=other_user).exists()


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        (
            {"daily_usd_cap": "-1"},
            "daily_usd_cap",
            "Ensure this value is greater than or equal to 0.",
        ),
        (
            {"daily_usd_cap": "0.00001"},
            "daily_usd_cap",
            'Must be a decimal number in a string, written plainly: "2.5".',
        ),
        (
            {"daily_token_cap": -5},
            "daily_token_cap",
            "Ensure this value is greater than or equal to 0.",
        ),
        ({"daily_token_cap": "90000"}, "daily_token_cap", "A valid integer is required."),
        (
            {"daily_usd_cap": 2.5},
            "daily_usd_cap",
            'Must be a decimal number in a string, written plainly: "2.5".',
        ),
        ({"daily_tokens": 5}, "daily_tokens", "Unknown field."),
    ],
)
def test_a_bad_budget_is_refused_naming_the_field_and_nothing_changes(
    api, user, body, field, message
):
    # given a budget
    TokenBudget.objects.create(owner=user, daily_token_cap=1000)
    # when a bad change is sent
    response = api.patch("/api/budget", body, format="json")
    # then it is refused naming the field, and the budget is as it was
    assert (response.status_code, response.json()) == (400, refusal({field: [message]}))
    budget = TokenBudget.objects.get(owner=user)
    assert (budget.daily_token_cap, budget.daily_usd_cap) == (1000, None)


def test_the_price_table_is_staffs(api, anon):
    # given a row of the price table
    price = ModelPrice.objects.create(**{**PRICE, "input_usd_per_mtok": Decimal("1")})
    # when another user reads or changes it, then it is refused, and nothing changed
    for method, url, body in (
        ("get", "/api/prices", None),
        ("post", "/api/prices", PRICE),
        ("get", f"/api/prices/{price.pk}", None),
        ("patch", f"/api/prices/{price.pk}", {"input_usd_per_mtok": "0"}),
        ("delete", f"/api/prices/{price.pk}", None),
    ):
        assert getattr(api, method)(url, body, format="json").status_code == 403
        assert getattr(anon, method)(url, body, format="json").status_code == 401
    assert list(_table()) == [("openai", Decimal(1))]


def test_staff_add_change_and_remove_a_price_which_the_next_call_costs(
    staff, django_capture_on_commit_callbacks
):
    # when staff add a price for a model
    with django_capture_on_commit_callbacks(execute=True):
        created = staff.post("/api/prices", PRICE, format="json")
    # then it is stored, and a call of that model costs it at once
    assert created.status_code == 201
    row = created.json()
    assert {k: v for k, v in row.items() if k not in ("id", "updated_at")} == {
        "provider": "openai",
        "model_name": "gpt-6.1-terra",
        "input_usd_per_mtok": "1.2500",
        "cached_input_usd_per_mtok": "0.1250",
        "output_usd_per_mtok": "10.0000",
        "cache_write_usd_per_mtok": None,
    }
    assert price_for(provider="openai", model="gpt-6.1-terra").input == Decimal("1.25")
    # when they change it, list it and read it
    with django_capture_on_commit_callbacks(execute=True):
        changed = staff.patch(
            f"/api/prices/{row['id']}", {"output_usd_per_mtok": "8"}, format="json"
        )
    assert changed.json()["output_usd_per_mtok"] == "8.0000"
    assert price_for(provider="openai", model="gpt-6.1-terra").output == Decimal("8")
    listed = staff.get("/api/prices").json()["results"]
    assert [(r["provider"], r["model_name"]) for r in listed] == [("openai", "gpt-6.1-terra")]
    assert staff.get(f"/api/prices/{row['id']}").json()["output_usd_per_mtok"] == "8.0000"
    # when they remove it, then the model costs its catalogue price again
    with django_capture_on_commit_callbacks(execute=True):
        assert staff.delete(f"/api/prices/{row['id']}").status_code == 204
    assert not ModelPrice.objects.filter(provider="openai").exists()
    assert price_for(provider="openai", model="gpt-6.1-terra").output != Decimal("8")
    assert staff.get(f"/api/prices/{row['id']}").status_code == 404


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        (
            {**PRICE, "output_usd_per_mtok": "-1"},
            "output_usd_per_mtok",
            "Ensure this value is greater than or equal to 0.",
        ),
        (
            {**PRICE, "provider": "simulated"},
            "provider",
            "'simulated' is not one of: deepseek, qwen, openai, claude, gemini, grok, kimi, "
            "openai_compatible.",
        ),
        ({**PRICE, "model_name": 5}, "model_name", "Must be a string."),
        (
            {k: v for k, v in PRICE.items() if k != "input_usd_per_mtok"},
            "input_usd_per_mtok",
            "This field is required.",
        ),
        (PRICE, "model_name", "The price table has a row for this provider and model already."),
    ],
    ids=["negative", "simulated", "not-a-string", "missing", "a-second-row"],
)
def test_a_bad_price_is_refused_naming_the_field_and_nothing_changes(staff, body, field, message):
    # given the table holds a price of the model
    ModelPrice.objects.create(**{**PRICE, "input_usd_per_mtok": Decimal("1")})
    # when a bad row is added
    response = staff.post("/api/prices", body, format="json")
    # then it is refused naming the field, and the table is as it was
    assert (response.status_code, response.json()) == (400, refusal({field: [message]}))
    assert list(_table()) == [("openai", Decimal(1))]
