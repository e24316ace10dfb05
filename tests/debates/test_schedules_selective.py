"""A schedule's selective settings: the level, the mode with its models, the role-to-model
map, the per-role output caps and the daily budgets, set through the service, the REST
API and the admin, checked at create and at update (a refusal names the field and
writes nothing), and carried by each firing's debate."""

from __future__ import annotations

import json
from typing import Any

import pytest
from django_celery_beat.models import PeriodicTask

from arena.exceptions import Conflict, ValidationError
from debates.models import AIModel, Debate, Schedule
from debates.services.ai_models import ai_model_delete
from debates.services.schedules import schedule_create, schedule_fire, schedule_update
from tests.debates.factories import AIModelFactory
from tests.debates.test_schedules import admin_form, operator, schedule_template  # noqa: F401

pytestmark = pytest.mark.django_db

SEATING = ("level", "mode", "mode_models", "temperature_range", "role_model_map")


@pytest.fixture
def models(user) -> dict[str, Any]:
    """Four simulated models of ``user``, A to D."""
    return {name: AIModelFactory(owner=user, name=f"sim {name}") for name in "ABCD"}


def personality_seats(*personalities: str) -> list[dict[str, str]]:
    return [{"personality": personality} for personality in personalities]


def adversarial(user, models, **fields: Any) -> dict[str, Any]:
    """Return the service input of a schedule at L1, in the adversarial mode on A, B and C,
    its bears on D by the map, each role's output capped, with daily budgets."""
    values = {
        "participants": personality_seats("bull", "bear", "analyst"),
        "level": "L1",
        "mode": "adversarial",
        "mode_models": [models[name].pk for name in "ABC"],
        "role_model_map": {"bear": models["D"].pk},
        "max_output_tokens": {"participants": 500, "judge": 300},
        "daily_token_budget": 40_000,
        "daily_token_cap": 90_000,
        **fields,
    }
    return schedule_template(user, **values)


def seated(debate: Debate) -> list[tuple[str, str, float | None]]:
    return [
        (p.personality, p.ai_model.name, p.temperature)
        for p in debate.participants.select_related("ai_model").order_by("speak_order")
    ]


def stored(schedule: Schedule) -> dict[str, Any]:
    """Return what a schedule holds of its template, to tell a change from none."""
    schedule.refresh_from_db()
    return {
        name: getattr(schedule, name)
        for name in (
            *SEATING,
            "max_output_tokens",
            "participants",
            "daily_token_budget",
            "daily_token_cap",
            "max_rounds",
        )
    }


# -- the service, and each firing's debate ----------------------------------------------


def test_a_firing_debate_carries_the_schedules_level_mode_map_and_output_caps(user, models):
    # given a schedule at L1 in the adversarial mode, its bears on D by the map
    schedule = schedule_create(owner=user, data=adversarial(user, models))
    # then the template keeps the seats as given: the mode and the map seat the models
    assert schedule.participants == [
        {"ai_model": None, "personality": p} for p in ("bull", "bear", "analyst")
    ]
    # when it fires twice (the first debate ended in between)
    schedule_fire(schedule_id=schedule.pk)
    Debate.objects.update(status="completed")
    schedule_fire(schedule_id=schedule.pk)
    # then each debate asked for the schedule's level, mode, map and caps
    for debate in Debate.objects.order_by("pk"):
        assert (debate.level, debate.mode, debate.mode_models, debate.role_model_map) == (
            "L1",
            "adversarial",
            [models[name].pk for name in "ABC"],
            {"bear": models["D"].pk},
        )
        assert debate.max_output_tokens == {"participants": 500, "judge": 300}
        # and its seats are those the mode and the map give
        assert seated(debate) == [
            ("bull", "sim A", None),
            ("bear", "sim D", None),
            ("analyst", "sim C", None),
        ]
    assert Debate.objects.count() == 2


def test_a_schedules_debates_ask_for_auto_unless_it_says_otherwise(user):
    schedule = schedule_create(owner=user, data=schedule_template(user))
    schedule_fire(schedule_id=schedule.pk)
    assert (schedule.level, Debate.objects.get().level) == ("auto", "auto")
    assert Debate.objects.get().mode == "custom"


