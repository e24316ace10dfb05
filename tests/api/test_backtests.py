"""Backtests over the API: bad input is a 400 naming each field and writes nothing; every
backtest is its owner's; cancel and delete follow the state."""

from __future__ import annotations

import pytest
from django.test import Client

from backtests.models import Backtest, BacktestStep
from debates.models import Debate
from tests.api.conftest import refusal
from tests.backtests.factories import BacktestFactory
from tests.debates.factories import AIModelFactory, DebateFactory
from tests.strategies.factories import StrategyFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def template(user):
    """A strategy on the dataset (1h and 4h candles) and two simulated models of ``user``."""
    return {
        "strategy": StrategyFactory(owner=user, timeframes=["1h", "4h"]),
        "models": [AIModelFactory(owner=user), AIModelFactory(owner=user)],
    }


def body(template, **fields):
    data = {
        "name": "BTC, a week at 4h",
        "strategy": template["strategy"].pk,
        "symbol": "btc",
        "participants": [
            {"ai_model": template["models"][0].pk, "personality": "bull"},
            {"ai_model": template["models"][1].pk, "personality": "bear"},
        ],
        "start": "2024-08-01T00:00:00Z",
        "end": "2024-08-08T00:00:00Z",
        "interval_minutes": 240,
    }
    data.update(fields)
    return data


def test_create_answers_201_with_the_detail_of_a_pending_backtest(api, template):
    # given a valid body
    # when it is posted
    response = api.post("/api/backtests", body(template), format="json")
    # then the backtest is stored, pending, with its defaults
    assert response.status_code == 201, response.json()
    detail = response.json()
    backtest = Backtest.objects.get()
    assert detail["id"] == backtest.pk
    assert {k: detail[k] for k in ("status", "symbol", "interval_minutes", "horizon_minutes")} == {
        "status": "pending",
        "symbol": "BTCUSDT",
        "interval_minutes": 240,
        "horizon_minutes": 240,
    }
    assert detail["progress"] == {"done": 0, "total": 42}
    assert (detail["cache"], detail["coins"], detail["starting_balance"]) == (
        "use",
        "primary",
        "1000.00000000",
    )
    assert (detail["fee_rate"], detail["slippage_bps"]) == ("0.000400", "0.00")
    assert detail["available_actions"] == ["cancel"]
    assert detail["report"] is None
    assert detail["baseline"] == "off"


def other_users_model(user, other_user):
    return AIModelFactory(owner=other_user).pk


@pytest.mark.parametrize(
    ("change", "fields"),
    [
        (
            lambda t, o: {"start": "2024-01-01T00:00:00Z"},
            {
                "start": [
                    "Outside the dataset window of this strategy: 2024-05-08T12:00:00+00:00 .. "
                    "2024-09-05T00:00:00+00:00."
                ]
            },
        ),
        (
            lambda t, o: {"end": "2024-09-06T00:00:00Z"},
            {
                "end": [
                    "Outside the dataset window of this strategy: 2024-05-08T12:00:00+00:00 .. "
                    "2024-09-05T00:00:00+00:00."
                ]
            },
        ),
        (
            lambda t, o: {"interval_minutes": 5},
            {
                "interval_minutes": [
                    "Ensure this value is greater than or equal to 15.",
                    "Ensure this value is a multiple of step size 15.",
                ]
            },
        ),
        (
            lambda t, o: {"interval_minutes": 50},
            {"interval_minutes": ["Ensure this value is a multiple of step size 15."]},
        ),
        (
            lambda t, o: {"start": "2024-06-01T00:00:00Z", "interval_minutes": 15},
            {"end": ["The window holds 6528 steps of 15 minutes; at most 2000."]},
        ),
        (
            lambda t, o: {"end": "2024-07-01T00:00:00Z"},
            {"end": ["Must be after start."]},
        ),
        (
            lambda t, o: {"horizon_minutes": 20},
            {"horizon_minutes": ["Ensure this value is a multiple of step size 15."]},
        ),
        (
            lambda t, o: {"coins": "some", "cache": "maybe"},
            {
                "coins": ["'some' is not one of: primary, all."],
                "cache": ["'maybe' is not one of: off, use, refresh."],
            },
        ),
        (
            lambda t, o: {"starting_balance": "5", "slippage_bps": "-1"},
            {
                "starting_balance": ["Ensure this value is greater than or equal to 12."],
                "slippage_bps": ["Ensure this value is greater than or equal to 0."],
            },
        ),
        (
            lambda t, o: {
                "strategy": StrategyFactory(
                    owner=t["strategy"].owner, name="Live", market_source="live"
                ).pk
            },
            {"strategy": ["A backtest needs a strategy on the dataset; Live reads live prices."]},
        ),
        (
            lambda t, o: {"strategy": StrategyFactory(owner=o).pk},
            lambda b: {"strategy": [f"No such object: {b['strategy']}."]},
        ),
        (
            lambda t, o: {
                "participants": [
                    {"ai_model": AIModelFactory(owner=o).pk, "personality": "bull"},
                    {"ai_model": t["models"][1].pk, "personality": "bear"},
                ]
            },
            lambda b: {
                "participants[0].ai_model": [
                    f"No such AI model: {b['participants'][0]['ai_model']}."
                ]
            },
        ),
        (
            lambda t, o: {
                "participants": [
                    {"ai_model": t["models"][0].pk, "personality": "bull"},
                    {"kind": "human", "personality": "bear"},
                ]
            },
            {"participants[1].kind": ["'human' is not one of: model."]},
        ),
        (
            lambda t, o: {"interval_minutes": "240", "start": "soon"},
            {
                "interval_minutes": ["A valid integer is required."],
                "start": [
                    "Datetime has wrong format. Use one of these formats instead: "
                    "YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z]."
                ],
            },
        ),
        (
            lambda t, o: {"baseline": "P3"},
            {"baseline": ["One of off, rotate or a seat of the debate (P1..P2)."]},
        ),
    ],
    ids=[
        "start-outside-dataset",
        "end-outside-dataset",
        "step-under-15",
        "step-not-a-multiple-of-15",
        "over-2000-steps",
        "end-before-start",
        "bad-horizon",
        "unknown-coins-and-cache",
        "paper-settings-out-of-range",
        "live-strategy",
        "other-users-strategy",
        "other-users-model",
        "human-seat",
        "wrong-types",
        "baseline-not-a-seat",
    ],
)
def test_bad_input_is_a_400_naming_each_field_and_writes_nothing(
    api, template, other_user, change, fields
):
    # given a body with something wrong
    data = body(template, **change(template, other_user))
    # when it is posted
    response = api.post("/api/backtests", data, format="json")
    # then it is refused, naming the field, and nothing is written
    assert response.status_code == 400
    expected = fields(data) if callable(fields) else fields
    assert response.json() == refusal(expected)
    assert (Backtest.objects.count(), Debate.objects.count()) == (0, 0)


