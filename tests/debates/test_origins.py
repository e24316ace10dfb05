"""Where a debate came from: a person, a schedule's firing or a backtest's step, each
debate naming its schedule or backtest; rows made before ``origin`` existed are filled
from the links they had."""

from __future__ import annotations

import importlib
from datetime import UTC, datetime

import pytest
from django.apps import apps
from django.db import IntegrityError, connection, transaction

from backtests.models import BacktestStep
from backtests.services import BacktestInput, backtest_create
from backtests.services.runs import backtest_tick
from debates.models import Debate
from debates.services import debate_create
from debates.services.schedules import schedule_create, schedule_fire
from tests.api.conftest import debate_body
from tests.backtests.factories import BacktestFactory
from tests.debates.factories import AIModelFactory, DebateFactory, ScheduleFactory
from tests.debates.test_schedules import schedule_template
from tests.strategies.factories import StrategyFactory

pytestmark = pytest.mark.django_db


def origin_of(debate: Debate) -> tuple[str, int | None, int | None]:
    debate.refresh_from_db()
    return debate.origin, debate.schedule_id, debate.backtest_id


def test_a_debate_a_person_creates_is_manual(user):
    # given a client's JSON for a debate
    seeded = {
        "strategy": StrategyFactory(owner=user),
        "models": [AIModelFactory(owner=user), AIModelFactory(owner=user)],
    }
    # when it is created
    debate = debate_create(owner=user, data=debate_body(seeded))
    # then it is manual and names no schedule or backtest
    assert origin_of(debate) == ("manual", None, None)


def test_a_schedules_firing_names_its_schedule(user):
    # given a schedule
    schedule = schedule_create(owner=user, data=schedule_template(user))
    # when it fires
    firing = schedule_fire(schedule_id=schedule.pk)
    # then its debate came from that schedule
    assert origin_of(Debate.objects.get(pk=firing.debate_id)) == ("schedule", schedule.pk, None)


def test_a_backtests_step_names_its_backtest(user):
    # given a backtest of three steps on simulated models
    models = [AIModelFactory(owner=user), AIModelFactory(owner=user)]
    backtest = backtest_create(
        owner=user,
        data=BacktestInput(
            name="Three steps",
            strategy=StrategyFactory(owner=user, timeframes=["1h", "4h"]).pk,
            participants=[
                {"ai_model": models[0].pk, "personality": "bull"},
                {"ai_model": models[1].pk, "personality": "bear"},
            ],
            symbol="BTCUSDT",
            start=datetime(2024, 8, 4, tzinfo=UTC),
            end=datetime(2024, 8, 4, 12, tzinfo=UTC),
            interval_minutes=240,
        ),
    )
    # when its run starts the steps' debates
    backtest_tick(backtest_id=backtest.pk, token=backtest.tick_token)
    # then each came from that backtest
    steps = BacktestStep.objects.filter(backtest=backtest).select_related("debate")
    assert [origin_of(step.debate) for step in steps] == [("backtest", None, backtest.pk)] * 3


@pytest.mark.parametrize(
    ("origin", "source"),
    [("manual", "schedule"), ("manual", "backtest"), ("schedule", "backtest")],
)
def test_an_origin_that_contradicts_its_source_is_refused(user, origin, source):
    # given a debate of ``origin`` about to name a ``source`` it did not come from
    named = {"schedule": ScheduleFactory(owner=user), "backtest": BacktestFactory(owner=user)}
    # when it is stored, then the database refuses it
    with pytest.raises(IntegrityError), transaction.atomic():
        DebateFactory(owner=user, origin=origin, **{source: named[source]})


def test_the_migration_fills_each_rows_origin_from_its_links(user):
    # given rows as they were before origins were stored (this test's transaction drops
    # the rule between an origin and its source, and rolls it back): one of a schedule,
    # one of a backtest's step and one of neither, all marked manual
    rule = next(c for c in Debate._meta.constraints if c.name == "debate_origin_names_its_source")
    with connection.schema_editor() as editor:
        editor.remove_constraint(Debate, rule)
    schedule = ScheduleFactory(owner=user)
    backtest = BacktestFactory(owner=user)
    fired = DebateFactory(owner=user, schedule=schedule, origin="manual")
    stepped = DebateFactory(owner=user)
    own = DebateFactory(owner=user)
    BacktestStep.objects.create(backtest=backtest, index=0, as_of=backtest.start, debate=stepped)
    assert {origin_of(d)[0] for d in (fired, stepped, own)} == {"manual"}
    # when the migration's data step runs
    migration = importlib.import_module("debates.migrations.0009_debate_origin")
    migration.fill_origins(apps, None)
    # then each row says where it came from
    assert origin_of(fired) == ("schedule", schedule.pk, None)
    assert origin_of(stepped) == ("backtest", None, backtest.pk)
    assert origin_of(own) == ("manual", None, None)
