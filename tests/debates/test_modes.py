"""Debate modes and the role-to-model map: each seat gets the model (and temperature) the
mode and the map say, every bad field is refused by name with nothing written, and the
calls go out with the seat's temperature and the role's output cap."""

from __future__ import annotations

import pytest

from debates.models import Debate, DebateMode, Participant
from debates.services import debate_start
from debates.services.modes import judge_model_id
from tests.api.conftest import run_steps
from tests.debates.factories import AIModelFactory
from tests.strategies.factories import StrategyFactory

pytestmark = pytest.mark.django_db

SEATS = ["bull", "bear", "analyst", "contrarian", "risk_manager"]


@pytest.fixture
def models(user):
    """Four simulated models of the user, A to D, and one of another user."""
    own = {name: AIModelFactory(owner=user, name=name) for name in "ABCD"}
    return {**own, "foreign": AIModelFactory(name="foreign")}


def create(api_client, user, seats, **fields):
    body = {
        "name": "Modes",
        "strategy": StrategyFactory(owner=user).pk,
        "participants": seats,
        **fields,
    }
    return api_client.post("/api/debates", body, format="json")


def seated(debate_id):
    return [
        (p.personality, p.ai_model.name, p.temperature)
        for p in Participant.objects.filter(debate_id=debate_id).select_related("ai_model")
    ]


def test_custom_mode_keeps_each_seats_own_model(api_client, user, models):
    seats = [
        {"ai_model": models[m].pk, "personality": p} for m, p in zip("AB", SEATS[:2], strict=True)
    ]
    response = create(api_client, user, seats)
    assert response.status_code == 201
    assert response.json()["mode"] == "custom"
    assert seated(response.json()["id"]) == [("bull", "A", None), ("bear", "B", None)]


def test_homogeneous_mode_seats_one_model_everywhere(api_client, user, models):
    seats = [{"personality": p} for p in SEATS[:3]]
    response = create(api_client, user, seats, mode="homogeneous", mode_models=[models["C"].pk])
    assert response.status_code == 201, response.json()
    assert seated(response.json()["id"]) == [
        ("bull", "C", None),
        ("bear", "C", None),
        ("analyst", "C", None),
    ]


def test_homogeneous_mode_without_mode_models_takes_the_first_seats_model(api_client, user, models):
    seats = [{"ai_model": models["B"].pk, "personality": "bull"}, {"personality": "bear"}]
    response = create(api_client, user, seats, mode="homogeneous")
    assert response.status_code == 201, response.json()
    assert seated(response.json()["id"]) == [("bull", "B", None), ("bear", "B", None)]


def test_temperature_mode_spreads_the_seats_over_the_range(api_client, user, models):
    seats = [{"personality": p} for p in SEATS]
    response = create(
        api_client,
        user,
        seats,
        mode="temperature",
        mode_models=[models["A"].pk],
        temperature_range=[0.2, 1.0],
    )
    assert response.status_code == 201, response.json()
    assert seated(response.json()["id"]) == [
        ("bull", "A", 0.2),
        ("bear", "A", 0.4),
        ("analyst", "A", 0.6),
        ("contrarian", "A", 0.8),
        ("risk_manager", "A", 1.0),
    ]
    assert [p["temperature"] for p in response.json()["participants"]] == [0.2, 0.4, 0.6, 0.8, 1.0]


def test_adversarial_mode_puts_bulls_on_a_bears_on_b_and_the_judge_on_c(api_client, user, models):
    seats = [{"personality": p} for p in SEATS]
    ids = [models[m].pk for m in "ABC"]
    response = create(api_client, user, seats, mode="adversarial", mode_models=ids)
    assert response.status_code == 201, response.json()
    assert seated(response.json()["id"]) == [
        ("bull", "A", None),
        ("bear", "B", None),
        ("analyst", "C", None),
        ("contrarian", "A", None),
        ("risk_manager", "B", None),
    ]
    assert judge_model_id(Debate.objects.get(pk=response.json()["id"])) == models["C"].pk


def test_the_role_model_map_overrides_the_mode_and_names_the_judge(api_client, user, models):
    seats = [{"personality": p} for p in ("bull", "bear", "bear")]
    response = create(
        api_client,
        user,
        seats,
        mode="adversarial",
        mode_models=[models["A"].pk, models["B"].pk],
        role_model_map={"bear": models["D"].pk, "judge": models["C"].pk},
    )
    assert response.status_code == 201, response.json()
    assert seated(response.json()["id"]) == [
        ("bull", "A", None),
        ("bear", "D", None),
        ("bear", "D", None),
    ]
    assert judge_model_id(Debate.objects.get(pk=response.json()["id"])) == models["C"].pk