def test_a_temperature_schedule_spreads_its_seats_over_its_range(user, models):
    data = schedule_template(
        user,
        participants=personality_seats("bull", "bear", "analyst"),
        mode="temperature",
        mode_models=[models["B"].pk],
        temperature_range=[0.1, 0.9],
        level="L2",
    )
    schedule = schedule_create(owner=user, data=data)
    schedule_fire(schedule_id=schedule.pk)
    debate = Debate.objects.get()
    assert (debate.level, debate.temperature_range) == ("L2", [0.1, 0.9])
    assert seated(debate) == [
        ("bull", "sim B", 0.1),
        ("bear", "sim B", 0.5),
        ("analyst", "sim B", 0.9),
    ]


def test_a_custom_schedules_map_overrides_its_seats_at_each_firing(user, models):
    seats = [
        {"ai_model": models["A"].pk, "personality": "bull"},
        {"ai_model": models["A"].pk, "personality": "bear"},
    ]
    data = schedule_template(user, participants=seats, role_model_map={"bear": models["C"].pk})
    schedule = schedule_create(owner=user, data=data)
    # the template keeps the seat's own model; the map seats C at each firing
    assert schedule.participants == seats
    schedule_fire(schedule_id=schedule.pk)
    assert seated(Debate.objects.get()) == [("bull", "sim A", None), ("bear", "sim C", None)]


@pytest.mark.parametrize(
    ("change", "named"),
    [
        (lambda m: {"level": "L0"}, "level"),
        (lambda m: {"level": 2}, "level"),
        (lambda m: {"mode": "duel"}, "mode"),
        (lambda m: {"mode_models": [m[name].pk for name in "ABCD"]}, "mode_models"),
        (lambda m: {"mode_models": "A"}, "mode_models"),
        (lambda m: {"role_model_map": {"shark": m["A"].pk}}, "role_model_map.shark"),
        (lambda m: {"role_model_map": ["bear"]}, "role_model_map"),
        (lambda m: {"max_output_tokens": {"participants": 0}}, "max_output_tokens.participants"),
        (lambda m: {"max_output_tokens": {"voter": 10}}, "max_output_tokens.voter"),
        (lambda m: {"max_output_tokens": 500}, "max_output_tokens"),
        (
            lambda m: {
                "mode": "temperature",
                "mode_models": [m["A"].pk],
                "role_model_map": {},
                "temperature_range": [0.9, 0.1],
            },
            "temperature_range",
        ),
        (lambda m: {"daily_token_budget": -1}, "daily_token_budget"),
        (lambda m: {"daily_token_cap": "many"}, "daily_token_cap"),
    ],
)
def test_the_service_refuses_a_bad_setting_naming_it_and_writes_nothing(
    user, models, change, named
):
    with pytest.raises(ValidationError) as refused:
        schedule_create(owner=user, data=adversarial(user, models, **change(models)))
    # the first field named is the one at fault; a mode or mode models that cannot seat
    # the models leave the seats refused too
    assert next(iter(refused.value.fields)) == named
    assert (Schedule.objects.count(), PeriodicTask.objects.count()) == (0, 0)


def test_the_service_refuses_another_users_model_in_the_map(user, other_user, models):
    theirs = AIModelFactory(owner=other_user)
    data = adversarial(user, models, role_model_map={"bear": theirs.pk})
    with pytest.raises(ValidationError) as refused:
        schedule_create(owner=user, data=data)
    assert refused.value.fields == {"role_model_map.bear": [f"No such AI model: {theirs.pk}."]}
    assert Schedule.objects.count() == 0


def test_a_refused_update_of_a_setting_changes_nothing(user, models):
    schedule = schedule_create(owner=user, data=adversarial(user, models))
    before = stored(schedule)
    with pytest.raises(ValidationError) as refused:
        schedule_update(
            owner=user,
            schedule_id=schedule.pk,
            changes={"max_rounds": 3, "max_output_tokens": {"judge": 10**9}},
        )
    assert list(refused.value.fields) == ["max_output_tokens.judge"]
    assert stored(schedule) == before


def test_an_update_changes_the_mode_and_the_next_firing_follows(user, models):
    schedule = schedule_create(owner=user, data=adversarial(user, models))
    # the adversarial mode's models do not fit the homogeneous mode: refused, named
    with pytest.raises(ValidationError) as refused:
        schedule_update(owner=user, schedule_id=schedule.pk, changes={"mode": "homogeneous"})
    assert list(refused.value.fields) == ["mode_models"]
    schedule_update(
        owner=user,
        schedule_id=schedule.pk,
        changes={
            "mode": "homogeneous",
            "mode_models": [models["B"].pk],
            "role_model_map": {},
            "level": "L2",
        },
    )
    schedule_fire(schedule_id=schedule.pk)
    debate = Debate.objects.get()
    assert (debate.level, debate.mode, debate.role_model_map) == ("L2", "homogeneous", {})
    assert [model for _, model, _ in seated(debate)] == ["sim B"] * 3


