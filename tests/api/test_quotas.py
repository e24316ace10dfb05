"""Per-user quotas: active debates, starts per hour, schedules, running backtests; a
refusal is a 429 ``quota_exceeded`` naming the limit, changes nothing, and staff are
exempt."""

from __future__ import annotations

import threading
from datetime import timedelta

import pytest
from django.conf import settings
from django.db import connection, transaction
from django.test import override_settings
from django.utils import timezone

from arena.celery import app
from debates.models import Debate, DebateStart, DebateStatus, Schedule
from debates.quotas import QuotaExceeded, backtest_start_check
from debates.services.schedules import schedule_fire
from tests.api.conftest import AS_OF, debate_body
from tests.api.test_schedules import schedule_body
from tests.debates.factories import (
    DebateFactory,
    MessageFactory,
    ParticipantFactory,
    ScheduleFactory,
)
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db


def test_the_defaults_are_the_documented_ones():
    assert (
        settings.QUOTA_ACTIVE_DEBATES,
        settings.QUOTA_STARTS_PER_HOUR,
        settings.QUOTA_SCHEDULES,
        settings.QUOTA_RUNNING_BACKTESTS,
    ) == (10, 100, 20, 1)


@override_settings(QUOTA_ACTIVE_DEBATES=2)
def test_creating_past_the_active_debates_is_refused(api, user, seeded):
    # given two debates not done yet (a pending one and a running one) and a finished one
    DebateFactory(owner=user, status=DebateStatus.PENDING)
    DebateFactory(owner=user, status=DebateStatus.RUNNING)
    DebateFactory(owner=user, status=DebateStatus.COMPLETED)
    # when a third is created
    response = api.post("/api/debates", debate_body(seeded), format="json")
    # then it is refused naming the limit, and nothing is created
    assert response.status_code == 429
    assert response.json() == {
        "code": "quota_exceeded",
        "message": "You have as many pending, running or voting debates as one user may "
        "(at most 2).",
        "fields": {"active_debates": ["At most 2; you have 2."]},
    }
    assert Debate.objects.count() == 3
    # and once one is done, a new one is created
    Debate.objects.filter(status=DebateStatus.RUNNING).update(status=DebateStatus.CANCELLED)
    assert api.post("/api/debates", debate_body(seeded), format="json").status_code == 201


@override_settings(QUOTA_ACTIVE_DEBATES=1)
def test_staff_are_exempt(client_for, staff_user, seeded):
    # given a staff user over the limit
    DebateFactory(owner=staff_user, status=DebateStatus.RUNNING)
    body = debate_body(seeded)
    for seat, model in zip(body["participants"], seeded["models"], strict=True):
        model.owner = staff_user
        model.save()
        seat["ai_model"] = model.pk
    seeded["strategy"].owner = staff_user
    seeded["strategy"].save()
    # when it creates another debate, it is created
    response = client_for(staff_user).post("/api/debates", body, format="json")
    assert response.status_code == 201


@override_settings(QUOTA_STARTS_PER_HOUR=2)
def test_starting_past_the_starts_per_hour_is_refused(api, user, seeded):
    # given two debates started within the hour (one of them finished since)
    ids = [api.post("/api/debates", debate_body(seeded), format="json").json()["id"] for _ in "abc"]
    for debate_id in ids[:2]:
        assert api.post(f"/api/debates/{debate_id}/start").status_code == 200
    Debate.objects.filter(pk=ids[0]).update(status=DebateStatus.COMPLETED)
    # when a third is started
    response = api.post(f"/api/debates/{ids[2]}/start")
    # then it is refused naming the limit, and stays pending
    assert response.status_code == 429
    assert response.json() == {
        "code": "quota_exceeded",
        "message": "You have started as many debates in the last hour as one user may (at most 2).",
        "fields": {"starts_per_hour": ["At most 2; you have 2."]},
    }
    assert Debate.objects.get(pk=ids[2]).status == DebateStatus.PENDING
    app.control.purge()  # the two runs sent, which no worker here takes


@override_settings(QUOTA_SCHEDULES=1)
def test_creating_past_the_schedules_is_refused(api, user, seeded):
    assert api.post("/api/schedules", schedule_body(seeded), format="json").status_code == 201
    response = api.post("/api/schedules", schedule_body(seeded), format="json")
    assert response.status_code == 429
    assert response.json()["fields"] == {"schedules": ["At most 1; you have 1."]}
    assert Schedule.objects.count() == 1


