"""Schedules: their Celery beat entries kept in step, and what each firing does (SPEC 11).

Firings here call ``schedule_fire`` as the ``debates.schedule_fire`` task does; the
debates they start are not run (no worker). Runs on a worker and under beat are in
``test_schedules_worker.py``; the 24-hour replay in ``test_schedules_replay.py``.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import pytest
from django_celery_beat.models import IntervalSchedule, PeriodicTask, PeriodicTasks

from arena.exceptions import NotFound, ValidationError
from debates.models import Debate, Schedule
from debates.services import debate_prepare
from debates.services.schedules import (
    FIRE_TASK,
    ScheduleFiring,
    schedule_create,
    schedule_delete,
    schedule_fire,
    schedule_pause,
    schedule_resume,
    schedule_update,
)
from strategies.market.dataset import DATASET_END
from strategies.snapshots import replay_window
from tests.debates.factories import AIModelFactory, DebateFactory
from tests.strategies.factories import StrategyFactory
from tests.traders.factories import TraderFactory
from traders.hooks import debate_execute
from traders.models import Trader

pytestmark = pytest.mark.django_db

# A quiet stretch of the dataset: the replay tests start here.
REPLAY_START = datetime(2024, 8, 20, tzinfo=UTC)


def schedule_template(user, *, models: list | None = None, **fields: Any) -> dict[str, Any]:
    """Return the service input of a valid schedule of ``user``: a dataset strategy on 1h
    and 4h candles, two simulated models (or ``models``), hourly, not executing."""
    strategy = StrategyFactory(
        owner=user, static_coins=["BTCUSDT", "ETHUSDT"], timeframes=["1h", "4h"]
    )
    if models is None:
        models = [AIModelFactory(owner=user), AIModelFactory(owner=user)]
    data = {
        "name": "Hourly BTC",
        "strategy": strategy.pk,
        "symbol": "BTCUSDT",
        "participants": [
            {"ai_model": model.pk, "personality": personality}
            for model, personality in zip(models, ("bull", "bear", "analyst"), strict=False)
        ],
        "max_rounds": 2,
        "interval_minutes": 60,
    }
    data.update(fields)
    return data


def paper_trader_of(user, **fields: Any) -> Trader:
    """Return a running paper trader of ``user`` priced from the dataset."""
    return TraderFactory(
        owner=user,
        exchange="paper",
        market_source="dataset",
        balance=Decimal("1000"),
        starting_balance=Decimal("1000"),
        **fields,
    )


def beat_change_stamp():
    """Return the instant the database scheduler last heard of a change."""
    return PeriodicTasks.last_change()


# -- the periodic task follows the schedule -------------------------------------------------


def test_creating_a_schedule_creates_its_periodic_task(user):
    # when a schedule firing every 45 minutes is created
    schedule = schedule_create(owner=user, data=schedule_template(user, interval_minutes=45))
    # then its periodic task fires debates.schedule_fire for it every 45 minutes
    task = PeriodicTask.objects.get()
    assert schedule.periodic_task == task
    assert (task.name, task.task, json.loads(task.kwargs), task.enabled) == (
        f"debates.schedule:{schedule.pk}",
        FIRE_TASK,
        {"schedule_id": schedule.pk},
        True,
    )
    assert (task.interval.every, task.interval.period) == (45, IntervalSchedule.MINUTES)
    assert (task.crontab, task.solar, task.clocked, task.one_off) == (None, None, None, False)
    # and a firing still queued when the next one is due expires
    assert task.expire_seconds == 45 * 60
    assert beat_change_stamp() is not None


def test_a_disabled_schedule_is_created_with_a_disabled_periodic_task(user):
    schedule = schedule_create(owner=user, data=schedule_template(user, enabled=False))
    assert (schedule.enabled, PeriodicTask.objects.get().enabled) == (False, False)


def test_a_refused_schedule_writes_nothing(user):
    # given a template with one participant
    data = schedule_template(user)
    data["participants"] = data["participants"][:1]
    # when it is created, it is refused
    with pytest.raises(ValidationError):
        schedule_create(owner=user, data=data)
    # then neither the schedule nor a periodic task was stored
    assert (Schedule.objects.count(), PeriodicTask.objects.count()) == (0, 0)


def test_changing_the_interval_changes_the_periodic_task_and_signals_beat(user):
    # given a schedule firing hourly
    schedule = schedule_create(owner=user, data=schedule_template(user))
    stamp = beat_change_stamp()
    # when its interval becomes 15 minutes and its name changes
    schedule_update(
        owner=user,
        schedule_id=schedule.pk,
        changes={"interval_minutes": 15, "name": "Quarter-hourly BTC"},
    )
    # then the same periodic task fires every 15 minutes, and beat is told of the change
    task = PeriodicTask.objects.get()
    assert task.pk == Schedule.objects.get().periodic_task_id
    assert (task.interval.every, task.interval.period, task.expire_seconds) == (
        15,
        IntervalSchedule.MINUTES,
        900,
    )
    assert task.description == "Recurring debate: Quarter-hourly BTC"
    assert beat_change_stamp() > stamp


def test_a_refused_change_leaves_the_periodic_task_alone(user):
    schedule = schedule_create(owner=user, data=schedule_template(user))
    with pytest.raises(ValidationError):
        schedule_update(
            owner=user, schedule_id=schedule.pk, changes={"interval_minutes": 5, "max_rounds": 9}
        )
    task = PeriodicTask.objects.get()
    assert (task.interval.every, Schedule.objects.get().interval_minutes) == (60, 60)


def test_an_update_recreates_a_periodic_task_deleted_by_hand(user):
    # given a schedule whose periodic task an operator deleted in the beat admin
    schedule = schedule_create(owner=user, data=schedule_template(user))
    PeriodicTask.objects.get().delete()
    # when the schedule is changed
    schedule_update(owner=user, schedule_id=schedule.pk, changes={"interval_minutes": 30})
    # then it has a periodic task again
    task = PeriodicTask.objects.get()
    assert Schedule.objects.get().periodic_task == task
    assert task.interval.every == 30


def test_pausing_disables_the_periodic_task_and_a_firing_records_disabled(user):
    # given an enabled schedule
    schedule = schedule_create(owner=user, data=schedule_template(user))
    stamp = beat_change_stamp()
    # when it is paused
    schedule_pause(owner=user, schedule_id=schedule.pk)
    # then beat is told and its periodic task is disabled
    assert PeriodicTask.objects.get().enabled is False
    assert beat_change_stamp() > stamp
    # and a firing already on its way records why it did nothing
    firing = schedule_fire(schedule_id=schedule.pk)
    assert firing == ScheduleFiring(
        schedule_id=schedule.pk, skipped="disabled", reason="The schedule is paused."
    )
    schedule.refresh_from_db()
    assert (schedule.enabled, schedule.skip_count, schedule.run_count) == (False, 1, 0)
    assert schedule.last_skip_reason == "disabled: The schedule is paused."
    assert Debate.objects.count() == 0


def test_resuming_enables_the_periodic_task_again(user):
    schedule = schedule_create(owner=user, data=schedule_template(user, enabled=False))
    schedule_resume(owner=user, schedule_id=schedule.pk)
    assert (Schedule.objects.get().enabled, PeriodicTask.objects.get().enabled) == (True, True)


def test_a_schedule_whose_strategy_was_deleted_can_be_paused_but_not_resumed(user):
    # given a schedule whose strategy was deleted
    schedule = schedule_create(owner=user, data=schedule_template(user))
    schedule.strategy.delete()
    # when it is paused with a bare change of the flag, it is
    schedule_update(owner=user, schedule_id=schedule.pk, changes={"enabled": False})
    assert PeriodicTask.objects.get().enabled is False
    # and resuming it is refused, naming the strategy, leaving it paused
    with pytest.raises(ValidationError) as refused:
        schedule_resume(owner=user, schedule_id=schedule.pk)
    assert list(refused.value.fields) == ["strategy"]
    assert (Schedule.objects.get().enabled, PeriodicTask.objects.get().enabled) == (False, False)


def test_deleting_a_schedule_removes_its_periodic_task_and_keeps_its_debates(user):
    # given a schedule that fired once
    schedule = schedule_create(owner=user, data=schedule_template(user))
    debate_id = schedule_fire(schedule_id=schedule.pk).debate_id
    stamp = beat_change_stamp()
    # when it is deleted
    schedule_delete(owner=user, schedule_id=schedule.pk)
    # then its periodic task went with it (beat told), and its debate stayed
    assert (Schedule.objects.count(), PeriodicTask.objects.count()) == (0, 0)
    assert beat_change_stamp() > stamp
    assert Debate.objects.get(pk=debate_id).schedule_id is None


def test_another_users_schedule_is_not_found(user, other_user):
    schedule = schedule_create(owner=user, data=schedule_template(user))
    for service in (schedule_pause, schedule_resume, schedule_delete):
        with pytest.raises(NotFound):
            service(owner=other_user, schedule_id=schedule.pk)
    assert (Schedule.objects.count(), PeriodicTask.objects.get().enabled) == (1, True)


# -- firing -------------------------------------------------------------------------------


def test_a_firing_creates_and_starts_a_debate_from_the_template(user):
    # given an hourly schedule that executes automatically on a paper trader
    trader = paper_trader_of(user)
    data = schedule_template(user, auto_execute=True, trader=trader.pk, max_rounds=3)
    schedule = schedule_create(owner=user, data=data)
    # when it fires
    firing = schedule_fire(schedule_id=schedule.pk)
    # then a debate linked to it was created from the template and started
    debate = Debate.objects.get()
    assert firing == ScheduleFiring(schedule_id=schedule.pk, debate_id=debate.pk)
    assert (debate.name, debate.owner, debate.schedule_id, debate.status) == (
        "Hourly BTC #1",
        user,
        schedule.pk,
        "running",
    )
    assert (debate.strategy_id, debate.symbol, debate.max_rounds, debate.interval_minutes) == (
        data["strategy"],
        "BTCUSDT",
        3,
        60,
    )
    assert (debate.auto_execute, debate.trader_id, debate.as_of) == (True, trader.pk, None)
    assert [
        (p.ai_model_id, p.personality) for p in debate.participants.order_by("speak_order")
    ] == [(seat["ai_model"], seat["personality"]) for seat in data["participants"]]
    # and its prepare step, run by a worker, stores the market it debates
    assert debate.market_snapshot is None
    assert debate_prepare(debate_id=debate.pk)
    debate.refresh_from_db()
    assert debate.market_snapshot["as_of"] == DATASET_END.isoformat().replace("+00:00", "Z")
    # and the schedule counted the run
    schedule.refresh_from_db()
    assert (schedule.run_count, schedule.skip_count, schedule.last_debate_id) == (1, 0, debate.pk)
    assert schedule.last_fired_at is not None


@pytest.mark.parametrize("status", ["pending", "running", "voting"])
def test_a_firing_while_the_previous_debate_is_active_is_skipped(user, status):
    # given a schedule whose previous debate is still active
    schedule = schedule_create(owner=user, data=schedule_template(user))
    previous = DebateFactory(owner=user, schedule=schedule, status=status)
    Schedule.objects.filter(pk=schedule.pk).update(last_debate=previous, run_count=1)
    # when it fires
    firing = schedule_fire(schedule_id=schedule.pk)
    # then no debate was created and the skip was recorded
    reason = f"Debate {previous.pk} is still {status}."
    assert firing == ScheduleFiring(
        schedule_id=schedule.pk, skipped="previous_debate_active", reason=reason
    )
    assert Debate.objects.count() == 1
    schedule.refresh_from_db()
    assert (schedule.run_count, schedule.skip_count, schedule.last_debate_id) == (
        1,
        1,
        previous.pk,
    )
    assert schedule.last_skip_reason == f"previous_debate_active: {reason}"


@pytest.mark.parametrize("status", ["completed", "failed", "cancelled"])
def test_a_firing_after_the_previous_debate_finished_starts_the_next(user, status):
    schedule = schedule_create(owner=user, data=schedule_template(user))
    DebateFactory(owner=user, schedule=schedule, status=status)
    Schedule.objects.filter(pk=schedule.pk).update(run_count=1)
    firing = schedule_fire(schedule_id=schedule.pk)
    assert Debate.objects.get(pk=firing.debate_id).name == "Hourly BTC #2"
    assert Schedule.objects.get().run_count == 2


def _delete_strategy(schedule: Schedule) -> None:
    schedule.strategy.delete()


def _stop_trader(schedule: Schedule) -> None:
    Trader.objects.filter(pk=schedule.trader_id).update(status="stopped")


def _delete_trader(schedule: Schedule) -> None:
    schedule.trader.delete()


def _disable_model(schedule: Schedule) -> None:
    model = schedule.strategy.owner.ai_models.order_by("pk").first()
    model.enabled = False
    model.save()


@pytest.mark.parametrize(
    ("break_it", "code", "reason"),
    [
        (_delete_strategy, "strategy_deleted", "The schedule's strategy was deleted."),
        (_stop_trader, "trader_stopped", "Trader Paper is stopped."),
        (
            _delete_trader,
            "trader_deleted",
            "The schedule executes automatically; its trader was deleted.",
        ),
        (
            _disable_model,
            "invalid_template",
            "Invalid input. participants[0].ai_model: AI model {model} is disabled.",
        ),
    ],
    ids=["strategy-deleted", "trader-stopped", "trader-deleted", "model-disabled"],
)
def test_a_firing_that_cannot_run_records_why_and_does_nothing(user, break_it, code, reason):
    # given an auto-executing schedule, then something it needs goes away
    trader = paper_trader_of(user, name="Paper")
    data = schedule_template(user, auto_execute=True, trader=trader.pk)
    schedule = schedule_create(owner=user, data=data)
    model_name = user.ai_models.order_by("pk").first().name
    break_it(schedule)
    # when it fires
    firing = schedule_fire(schedule_id=schedule.pk)
    # then nothing was created, and why is recorded
    expected = reason.format(model=repr(model_name))
    assert (firing.debate_id, firing.skipped, firing.reason) == (None, code, expected)
    schedule.refresh_from_db()
    assert (Debate.objects.count(), schedule.run_count, schedule.skip_count) == (0, 0, 1)
    assert schedule.last_skip_reason == f"{code}: {expected}"


def test_a_firing_of_a_deleted_schedule_does_nothing(user):
    assert schedule_fire(schedule_id=987654) == ScheduleFiring(
        schedule_id=987654, skipped="deleted", reason="No such schedule."
    )
    assert Debate.objects.count() == 0


def test_skips_are_counted_one_by_one(user):
    schedule = schedule_create(owner=user, data=schedule_template(user, enabled=False))
    for _ in range(3):
        schedule_fire(schedule_id=schedule.pk)
    assert Schedule.objects.get().skip_count == 3


# -- replay ---------------------------------------------------------------------------------


def test_a_replay_firing_debates_at_its_instant_and_moves_it_on(user):
    # given an auto-executing replay schedule every 90 minutes, on a fresh paper trader
    trader = paper_trader_of(user)
    data = schedule_template(
        user,
        auto_execute=True,
        trader=trader.pk,
        interval_minutes=90,
        replay_as_of=REPLAY_START,
    )
    schedule = schedule_create(owner=user, data=data)
    # when it fires twice (the first debate finished in between), each debate prepared
    # and its execution step run once it completed
    first = schedule_fire(schedule_id=schedule.pk)
    debate_prepare(debate_id=first.debate_id)
    Debate.objects.filter(pk=first.debate_id).update(status="completed")
    debate_execute(debate_id=first.debate_id)
    second = schedule_fire(schedule_id=schedule.pk)
    debate_prepare(debate_id=second.debate_id)
    Debate.objects.filter(pk=second.debate_id).update(status="completed")
    debate_execute(debate_id=second.debate_id)
    # then each debate saw the market at its instant, 90 minutes apart
    debates = [Debate.objects.get(pk=f.debate_id) for f in (first, second)]
    later = REPLAY_START + timedelta(minutes=90)
    assert [d.as_of for d in debates] == [REPLAY_START, later]
    assert [d.market_snapshot["as_of"] for d in debates] == [
        "2024-08-20T00:00:00Z",
        "2024-08-20T01:30:00Z",
    ]
    # and the next firing is 90 minutes later again; the execution steps moved the paper
    # clock to the last debate's instant
    assert Schedule.objects.get().replay_as_of == later + timedelta(minutes=90)
    trader.refresh_from_db()
    assert trader.replay_as_of == later


def test_a_replay_without_execution_leaves_the_trader_clock_alone(user):
    trader = paper_trader_of(user)
    data = schedule_template(user, trader=trader.pk, replay_as_of=REPLAY_START)
    schedule = schedule_create(owner=user, data=data)
    schedule_fire(schedule_id=schedule.pk)
    trader.refresh_from_db()
    assert trader.replay_as_of is None


def test_the_replay_window_follows_the_strategy_timeframes(user):
    strategy = StrategyFactory(owner=user, timeframes=["15m", "1h"], rows_per_timeframe=12)
    assert replay_window(strategy) == (datetime(2024, 8, 5, 3, tzinfo=UTC), DATASET_END)
    strategy = StrategyFactory(owner=user, timeframes=["1h", "4h"], rows_per_timeframe=20)
    assert replay_window(strategy) == (datetime(2024, 5, 8, 20, tzinfo=UTC), DATASET_END)


@pytest.mark.parametrize(
    ("as_of", "message"),
    [
        (
            datetime(2024, 5, 8, 11, tzinfo=UTC),
            "Outside the dataset window of this strategy: "
            "2024-05-08T12:00:00+00:00 .. 2024-09-05T00:00:00+00:00.",
        ),
        (
            DATASET_END + timedelta(minutes=1),
            "Outside the dataset window of this strategy: "
            "2024-05-08T12:00:00+00:00 .. 2024-09-05T00:00:00+00:00.",
        ),
    ],
    ids=["before-the-window", "after-the-end"],
)
def test_a_replay_instant_outside_the_dataset_window_is_refused(user, as_of, message):
    data = schedule_template(user, replay_as_of=as_of)
    with pytest.raises(ValidationError) as refused:
        schedule_create(owner=user, data=data)
    assert refused.value.fields == {"replay_as_of": [message]}
    assert (Schedule.objects.count(), PeriodicTask.objects.count()) == (0, 0)


def test_the_edges_of_the_window_are_accepted(user):
    for as_of in (datetime(2024, 5, 8, 12, tzinfo=UTC), DATASET_END):
        schedule_create(owner=user, data=schedule_template(user, replay_as_of=as_of))
    assert Schedule.objects.count() == 2


def test_a_replay_of_a_live_strategy_is_refused(user):
    data = schedule_template(user, replay_as_of=REPLAY_START)
    StrategyFactory._meta.model.objects.filter(pk=data["strategy"]).update(market_source="live")
    with pytest.raises(ValidationError) as refused:
        schedule_create(owner=user, data=data)
    assert list(refused.value.fields) == ["replay_as_of"]
    assert "reads live prices" in refused.value.fields["replay_as_of"][0]


def test_a_replay_executing_on_a_real_exchange_is_refused(user):
    trader = TraderFactory(owner=user, exchange="okx")
    data = schedule_template(user, replay_as_of=REPLAY_START, auto_execute=True, trader=trader.pk)
    with pytest.raises(ValidationError) as refused:
        schedule_create(owner=user, data=data)
    assert refused.value.fields == {
        "trader": ["A replay executes only on a paper trader priced from the dataset."]
    }


def test_a_replay_that_ran_past_the_dataset_pauses_its_schedule(user):
    # given a replay schedule whose last firing was at the dataset's end
    schedule = schedule_create(owner=user, data=schedule_template(user, replay_as_of=DATASET_END))
    first = schedule_fire(schedule_id=schedule.pk)
    Debate.objects.filter(pk=first.debate_id).update(status="completed")
    # when it fires again
    firing = schedule_fire(schedule_id=schedule.pk)
    # then it is skipped, and the schedule and its periodic task are paused
    assert firing.skipped == "replay_finished"
    schedule.refresh_from_db()
    assert (schedule.enabled, PeriodicTask.objects.get().enabled) == (False, False)
    assert (schedule.run_count, schedule.skip_count, Debate.objects.count()) == (1, 1, 1)
    assert schedule.last_skip_reason.startswith("replay_finished: The replay reached the end")


def test_a_replay_behind_its_paper_traders_clock_is_skipped(user):
    # given a paper trader whose clock is after the schedule's next instant
    trader = paper_trader_of(user, replay_as_of=REPLAY_START + timedelta(hours=1))
    data = schedule_template(user, auto_execute=True, trader=trader.pk, replay_as_of=REPLAY_START)
    schedule = schedule_create(owner=user, data=data)
    # when it fires, nothing trades at the wrong prices
    firing = schedule_fire(schedule_id=schedule.pk)
    assert (firing.skipped, Debate.objects.count()) == ("trader_clock_ahead", 0)
    assert Schedule.objects.get().replay_as_of == REPLAY_START


# -- API -----------------------------------------------------------------------------------


def test_the_api_creates_a_schedule_with_its_periodic_task(api_client, user):
    body = schedule_template(user, replay_as_of=REPLAY_START.isoformat())
    response = api_client.post("/api/schedules", body, format="json")
    assert response.status_code == 201
    task = PeriodicTask.objects.get()
    assert (json.loads(task.kwargs), task.enabled, task.interval.every) == (
        {"schedule_id": response.json()["id"]},
        True,
        60,
    )
    assert response.json()["replay_as_of"] == "2024-08-20T00:00:00Z"


def test_the_api_refuses_a_replay_outside_the_dataset(api_client, user):
    body = schedule_template(user, replay_as_of="2023-01-01T00:00:00Z")
    response = api_client.post("/api/schedules", body, format="json")
    assert response.status_code == 400
    assert response.json()["code"] == "validation_error"
    assert list(response.json()["fields"]) == ["replay_as_of"]
    assert (Schedule.objects.count(), PeriodicTask.objects.count()) == (0, 0)


def test_the_api_pauses_and_resumes_a_schedule(api_client, user):
    schedule = schedule_create(owner=user, data=schedule_template(user))
    paused = api_client.post(f"/api/schedules/{schedule.pk}/pause")
    assert (paused.status_code, paused.json()["enabled"]) == (200, False)
    assert PeriodicTask.objects.get().enabled is False
    resumed = api_client.post(f"/api/schedules/{schedule.pk}/resume")
    assert (resumed.status_code, resumed.json()["enabled"]) == (200, True)
    assert PeriodicTask.objects.get().enabled is True


def test_the_api_patch_of_enabled_keeps_the_periodic_task_in_step(api_client, user):
    schedule = schedule_create(owner=user, data=schedule_template(user))
    response = api_client.patch(f"/api/schedules/{schedule.pk}", {"enabled": False}, format="json")
    assert response.status_code == 200
    assert PeriodicTask.objects.get().enabled is False


def test_the_api_delete_removes_the_periodic_task(api_client, user):
    schedule = schedule_create(owner=user, data=schedule_template(user))
    assert api_client.delete(f"/api/schedules/{schedule.pk}").status_code == 204
    assert PeriodicTask.objects.count() == 0


@pytest.mark.parametrize("action", ["pause", "resume"])
def test_the_api_hides_another_users_schedule(api_client, other_user, action):
    schedule = schedule_create(owner=other_user, data=schedule_template(other_user))
    response = api_client.post(f"/api/schedules/{schedule.pk}/{action}")
    assert response.status_code == 404
    assert PeriodicTask.objects.get().enabled is True


def test_the_api_refuses_to_resume_a_broken_template(api_client, user):
    schedule = schedule_create(owner=user, data=schedule_template(user, enabled=False))
    schedule.strategy.delete()
    response = api_client.post(f"/api/schedules/{schedule.pk}/resume")
    assert (response.status_code, list(response.json()["fields"])) == (400, ["strategy"])
    assert PeriodicTask.objects.get().enabled is False


# -- admin ---------------------------------------------------------------------------------


def admin_form(user, **fields: Any) -> dict[str, Any]:
    """Return the POST body of the admin's schedule form for a valid template."""
    data = schedule_template(user)
    body = {
        "owner": user.pk,
        "name": data["name"],
        "strategy": data["strategy"],
        "symbol": "BTCUSDT",
        "participants": json.dumps(data["participants"]),
        "max_rounds": 2,
        "prompt_variant": "balanced",
        "trader": "",
        "interval_minutes": 30,
        "enabled": "on",
        "replay_as_of_0": "",
        "replay_as_of_1": "",
        "cache": "off",
        "level": "auto",
        "mode": "custom",
    }
    body.update(fields)
    return body