def test_a_model_a_schedule_seats_by_its_mode_or_map_is_not_deleted(user, models):
    schedule_create(owner=user, data=adversarial(user, models))
    for name in "ABCD":
        with pytest.raises(Conflict):
            ai_model_delete(owner=user, ai_model_id=models[name].pk)
    assert AIModel.objects.filter(pk__in=[model.pk for model in models.values()]).count() == 4


# -- the REST API ---------------------------------------------------------------------------


def test_the_api_creates_a_schedule_with_its_selective_settings(api_client, user, models):
    response = api_client.post("/api/schedules", adversarial(user, models), format="json")
    assert response.status_code == 201, response.json()
    shown = response.json()
    assert {name: shown[name] for name in (*SEATING, "max_output_tokens")} == {
        "level": "L1",
        "mode": "adversarial",
        "mode_models": [models[name].pk for name in "ABC"],
        "temperature_range": [],
        "role_model_map": {"bear": models["D"].pk},
        "max_output_tokens": {"participants": 500, "judge": 300},
    }
    assert (shown["daily_token_budget"], shown["daily_token_cap"]) == (40_000, 90_000)
    assert shown["participants"][0] == {"ai_model": None, "personality": "bull"}
    schedule_fire(schedule_id=shown["id"])
    debate = api_client.get(f"/api/debates/{Debate.objects.get().pk}").json()
    assert {name: debate[name] for name in ("level", "mode", "role_model_map")} == {
        "level": "L1",
        "mode": "adversarial",
        "role_model_map": {"bear": models["D"].pk},
    }


@pytest.mark.parametrize(
    ("fields", "named"),
    [
        ({"level": "L3"}, "level"),
        ({"mode": "duel"}, "mode"),
        ({"mode_models": [1, 2, 3, 4]}, "mode_models"),
        ({"role_model_map": {"shark": 1}}, "role_model_map.shark"),
        ({"role_model_map": {"bear": "D"}}, "role_model_map.bear"),
        ({"max_output_tokens": {"participants": 0}}, "max_output_tokens.participants"),
        ({"max_output_tokens": {"voter": 10}}, "max_output_tokens.voter"),
        ({"temperature_range": [0.5]}, "temperature_range"),
        ({"temperature_range": [0.2, 0.8]}, "temperature_range"),
        ({"daily_token_budget": -5}, "daily_token_budget"),
        ({"daily_token_cap": True}, "daily_token_cap"),
    ],
)
def test_the_api_refuses_a_bad_setting_at_create_and_at_update(
    api_client, user, models, fields, named
):
    # at create: a 400 naming the field, nothing written
    response = api_client.post("/api/schedules", adversarial(user, models, **fields), format="json")
    assert (response.status_code, list(response.json()["fields"])) == (400, [named])
    assert (Schedule.objects.count(), PeriodicTask.objects.count()) == (0, 0)
    # at update: the same, the schedule and its periodic task as they were
    schedule = schedule_create(owner=user, data=adversarial(user, models))
    before, task = stored(schedule), PeriodicTask.objects.get()
    response = api_client.patch(
        f"/api/schedules/{schedule.pk}", {"max_rounds": 4, **fields}, format="json"
    )
    assert (response.status_code, list(response.json()["fields"])) == (400, [named])
    assert stored(schedule) == before
    assert PeriodicTask.objects.get().date_changed == task.date_changed


def test_the_api_refuses_a_model_per_seat_where_the_mode_seats_them(api_client, user, models):
    seats = [{"ai_model": models["A"].pk, "personality": p} for p in ("bull", "bear")]
    response = api_client.post(
        "/api/schedules", adversarial(user, models, participants=seats), format="json"
    )
    assert response.status_code == 400
    assert list(response.json()["fields"]) == [
        "participants[0].ai_model",
        "participants[1].ai_model",
    ]
    assert Schedule.objects.count() == 0