@override_settings(QUOTA_ACTIVE_DEBATES=1)
def test_a_firing_past_a_quota_is_skipped_with_the_reason(user, seeded):
    # given a schedule whose owner has as many debates as allowed
    schedule = ScheduleFactory(owner=user, strategy=seeded["strategy"])
    DebateFactory(owner=user, status=DebateStatus.RUNNING)
    # when it fires
    firing = schedule_fire(schedule_id=schedule.pk)
    # then the firing is skipped with the quota's reason, and no debate is made
    schedule.refresh_from_db()
    assert firing.skipped == "quota_exceeded"
    assert schedule.skip_count == 1
    assert schedule.last_skip_reason.startswith(
        "quota_exceeded: You have as many pending, running or voting debates"
    )
    assert Debate.objects.count() == 1


def test_a_running_backtest_quota_refuses_the_second(user, staff_user):
    with transaction.atomic():
        backtest_start_check(owner_id=user.pk, running=0)
        with pytest.raises(QuotaExceeded) as caught:
            backtest_start_check(owner_id=user.pk, running=1)
        backtest_start_check(owner_id=staff_user.pk, running=5)
    assert caught.value.fields == {"running_backtests": ["At most 1; you have 1."]}
    assert caught.value.status_code == 429


@pytest.mark.django_db(transaction=True)
@override_settings(QUOTA_ACTIVE_DEBATES=1)
def test_concurrent_creates_take_the_last_place_once(client_for, user, seeded):
    # given one place left and eight requests of the user at once
    body = debate_body(seeded)
    statuses: list[int] = []
    start = threading.Barrier(8)

    def create() -> None:
        try:
            start.wait()
            statuses.append(client_for(user).post("/api/debates", body, format="json").status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=create) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # then exactly one is created
    assert sorted(statuses) == [201] + [429] * 7
    assert Debate.objects.count() == 1


# --- What happened, not what remains: starts logged, retries counted ---------------------

ACTIVE_REFUSAL = {
    "code": "quota_exceeded",
    "message": "You have as many pending, running or voting debates as one user may (at most 2).",
    "fields": {"active_debates": ["At most 2; you have 2."]},
}
STARTS_REFUSAL = {
    "code": "quota_exceeded",
    "message": "You have started as many debates in the last hour as one user may (at most 1).",
    "fields": {"starts_per_hour": ["At most 1; you have 1."]},
}


def failed_in_round_1(user) -> Debate:
    """Return a debate of ``user`` failed in round 1: one opening answered, one failed,
    so that both ``retry`` and ``retry-step`` take it back to running."""
    debate = DebateFactory(
        owner=user,
        status=DebateStatus.FAILED,
        phase="opening",
        current_round=1,
        max_rounds=2,
        as_of=AS_OF,
        market_snapshot={"source": "dataset"},
        step_outcomes={"prepare": {"status": "done"}},
        error={"step": "round 1", "code": "round_failed", "message": "A turn failed."},
    )
    seats = [ParticipantFactory(debate=debate, speak_order=order) for order in (0, 1)]
    MessageFactory(participant=seats[0], status="ok")
    MessageFactory(participant=seats[1], status="error", parse_status="none")
    return debate


def _start(api, seeded) -> int:
    """Create and start a debate through the API; return its id."""
    debate_id = api.post("/api/debates", debate_body(seeded), format="json").json()["id"]
    assert api.post(f"/api/debates/{debate_id}/start").status_code == 200
    return debate_id


@pytest.mark.parametrize("action", ["retry", "retry-step"])
@override_settings(QUOTA_ACTIVE_DEBATES=2)
def test_a_retry_past_the_active_debates_is_refused(api, user, action):
    # given two pending debates, as many as allowed, and a failed one
    DebateFactory.create_batch(2, owner=user, status=DebateStatus.PENDING)
    failed = failed_in_round_1(user)
    before = Debate.objects.filter(pk=failed.pk).values().get()
    # when the failed one is retried
    response = api.post(f"/api/debates/{failed.pk}/{action}")
    # then it is refused naming the limit, and nothing changed
    assert response.status_code == 429
    assert response.json() == ACTIVE_REFUSAL
    assert Debate.objects.filter(pk=failed.pk).values().get() == before
    assert failed.messages.count() == 2


