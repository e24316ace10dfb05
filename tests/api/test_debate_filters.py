"""The debate list's filters: by origin, by schedule and by backtest, each refusing a bad
value with a 400 naming its parameter."""

from __future__ import annotations

import pytest

from tests.backtests.factories import BacktestFactory
from tests.debates.factories import DebateFactory, ScheduleFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def sources(user, other_user) -> dict:
    """Debates of ``user`` from each origin (two schedules, two backtests) and one of
    another user's schedule."""
    schedules = ScheduleFactory.create_batch(2, owner=user)
    backtests = BacktestFactory.create_batch(2, owner=user)
    made = {
        "manual": DebateFactory(owner=user, name="Mine"),
        "schedule": [
            DebateFactory(owner=user, origin="schedule", schedule=schedule)
            for schedule in schedules
        ],
        "backtest": [
            DebateFactory(owner=user, origin="backtest", backtest=backtest)
            for backtest in backtests
        ],
        "schedules": schedules,
        "backtests": backtests,
    }
    theirs = ScheduleFactory(owner=other_user)
    DebateFactory(owner=other_user, origin="schedule", schedule=theirs)
    made["theirs"] = theirs
    return made


def listed(api, **params) -> list[int]:
    response = api.get("/api/debates", params)
    assert response.status_code == 200, response.json()
    return [row["id"] for row in response.json()["results"]]


def test_the_list_filters_by_origin(api, sources):
    assert listed(api, origin="manual") == [sources["manual"].pk]
    assert listed(api, origin="schedule") == [d.pk for d in reversed(sources["schedule"])]
    assert listed(api, origin="backtest") == [d.pk for d in reversed(sources["backtest"])]


def test_the_list_filters_by_schedule_and_by_backtest(api, sources):
    # when the debates of the first schedule, then of the second backtest, are asked for
    of_schedule = listed(api, schedule=sources["schedules"][0].pk)
    of_backtest = listed(api, backtest=sources["backtests"][1].pk)
    # then each lists its own debates alone
    assert of_schedule == [sources["schedule"][0].pk]
    assert of_backtest == [sources["backtest"][1].pk]


def test_each_row_says_where_its_debate_came_from(api, sources):
    rows = {row["id"]: row for row in api.get("/api/debates").json()["results"]}
    shown = {
        name: (rows[debate.pk]["origin"], rows[debate.pk]["schedule"], rows[debate.pk]["backtest"])
        for name, debate in (
            ("manual", sources["manual"]),
            ("schedule", sources["schedule"][0]),
            ("backtest", sources["backtest"][0]),
        )
    }
    assert shown == {
        "manual": ("manual", None, None),
        "schedule": ("schedule", sources["schedules"][0].pk, None),
        "backtest": ("backtest", None, sources["backtests"][0].pk),
    }


@pytest.mark.parametrize(
    ("params", "fields"),
    [
        (
            {"origin": "imported"},
            {"origin": ["'imported' is not one of: manual, schedule, backtest."]},
        ),
        ({"origin": ""}, {"origin": ["'' is not one of: manual, schedule, backtest."]}),
        ({"schedule": "first"}, {"schedule": ["A valid integer is required."]}),
        ({"schedule": "0"}, {"schedule": ["Ensure this value is greater than or equal to 1."]}),
        ({"schedule": "987654"}, {"schedule": ["No such schedule: 987654."]}),
        ({"backtest": "1.5"}, {"backtest": ["A valid integer is required."]}),
        ({"backtest": "987654"}, {"backtest": ["No such backtest: 987654."]}),
    ],
    ids=[
        "unknown-origin",
        "empty-origin",
        "schedule-not-a-number",
        "schedule-zero",
        "no-such-schedule",
        "backtest-not-a-number",
        "no-such-backtest",
    ],
)
def test_a_bad_filter_is_refused_naming_its_parameter(api, sources, params, fields):
    response = api.get("/api/debates", params)
    assert response.status_code == 400
    assert response.json() == {
        "code": "validation_error",
        "message": "Invalid input.",
        "fields": fields,
    }


def test_another_users_schedule_is_no_schedule_of_yours(api, sources):
    # when the debates of another user's schedule are asked for
    response = api.get("/api/debates", {"schedule": sources["theirs"].pk})
    # then it is refused as a schedule that does not exist, and nothing of it is shown
    assert response.status_code == 400
    assert response.json()["fields"] == {"schedule": [f"No such schedule: {sources['theirs'].pk}."]}