def test_the_api_patch_switches_a_temperature_schedule_back_to_custom(api_client, user, models):
    data = schedule_template(
        user,
        participants=personality_seats("bull", "bear"),
        mode="temperature",
        mode_models=[models["A"].pk],
    )
    schedule = schedule_create(owner=user, data=data)
    assert schedule.temperature_range == [0.2, 1.0]
    seats = [
        {"ai_model": models[m].pk, "personality": p} for m, p in (("A", "bull"), ("B", "bear"))
    ]
    change = {"mode": "custom", "mode_models": [], "participants": seats}
    # the stored range belongs to the temperature mode: named until it is cleared
    refused = api_client.patch(f"/api/schedules/{schedule.pk}", change, format="json")
    assert (refused.status_code, list(refused.json()["fields"])) == (400, ["temperature_range"])
    response = api_client.patch(
        f"/api/schedules/{schedule.pk}", {**change, "temperature_range": None}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert (response.json()["mode"], response.json()["temperature_range"]) == ("custom", [])
    schedule_fire(schedule_id=schedule.pk)
    assert seated(Debate.objects.get()) == [("bull", "sim A", None), ("bear", "sim B", None)]


# -- the admin ------------------------------------------------------------------------------


def seating_form(user, models, **fields: Any) -> dict[str, Any]:
    """Return the admin form of an adversarial schedule at L1 with caps and budgets."""
    settings = {
        "participants": json.dumps(personality_seats("bull", "bear", "analyst")),
        "level": "L1",
        "mode": "adversarial",
        "mode_models": json.dumps([models[name].pk for name in "ABC"]),
        "temperature_range": "[]",
        "role_model_map": json.dumps({"bear": models["D"].pk}),
        "max_output_tokens": json.dumps({"participants": 500}),
        "daily_token_budget": "40000",
        "daily_token_cap": "90000",
    }
    return admin_form(user, **{**settings, **fields})


def test_the_admin_adds_a_schedule_with_its_selective_settings(operator, user, models):  # noqa: F811
    response = operator.post("/admin/debates/schedule/add/", seating_form(user, models))
    assert response.status_code == 302, response.context["adminform"].form.errors
    schedule = Schedule.objects.get()
    assert stored(schedule) == {
        "level": "L1",
        "mode": "adversarial",
        "mode_models": [models[name].pk for name in "ABC"],
        "temperature_range": [],
        "role_model_map": {"bear": models["D"].pk},
        "max_output_tokens": {"participants": 500},
        "participants": [{"ai_model": None, "personality": p} for p in ("bull", "bear", "analyst")],
        "daily_token_budget": 40_000,
        "daily_token_cap": 90_000,
        "max_rounds": 2,
    }
    schedule_fire(schedule_id=schedule.pk)
    assert [model for _, model, _ in seated(Debate.objects.get())] == ["sim A", "sim D", "sim C"]


def test_the_admin_takes_empty_settings_as_none(operator, user, models):  # noqa: F811
    body = admin_form(
        user, mode_models="", temperature_range="", role_model_map="", max_output_tokens=""
    )
    response = operator.post("/admin/debates/schedule/add/", body)
    assert response.status_code == 302, response.context["adminform"].form.errors
    schedule = Schedule.objects.get()
    assert (schedule.mode_models, schedule.role_model_map, schedule.max_output_tokens) == (
        [],
        {},
        {},
    )


@pytest.mark.parametrize(
    ("fields", "shown_on"),
    [
        ({"role_model_map": json.dumps({"shark": 1})}, "role_model_map"),
        ({"max_output_tokens": json.dumps({"judge": 0})}, "max_output_tokens"),
        ({"mode_models": "[]"}, "mode_models"),
        ({"level": "L0"}, "level"),
    ],
)
def test_the_admin_shows_a_bad_setting_on_its_field(operator, user, models, fields, shown_on):  # noqa: F811
    response = operator.post("/admin/debates/schedule/add/", seating_form(user, models, **fields))
    assert response.status_code == 200
    # shown on the field at fault first (mode models that cannot seat leave the seats unseated)
    assert next(iter(response.context["adminform"].form.errors)) == shown_on
    assert (Schedule.objects.count(), PeriodicTask.objects.count()) == (0, 0)


def test_the_admin_change_form_changes_a_setting_through_the_service(operator, user, models):  # noqa: F811
    schedule = schedule_create(owner=user, data=adversarial(user, models))
    body = seating_form(user, models, strategy=schedule.strategy_id, level="L2")
    body.pop("owner")
    response = operator.post(f"/admin/debates/schedule/{schedule.pk}/change/", body)
    assert response.status_code == 302, response.context["adminform"].form.errors
    schedule.refresh_from_db()
    assert (schedule.level, schedule.max_output_tokens) == ("L2", {"participants": 500})
