"""Monitors: the action mix, parse failures apart from waits, and stuck-model warnings."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from evaluations.monitors import PARSE_FAILURE, monitor
from tests.debates.factories import AIModelFactory, ScheduleFactory
from tests.evaluations.builders import completed_debate
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
    start = datetime(2024, 8, 6, tzinfo=UTC)
    for n in range(12):
        debate = completed_debate(
            owner=user,
            strategy=strategy,
            as_of=start + timedelta(hours=n),
            seats=[("bull", bull), ("bear", bear)],
            openings={},
            votes={0: {"BTCUSDT": ("open_long", 70)}, 1: {"BTCUSDT": ("wait", 50)}},
            decisions={"BTCUSDT": "open_long"},
            schedule=schedule,
        )
        if n in (3, 7):
            debate.votes.filter(participant__speak_order=1).update(
                abstained=True, action="", confidence=None
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
