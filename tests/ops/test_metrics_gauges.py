"""What ``/metrics`` measures at the scrape (rows in the database, the model slots, the
broker's queues, beat's heartbeat) and what the services count as they work (cache
lookups, guard trips)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
import time_machine

from arena import metrics
from arena.celery import app
from debates.providers.slots import model_slots
from debates.services.calls import call_model
from ops.tasks import beat_heartbeat_task
from tests.debates.factories import DebateFactory, MessageFactory
from tests.debates.test_cache import CONFIG, REQUEST
from tests.ops.conftest import sample
from tests.traders.factories import ExecutionFactory, TraderFactory
from traders.risk import Funds
from traders.services.guards import guards_check

pytestmark = pytest.mark.django_db


def test_debates_and_executions_are_counted_by_status(scrape):
    # given debates and executions in some of their states (the executions' debates
    # cancelled since)
    for status in ("completed", "completed", "failed", "running"):
        DebateFactory(status=status)
    ExecutionFactory(status="filled", decision__debate__status="cancelled")
    ExecutionFactory(status="awaiting_approval", decision__debate__status="cancelled")
    # when the metrics are scraped
    found = scrape()
    # then each status has its count, and the others zero
    assert {
        status: sample(found, "arena_debates", status=status)
        for status in ("pending", "running", "voting", "completed", "cancelled", "failed")
    } == {"pending": 0, "running": 1, "voting": 0, "completed": 2, "cancelled": 2, "failed": 1}
    assert sample(found, "arena_executions", status="filled") == 1
    assert sample(found, "arena_executions", status="awaiting_approval") == 1
    assert sample(found, "arena_executions", status="pending") == 0


def test_today_spend_counts_the_calls_of_the_current_utc_day(scrape):
    # given two calls today and one yesterday
    MessageFactory(cost_usd=Decimal("0.0125"), prompt_tokens=100, completion_tokens=20)
    MessageFactory(cost_usd=Decimal("0.0005"), prompt_tokens=10, completion_tokens=2)
    old = MessageFactory(cost_usd=Decimal("1"), prompt_tokens=1000, completion_tokens=1000)
    type(old).objects.filter(pk=old.pk).update(created_at=old.created_at - timedelta(days=1))
    # when the metrics are scraped, then today's spend is the first two's
    found = scrape()
    assert sample(found, "arena_spend_today_usd") == 0.013
    assert sample(found, "arena_spend_today_tokens") == 132


def test_slot_use_is_measured_against_the_cap(scrape, settings):
    # given one model slot held of a cap of four
    settings.MODEL_CALL_CAP = 4
    slots = model_slots()
    lease = slots.acquire(0)
    try:
        # when the metrics are scraped
        found = scrape()
    finally:
        slots.release(lease)
    # then one is in use, none waited for
    assert sample(found, "arena_model_slots_in_use") == 1
    assert sample(found, "arena_model_slots_cap") == 4
    assert sample(found, "arena_model_slots_waiting") == 0


def test_queue_depth_counts_every_priority_of_the_celery_queue(scrape):
    # given three messages no worker takes, of three priorities
    app.control.purge()
    try:
        for priority in (0, 3, 9):
            beat_heartbeat_task.apply_async(priority=priority)
        # when the metrics are scraped
        found = scrape()
    finally:
        app.control.purge()
    # then the queue holds the three
    assert sample(found, "arena_celery_queue_length", queue="celery") == 3
    assert sample(found, "arena_celery_unacked_messages") == 0


def test_the_heartbeat_task_records_the_age_the_metrics_show(scrape):
    # given beat's heartbeat task run 12 s ago
    now = datetime(2026, 11, 2, 12, tzinfo=UTC)
    with time_machine.travel(now - timedelta(seconds=12), tick=False):
        assert beat_heartbeat_task.apply().get() == (now - timedelta(seconds=12)).timestamp()
    # when the metrics are scraped now, then they show its age
    with time_machine.travel(now, tick=False):
        assert sample(scrape(), "arena_beat_heartbeat_age_seconds") == 12


def test_the_beat_schedule_sends_the_heartbeat_every_interval(settings):
    entry = settings.CELERY_BEAT_SCHEDULE["ops-beat-heartbeat"]
    assert entry == {
        "task": "ops.beat_heartbeat",
        "schedule": settings.BEAT_HEARTBEAT_S,
        "options": {"expire_seconds": settings.BEAT_HEARTBEAT_S},
    }
    assert beat_heartbeat_task.name == "ops.beat_heartbeat"


def test_cache_lookups_are_counted_as_hits_and_misses(empty_counts, llm, scrape):
    # given a call made twice with the model-call cache in use
    config = replace(CONFIG, base_url=f"{llm.url}/v1", timeout_s=10.0)
    for _ in range(2):
        call_model(config, REQUEST, still_wanted=lambda: True, cache="use")
    # when the metrics are scraped
    found = scrape()
    # then the first missed and called the model, the second hit
    assert sample(found, "arena_model_cache_lookups_total", result="miss") == 1
    assert sample(found, "arena_model_cache_lookups_total", result="hit") == 1
    call = {"provider": "openai_compatible", "model": "fake-model"}
    assert sample(found, "arena_model_calls_total", **call, outcome="ok") == 1


def test_a_model_call_sends_its_counts_in_one_round_trip(empty_counts, llm, monkeypatch):
    # given the metrics store's writes watched
    store = metrics.store()
    writes: list[int] = []
    add = store.add
    monkeypatch.setattr(store, "add", lambda updates: (writes.append(len(updates)), add(updates)))
    # when a call is made with the cache in use (a lookup, then the model)
    config = replace(CONFIG, base_url=f"{llm.url}/v1", timeout_s=10.0)
    call_model(config, REQUEST, still_wanted=lambda: True, cache="use")
    # then its lookup, count, latency, tokens and cost went in one write
    assert writes == [1 + 1 + 2 + 2 + 1]


def test_a_tripped_guard_is_counted_and_its_trader_shown_paused(
    empty_counts, user, scrape, django_capture_on_commit_callbacks
):
    # given a trader whose strategy has a 1 % daily loss limit, measured at the day's start
    trader = TraderFactory(owner=user, exchange="paper")
    debate = DebateFactory(owner=user)
    debate.strategy.daily_loss_limit_pct = Decimal("1")
    start = datetime(2024, 8, 4, 20, tzinfo=UTC)

    def measure(equity: str, now: datetime) -> None:
        guards_check(
            trader_id=trader.pk,
            funds=Funds(available=None, equity=Decimal(equity), wallet=None),
            exposure=Decimal("0"),
            now=now,
            strategy=debate.strategy,
        )

    measure("1000", start)
    # when it loses 1 % (the count is sent once the pause commits)
    with django_capture_on_commit_callbacks(execute=True):
        measure("990", start + timedelta(minutes=30))
    found = scrape()
    # then the trip is counted by its guard, and the trader shown paused by it
    assert sample(found, "arena_guard_trips_total", guard="daily_loss") == 1
    assert sample(found, "arena_traders_paused", guard="daily_loss") == 1
    assert sample(found, "arena_traders_paused", guard="drawdown") == 0