@pytest.fixture
def operator(client, staff_user):
    """A Django test client logged in to the admin as staff."""
    client.force_login(staff_user)
    return client


def test_the_admin_adds_a_schedule_with_its_periodic_task(operator, user):
    response = operator.post("/admin/debates/schedule/add/", admin_form(user))
    assert response.status_code == 302
    schedule = Schedule.objects.get()
    task = PeriodicTask.objects.get()
    assert (schedule.owner, schedule.periodic_task, schedule.interval_minutes) == (user, task, 30)
    assert (json.loads(task.kwargs), task.enabled, task.interval.every) == (
        {"schedule_id": schedule.pk},
        True,
        30,
    )


def test_the_admin_shows_the_services_refusal_on_the_form(operator, user):
    body = admin_form(user)
    body["participants"] = json.dumps(json.loads(body["participants"])[:1])
    response = operator.post("/admin/debates/schedule/add/", body)
    assert response.status_code == 200
    assert response.context["adminform"].form.errors == {
        "participants": ["A debate needs 2 to 6 participants; got 1."]
    }
    assert (Schedule.objects.count(), PeriodicTask.objects.count()) == (0, 0)


def test_the_admin_change_form_pauses_through_the_service(operator, user):
    schedule = schedule_create(owner=user, data=schedule_template(user))
    body = admin_form(user, strategy=schedule.strategy_id)
    body.pop("enabled")
    body.pop("owner")
    response = operator.post(f"/admin/debates/schedule/{schedule.pk}/change/", body)
    assert response.status_code == 302
    schedule.refresh_from_db()
    assert (schedule.enabled, schedule.interval_minutes) == (False, 30)
    task = PeriodicTask.objects.get()
    assert (task.enabled, task.interval.every) == (False, 30)


