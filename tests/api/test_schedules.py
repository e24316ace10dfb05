"""Schedules over the API: debate templates checked by the debate rules."""

import pytest

from debates.models import Schedule
from tests.debates.factories import AIModelFactory, ScheduleFactory
from tests.strategies.factories import StrategyFactory

pytestmark = pytest.mark.django_db


def schedule_body(seeded, **fields):
    body = {
        "name": "Hourly BTC",
        "strategy": seeded["strategy"].pk,
        "symbol": "btc",
        "participants": [
            {"ai_model": seeded["models"][0].pk, "personality": "bull"},
            {"ai_model": seeded["models"][1].pk, "personality": "risk_manager"},
        ],
        "interval_minutes": 60,
    }
    body.update(fields)
    return body


def test_create_a_schedule(api, user, seeded):
    # given a valid template that executes automatically on the paper trader
    body = schedule_body(seeded, auto_execute=True, trader=seeded["trader"].pk, max_rounds=4)
    # when it is created
    response = api.post("/api/schedules", body, format="json")
    # then it is stored with the normalised coin and its seats
    assert response.status_code == 201
    schedule = Schedule.objects.get()
    assert (schedule.owner, schedule.symbol, schedule.max_rounds, schedule.trader) == (
        user,
        "BTCUSDT",
        4,
        seeded["trader"],
    )
    shown = response.json()
    assert {k: v for k, v in shown.items() if k not in ("created_at", "updated_at")} == {
        "id": schedule.pk,
        "name": "Hourly BTC",
        "strategy": seeded["strategy"].pk,
        "symbol": "BTCUSDT",
        "participants": [
            {"ai_model": seeded["models"][0].pk, "personality": "bull"},
            {"ai_model": seeded["models"][1].pk, "personality": "risk_manager"},
        ],
        "max_rounds": 4,
        "prompt_variant": "balanced",
        "auto_execute": True,
        "trader": seeded["trader"].pk,
        "interval_minutes": 60,
        "enabled": True,
        "replay_as_of": None,
        "cache": "off",
        "daily_token_budget": None,
        "daily_token_cap": None,
        "skips_by_reason": {},
        "runs_by_level": {"L1": 0, "L2": 0},
        "weighting": "confidence",
        "level": "auto",
        "mode": "custom",
        "mode_models": [],
        "temperature_range": [],
        "role_model_map": {},
        "max_output_tokens": {},
        "last_fired_at": None,
        "last_debate": None,
        "run_count": 0,
        "skip_count": 0,
        "last_skip_reason": "",
    }


@pytest.mark.parametrize(
    ("change", "code", "fields"),
    [
        (
            lambda s, o: {"interval_minutes": 0},
            "validation_error",
            {"interval_minutes": ["Ensure this value is greater than or equal to 1."]},
        ),
        (
            lambda s, o: {"participants": [{"ai_model": s["models"][0].pk, "personality": "bull"}]},
            "not_enough_participants",
            {"participants": ["A debate needs 2 to 6 participants; got 1."]},
        ),
        (
            lambda s, o: {
                "participants": [{"ai_model": s["models"][0].pk, "personality": "bull"}] * 7
            },
            "validation_error",
            {"participants": ["A debate needs 2 to 6 participants; got 7."]},
        ),
        (
            lambda s, o: {"strategy": o["strategy"]},
            "validation_error",
            lambda b: {"strategy": [f"No such object: {b['strategy']}."]},
        ),
        (
            lambda s, o: {
                "participants": [
                    {"ai_model": s["models"][0].pk, "personality": "bull"},
                    {"ai_model": o["model"], "personality": "bear"},
                ]
            },
            "validation_error",
            lambda b: {
                "participants[1].ai_model": [
                    f"No such AI model: {b['participants'][1]['ai_model']}."
                ]
            },
        ),
        (
            lambda s, o: {"auto_execute": True},
            "validation_error",
            {"trader": ["Required when auto_execute is true."]},
        ),
        (
            lambda s, o: {"max_rounds": 1},
            "validation_error",
            {"max_rounds": ["Ensure this value is greater than or equal to 2."]},
        ),
        (
            lambda s, o: {
                "participants": [
                    {"kind": "human", "personality": "bull"},
                    {"ai_model": s["models"][0].pk, "personality": "bear"},
                ]
            },
            "validation_error",
            {"participants[0].kind": ["'human' is not one of: model."]},
        ),
    ],
    ids=[
        "interval",
        "one-participant",
        "seven-participants",
        "other-users-strategy",
        "other-users-model",
        "auto-execute-without-trader",
        "rounds",
        "human-seat",
    ],
)
def test_create_refuses_bad_input_naming_each_field(api, seeded, other_user, change, code, fields):
    # given another user's strategy and model, and a body with one thing wrong
    others = {
        "strategy": StrategyFactory(owner=other_user).pk,
        "model": AIModelFactory(owner=other_user).pk,
    }
    body = schedule_body(seeded, **change(seeded, others))
    # when it is posted
    response = api.post("/api/schedules", body, format="json")
    # then it is refused naming the field, and nothing is stored
    assert response.status_code == 400
    expected = fields(body) if callable(fields) else fields
    assert response.json() == {"code": code, "message": "Invalid input.", "fields": expected}
    assert Schedule.objects.count() == 0


def test_list_shows_own_schedules_newest_first(api, user, other_user):
    older, newer = ScheduleFactory(owner=user), ScheduleFactory(owner=user)
    ScheduleFactory(owner=other_user)
    response = api.get("/api/schedules")
    assert [s["id"] for s in response.json()["results"]] == [newer.pk, older.pk]


def test_pause_a_schedule(api, user, seeded):
    schedule_id = api.post("/api/schedules", schedule_body(seeded), format="json").json()["id"]
    response = api.patch(f"/api/schedules/{schedule_id}", {"enabled": False}, format="json")
    assert (response.status_code, response.json()["enabled"]) == (200, False)
    assert Schedule.objects.get().enabled is False


def test_update_checks_the_whole_template_again(api, user, seeded):
    # given a valid schedule
    schedule_id = api.post("/api/schedules", schedule_body(seeded), format="json").json()["id"]
    # when it is asked to execute automatically without a trader
    response = api.patch(f"/api/schedules/{schedule_id}", {"auto_execute": True}, format="json")
    # then it is refused and unchanged
    assert response.status_code == 400
    assert response.json()["fields"] == {"trader": ["Required when auto_execute is true."]}
    assert Schedule.objects.get().auto_execute is False


def test_detail_and_delete(api, user):
    schedule = ScheduleFactory(owner=user, name="Mine")
    assert api.get(f"/api/schedules/{schedule.pk}").json()["name"] == "Mine"
    response = api.delete(f"/api/schedules/{schedule.pk}")
    assert response.status_code == 204
    assert Schedule.objects.count() == 0