@pytest.mark.parametrize("action", ["retry", "retry-step"])
@override_settings(QUOTA_STARTS_PER_HOUR=1)
def test_a_retry_past_the_starts_per_hour_is_refused(api, user, seeded, action):
    # given a debate started within the hour, as many starts as allowed, and a failed one
    _start(api, seeded)
    failed = failed_in_round_1(user)
    # when the failed one is retried
    response = api.post(f"/api/debates/{failed.pk}/{action}")
    # then it is refused naming the limit, and stays failed
    assert response.status_code == 429
    assert response.json() == STARTS_REFUSAL
    assert Debate.objects.get(pk=failed.pk).status == DebateStatus.FAILED
    app.control.purge()


@pytest.mark.parametrize("action", ["retry", "retry-step"])
@override_settings(QUOTA_STARTS_PER_HOUR=1)
def test_a_retry_counts_as_a_start(api, user, seeded, action):
    # given a failed debate retried, the one start allowed in the hour
    failed = failed_in_round_1(user)
    assert api.post(f"/api/debates/{failed.pk}/{action}").status_code == 200
    # when a pending debate is started
    pending = api.post("/api/debates", debate_body(seeded), format="json").json()["id"]
    response = api.post(f"/api/debates/{pending}/start")
    # then it is refused: the retry was a start
    assert response.status_code == 429
    assert response.json() == STARTS_REFUSAL
    assert Debate.objects.get(pk=pending).status == DebateStatus.PENDING
    app.control.purge()


@override_settings(QUOTA_STARTS_PER_HOUR=2)
def test_deleting_started_debates_gives_no_start_back(api, user, seeded):
    # given two debates started, cancelled and deleted within the hour
    for _ in range(2):
        debate_id = _start(api, seeded)
        assert api.post(f"/api/debates/{debate_id}/cancel").status_code == 200
        assert api.delete(f"/api/debates/{debate_id}").status_code == 204
    assert Debate.objects.count() == 0
    # when a third is started
    pending = api.post("/api/debates", debate_body(seeded), format="json").json()["id"]
    response = api.post(f"/api/debates/{pending}/start")
    # then it is refused: the starts happened, whatever became of their debates
    assert response.status_code == 429
    assert response.json()["fields"] == {"starts_per_hour": ["At most 2; you have 2."]}
    assert Debate.objects.get(pk=pending).status == DebateStatus.PENDING
    app.control.purge()


def test_starts_older_than_a_day_are_trimmed_when_one_is_logged(api, user, seeded):
    # given a start of the user's a day and a minute ago, one an hour ago, and another
    # user's from two days ago
    now = timezone.now()
    old = DebateStart.objects.create(owner=user, started_at=now - timedelta(days=1, minutes=1))
    recent = DebateStart.objects.create(owner=user, started_at=now - timedelta(hours=1))
    theirs = DebateStart.objects.create(owner=UserFactory(), started_at=now - timedelta(days=2))
    # when the user starts a debate
    _start(api, seeded)
    # then the old start is gone, the recent one kept, the new one logged; another
    # user's starts are trimmed when that user starts one
    kept = set(DebateStart.objects.values_list("pk", flat=True))
    assert old.pk not in kept
    assert {recent.pk, theirs.pk} < kept
    assert DebateStart.objects.filter(owner=user).count() == 2
    app.control.purge()


@pytest.mark.django_db(transaction=True)
@override_settings(QUOTA_ACTIVE_DEBATES=1)
def test_concurrent_retries_take_the_last_place_once(client_for, user):
    # given one place left and two failed debates retried at once
    failed = [failed_in_round_1(user).pk for _ in range(2)]
    statuses: list[int] = []
    start = threading.Barrier(2)

    def retry(debate_id: int) -> None:
        try:
            start.wait()
            statuses.append(client_for(user).post(f"/api/debates/{debate_id}/retry").status_code)
        finally:
            connection.close()

    threads = [threading.Thread(target=retry, args=(debate_id,)) for debate_id in failed]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # then exactly one goes back to running
    assert sorted(statuses) == [200, 429]
    statuses_now = sorted(Debate.objects.values_list("status", flat=True))
    assert statuses_now == [DebateStatus.FAILED, DebateStatus.RUNNING]
    app.control.purge()