def test_the_role_model_map_overrides_custom_seats(api_client, user, models):
    seats = [
        {"ai_model": models[m].pk, "personality": p} for m, p in zip("AB", SEATS[:2], strict=True)
    ]
    response = create(api_client, user, seats, role_model_map={"bull": models["D"].pk})
    assert response.status_code == 201, response.json()
    assert seated(response.json()["id"]) == [("bull", "D", None), ("bear", "B", None)]


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"mode": "chaos"}, "mode"),
        ({"mode": "adversarial", "mode_models": ["A"]}, "mode_models"),
        ({"mode": "homogeneous", "mode_models": ["foreign"]}, "mode_models[0]"),
        ({"role_model_map": {"shark": "A"}}, "role_model_map.shark"),
        ({"role_model_map": {"judge": "foreign"}}, "role_model_map.judge"),
        ({"mode": "custom", "mode_models": ["A"]}, "mode_models"),
        ({"temperature_range": [0.2, 1.0]}, "temperature_range"),
        ({"mode": "temperature", "temperature_range": [1.5, 0.5]}, "temperature_range"),
        ({"max_output_tokens": {"judge": 0}}, "max_output_tokens.judge"),
        ({"max_output_tokens": {"everyone": 5}}, "max_output_tokens.everyone"),
    ],
)
def test_a_bad_mode_field_is_refused_by_name_and_nothing_is_written(
    api_client, user, models, fields, field
):
    # given a valid custom seating and one bad field
    seats = [
        {"ai_model": models[m].pk, "personality": p} for m, p in zip("AB", SEATS[:2], strict=True)
    ]
    if "mode_models" in fields:
        fields["mode_models"] = [models[m].pk for m in fields["mode_models"]]
    if "role_model_map" in fields:
        fields["role_model_map"] = {k: models[m].pk for k, m in fields["role_model_map"].items()}
    if fields.get("mode") in ("homogeneous", "temperature", "adversarial"):
        seats = [{"personality": p} for p in SEATS[:2]]
    # when
    response = create(api_client, user, seats, **fields)
    # then
    assert response.status_code == 400, response.json()
    assert field in response.json()["fields"], response.json()
    assert Debate.objects.count() == 0


def test_a_seat_model_in_a_mode_that_seats_the_models_is_refused(api_client, user, models):
    seats = [{"personality": "bull"}, {"ai_model": models["B"].pk, "personality": "bear"}]
    response = create(api_client, user, seats, mode="homogeneous", mode_models=[models["A"].pk])
    assert response.status_code == 400
    assert list(response.json()["fields"]) == ["participants[1].ai_model"]


def test_calls_go_out_at_the_seats_temperature_and_under_the_roles_output_cap(
    llm, make_debate, user
):
    # given a temperature-mode debate on the fake server with a participants' output cap
    debate = make_debate(personalities=("bull", "bear"), rounds=2)
    model = debate.participants.first().ai_model
    Participant.objects.filter(debate=debate).update(ai_model=model)
    for order, temperature in ((0, 0.3), (1, 0.9)):
        Participant.objects.filter(debate=debate, speak_order=order).update(temperature=temperature)
    Debate.objects.filter(pk=debate.pk).update(
        mode=DebateMode.TEMPERATURE, max_output_tokens={"participants": 321}
    )
    debate_start(debate_id=debate.pk)
    # when it runs
    run_steps(debate.pk)
    # then every call of P1 went at 0.3 and of P2 at 0.9, each capped at 321 tokens
    sent = {
        (r.body["temperature"], r.body["max_tokens"], "You are P1," in r.prompt)
        for r in llm.requests
    }
    assert sent == {(0.3, 321, True), (0.9, 321, False)}
    assert len(llm.requests) == 6


@pytest.mark.parametrize(
    ("fields", "judge"),
    [
        (lambda m: {"role_model_map": {"judge": m["C"].pk}}, "C"),
        (lambda m: {"mode": "adversarial", "mode_models": [m[n].pk for n in "ABC"]}, "C"),
        (lambda m: {"mode": "adversarial", "mode_models": [m["A"].pk, m["B"].pk]}, "D"),
        (lambda m: {}, "D"),
    ],
    ids=["map", "adversarial-c", "adversarial-two-models", "custom"],
)
def test_the_map_or_the_adversarial_c_is_the_model_of_a_debates_judge(
    api_client, user, models, fields, judge
):
    # a debate with a judge asked for on D: the map's judge, or C of the adversarial
    # mode, is the model the judge's calls go to (the debate's judge_model)
    given = fields(models)
    if given.get("mode") == "adversarial":
        seats = [{"personality": p} for p in SEATS[:2]]
    else:
        seats = [
            {"ai_model": models[m].pk, "personality": p}
            for m, p in zip("AB", SEATS[:2], strict=True)
        ]
    response = create(api_client, user, seats, judge={"ai_model": models["D"].pk}, **given)
    assert response.status_code == 201, response.json()
    debate = Debate.objects.select_related("judge_model").get(pk=response.json()["id"])
    assert debate.judge_model.name == judge
    assert response.json()["judge"]["ai_model"] == models[judge].pk


def test_a_debate_without_a_judge_gets_none_from_the_map(api_client, user, models):
    seats = [
        {"ai_model": models[m].pk, "personality": p} for m, p in zip("AB", SEATS[:2], strict=True)
    ]
    response = create(api_client, user, seats, role_model_map={"judge": models["C"].pk})
    assert response.status_code == 201, response.json()
    assert Debate.objects.get(pk=response.json()["id"]).judge_model is None