def test_the_admin_pause_and_resume_actions(operator, user):
    schedules = [schedule_create(owner=user, data=schedule_template(user)) for _ in range(2)]
    ids = [s.pk for s in schedules]
    operator.post(
        "/admin/debates/schedule/", {"action": "pause_schedules", "_selected_action": ids}
    )
    assert list(PeriodicTask.objects.values_list("enabled", flat=True)) == [False, False]
    assert list(Schedule.objects.values_list("enabled", flat=True)) == [False, False]
    operator.post(
        "/admin/debates/schedule/", {"action": "resume_schedules", "_selected_action": ids}
    )
    assert list(PeriodicTask.objects.values_list("enabled", flat=True)) == [True, True]


def test_the_admin_resume_action_leaves_a_broken_schedule_paused_and_says_why(operator, user):
    schedule = schedule_create(owner=user, data=schedule_template(user, enabled=False))
    schedule.strategy.delete()
    response = operator.post(
        "/admin/debates/schedule/",
        {"action": "resume_schedules", "_selected_action": [schedule.pk]},
        follow=True,
    )
    shown = [str(m) for m in response.context["messages"]]
    assert shown == [
        "Hourly BTC stays paused: strategy: Must be the id of one of your objects.",
        "Resumed 0 schedule(s).",
    ]
    assert (Schedule.objects.get().enabled, PeriodicTask.objects.get().enabled) == (False, False)


def test_the_admin_deletes_through_the_service(operator, user):
    one, two, three = (schedule_create(owner=user, data=schedule_template(user)) for _ in range(3))
    operator.post(f"/admin/debates/schedule/{one.pk}/delete/", {"post": "yes"})
    assert PeriodicTask.objects.count() == 2
    operator.post(
        "/admin/debates/schedule/",
        {"action": "delete_selected", "_selected_action": [two.pk, three.pk], "post": "yes"},
    )
    assert (Schedule.objects.count(), PeriodicTask.objects.count()) == (0, 0)
