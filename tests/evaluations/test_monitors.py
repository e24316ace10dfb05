"""Monitors: the action mix, parse failures apart from waits, and stuck-model warnings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from evaluations.monitors import PARSE_FAILURE, monitor
from tests.debates.factories import AIModelFactory, ScheduleFactory
from tests.evaluations.builders import HUMAN, completed_debate
from tests.strategies.factories import StrategyFactory


def test_twenty_waits_warn_of_idleness_and_of_no_opens():
    found = monitor(["wait"] * 15 + ["hold"] * 5)
    assert found.mix == {
        "open_long": 0.0,
        "open_short": 0.0,
        "close": 0.0,
        "hold": 0.25,
        "wait": 0.75,
    }
    assert found.warnings == (
        "hold and wait are 100% of the last 20 usable decisions",
        "no open in the last 20 decisions",
    )


def test_only_the_last_twenty_count():
    found = monitor(["open_long"] * 30 + ["wait"] * 17 + ["open_short"] * 3)
    assert (found.decisions, found.mix["wait"], found.mix["open_short"]) == (20, 0.85, 0.15)
    assert found.warnings == ("hold and wait are 85% of the last 20 usable decisions",)


def test_parse_failures_are_kept_apart_from_waits():
    # given 8 opens, 1 wait and 2 answers that could not be read
    found = monitor(["open_long"] * 4 + [PARSE_FAILURE] * 2 + ["open_short"] * 4 + ["wait"])
    # then the mix is over the 9 usable decisions, the failures a share of all 11
    assert found.mix["wait"] == round(1 / 9, 6)
    assert found.parse_failure_share == round(2 / 11, 6)
    assert found.warnings == ("parse failures are 18% of the last 11",)


def test_exactly_eighty_percent_and_ten_percent_do_not_warn():
    assert monitor(["wait"] * 8 + ["open_long"] * 2).warnings == ()
    assert monitor(["open_long"] * 18 + [PARSE_FAILURE] * 2).warnings == ()


def test_a_short_window_raises_no_warning():
    assert monitor(["wait"] * 9).warnings == ()


def hourly_debates(user, strategy, *, seats, timed_out, count, **fields):
    """Make ``count`` completed debates of ``strategy`` an hour apart, each with the first
    seat voting open_long on BTC and the second wait; the seat of speaking order
    ``timed_out`` gives no usable vote in the debates whose index is in it."""
    start = datetime(2024, 8, 6, tzinfo=UTC)
    timed_out_seat, indexes = timed_out
    for n in range(count):
        debate = completed_debate(
            owner=user,
            strategy=strategy,
            as_of=start + timedelta(hours=n),
            seats=seats,
            openings={},
            votes={0: {"BTCUSDT": ("open_long", 70)}, 1: {"BTCUSDT": ("wait", 50)}},
            **fields,
        )
        if n in indexes:
            debate.votes.filter(participant__speak_order=timed_out_seat).update(
                abstained=True, action="", confidence=None
            )


@pytest.mark.django_db
def test_a_schedules_monitors_name_the_stuck_voter(api_client, user):
    # given 12 debates of a schedule: the bull always long, the bear always waiting but
    # twice unreadable
    strategy = StrategyFactory(owner=user)
    schedule = ScheduleFactory(owner=user, strategy=strategy)
    bull, bear = (
        AIModelFactory(owner=user, name="Bull model"),
        AIModelFactory(owner=user, name="Bear model"),
    )
    hourly_debates(
        user,
        strategy,
        seats=[("bull", bull), ("bear", bear)],
        timed_out=(1, {3, 7}),
        count=12,
        decisions={"BTCUSDT": "open_long"},
        schedule=schedule,
    )
    # when its monitors are read
    body = api_client.get(f"/api/schedules/{schedule.pk}/monitors").json()
    # then the bear's waits are 100 % of its usable votes, its failures 2 of 12
    assert body["debates"] == 12
    bear_row = next(v for v in body["voters"] if v["personality"] == "bear")
    assert (bear_row["decisions"], bear_row["mix"]["wait"]) == (12, 1.0)
    assert bear_row["parse_failure_share"] == round(2 / 12, 6)
    assert body["warnings"] == [
        "Bear model as bear: hold and wait are 100% of the last 10 usable decisions",
        "Bear model as bear: parse failures are 17% of the last 12",
    ]
    assert body["consensus"]["mix"]["open_long"] == 1.0


@pytest.mark.django_db
@pytest.mark.parametrize("scope", ["evaluations", "strategy"])
def test_a_human_seat_is_no_voter_of_the_monitors(api_client, user, scope):
    # given 10 completed debates of a strategy where the owner sat as the bull, always
    # long but timed out twice, beside a model bear that always waited
    strategy = StrategyFactory(owner=user)
    bear = AIModelFactory(owner=user, name="Bear model")
    hourly_debates(
        user,
        strategy,
        seats=[("bull", HUMAN), ("bear", bear)],
        timed_out=(0, {2, 5}),
        count=10,
        decisions={"BTCUSDT": "wait"},
    )
    path = {
        "evaluations": "/api/evaluations/monitors",
        "strategy": f"/api/strategies/{strategy.pk}/monitors",
    }[scope]
    # when its monitors are read
    response = api_client.get(path)
    # then they cover every debate, and the one voter is the model: a voter is an AI
    # model in a personality, as in the ledger and the calibration
    assert response.status_code == 200
    body = response.json()
    assert body["debates"] == 10
    assert [(v["ai_model"], v["personality"], v["decisions"]) for v in body["voters"]] == [
        (bear.pk, "bear", 10)
    ]
    assert body["warnings"] == [
        "consensus: hold and wait are 100% of the last 10 usable decisions",
        "Bear model as bear: hold and wait are 100% of the last 10 usable decisions",
    ]