def test_a_second_running_backtest_is_refused_by_the_quota(api, template):
    # given a backtest that has not ended
    assert api.post("/api/backtests", body(template), format="json").status_code == 201
    # when another is posted
    response = api.post("/api/backtests", body(template), format="json")
    # then it is refused, naming the limit, and only the first exists
    assert response.status_code == 429
    assert response.json()["code"] == "quota_exceeded"
    assert response.json()["fields"] == {"running_backtests": ["At most 1; you have 1."]}
    assert Backtest.objects.count() == 1


def make(user, template, **fields) -> Backtest:
    return BacktestFactory(owner=user, name="Stored", strategy=template["strategy"], **fields)


def test_list_shows_own_backtests_newest_first_and_filters_by_status(
    api, user, other_user, template
):
    # given two backtests of the user and one of another user
    older = make(user, template, status="completed")
    newer = make(user, template, status="cancelled")
    make(other_user, template)
    # when listed, then filtered
    listed = api.get("/api/backtests").json()
    filtered = api.get("/api/backtests?status=completed").json()
    # then only the user's show, newest first, and the filter holds
    assert [b["id"] for b in listed["results"]] == [newer.pk, older.pk]
    assert listed["count"] == 2
    assert [b["id"] for b in filtered["results"]] == [older.pk]
    assert api.get("/api/backtests?status=done").status_code == 400


def test_another_users_backtest_is_a_404_for_every_verb(api, other_user, template):
    # given another user's backtest
    theirs = make(other_user, template, status="completed")
    # when the user reads, cancels, deletes or streams it / then each is a 404
    for response in (
        api.get(f"/api/backtests/{theirs.pk}"),
        api.post(f"/api/backtests/{theirs.pk}/cancel"),
        api.delete(f"/api/backtests/{theirs.pk}"),
    ):
        assert response.status_code == 404
    assert Backtest.objects.filter(pk=theirs.pk, status="completed").exists()


@pytest.mark.django_db(transaction=True)
def test_another_users_stream_is_a_404_and_no_credentials_a_401(user, other_user, template):
    # given another user's backtest, and a browser logged in as the user (the stream reads
    # the session on a thread of its own, hence a committed one)
    theirs = make(other_user, template, status="completed")
    browser = Client()
    browser.force_login(user)
    # when its stream is asked for, with and without the session
    # then it is a 404, and a 401 without credentials, before any stream starts
    assert browser.get(f"/api/backtests/{theirs.pk}/stream").status_code == 404
    assert Client().get(f"/api/backtests/{theirs.pk}/stream").status_code == 401


def test_cancel_stops_a_running_backtest_and_its_debates_and_is_refused_once_ended(
    api, user, template
):
    # given a running backtest with a running debate
    backtest = make(user, template, status="running")
    debate = DebateFactory(owner=user, status="running")
    BacktestStep.objects.create(backtest=backtest, index=0, as_of=backtest.start, debate=debate)
    # when it is cancelled, then cancelled again
    first = api.post(f"/api/backtests/{backtest.pk}/cancel")
    second = api.post(f"/api/backtests/{backtest.pk}/cancel")
    # then the first cancelled it and its debate, the second is a 409
    assert (first.status_code, first.json()["status"]) == (200, "cancelled")
    assert first.json()["available_actions"] == ["delete"]
    assert Debate.objects.get(pk=debate.pk).status == "cancelled"
    assert (second.status_code, second.json()["code"]) == (409, "invalid_state")


def test_delete_removes_an_ended_backtest_and_its_debates_and_is_refused_while_running(
    api, user, template
):
    # given a running and a completed backtest, each with a debate
    running = make(user, template, status="running")
    done = make(user, template, status="completed")
    for backtest in (running, done):
        debate = DebateFactory(owner=user, status="completed")
        BacktestStep.objects.create(backtest=backtest, index=0, as_of=backtest.start, debate=debate)
    # when both are deleted
    refused = api.delete(f"/api/backtests/{running.pk}")
    deleted = api.delete(f"/api/backtests/{done.pk}")
    # then the running one stays, the completed one is gone with its debate
    assert (refused.status_code, refused.json()["code"]) == (409, "invalid_state")
    assert deleted.status_code == 204
    assert list(Backtest.objects.values_list("pk", flat=True)) == [running.pk]
    assert Debate.objects.count() == 1
