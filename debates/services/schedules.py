"""Schedules: debate templates fired every N minutes by Celery beat (SPEC 11).

A schedule holds what each of its debates is created from, so it is checked by the
same rules as a debate (SPEC 5.1): an owned strategy, 2 to 6 participants seating the
owner's enabled models, rounds 2..5, an owned trader when it executes automatically,
and the selective settings each firing's debate carries: its ``level`` (``auto`` unless
told otherwise), its ``mode`` with ``mode_models``, ``temperature_range`` and
``role_model_map``, and ``max_output_tokens`` per role; the schedule's own daily token
budget and cap apply to all its debates' calls.

Beat is kept in step here and nowhere else: every service that creates, changes,
pauses, resumes or deletes a schedule writes its ``django_celery_beat`` periodic task
in the same transaction: an ``IntervalSchedule`` of ``interval_minutes``, the task
``debates.schedule_fire`` with the kwargs ``{"schedule_id": id}``, enabled exactly when
the schedule is. The task is saved or deleted one instance at a time, never with a
bulk ``update()``, so the database scheduler's change signal fires and a running beat
picks the change up within seconds.

``schedule_fire`` is what beat sends: under the schedule's row lock it either creates
and starts the next debate, or records why it did not (``skip_count`` and
``last_skip_reason``, as ``"<code>: <message>"``). A firing while the schedule's
previous debate is pending, running or voting is skipped, never queued behind it;
concurrent firings of one schedule queue on the lock, so they start one debate.

Replay: with ``replay_as_of`` set (a strategy on the dataset), each firing's debate
sees the market at ``replay_as_of`` and the firing moves ``replay_as_of`` on by the
interval, so a recurring debate walks through the bundled history. An automatic
paper trader's clock is advanced to the debate's instant by the debate's execution step
(``traders.hooks``), which fills the stops and targets the prices crossed since the
previous firing before the debate trades. A replay that runs past the end of the
dataset pauses its schedule.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.utils import timezone
from django_celery_beat.models import IntervalSchedule, PeriodicTask

from arena.exceptions import ApplicationError, NotFound, ValidationError
from arena.inputs import validate
from debates.models import Debate, DebateStatus, Schedule
from debates.quotas import schedule_create_check, schedule_fire_refusal
from debates.services.inputs import SEATING_FIELDS, ScheduleInputSerializer, replay_refusals
from debates.services.levels import quiet_market
from debates.services.lifecycle import DebateInput, debate_create, debate_start
from strategies.market.dataset import DATASET_END

FIRE_TASK = "debates.schedule_fire"
# A firing still queued when the next one is due is stale (workers were down): beat
# sends it with this expiry, capped so long intervals keep a sane bound.
MAX_FIRING_EXPIRY_S = 24 * 3600
# While the previous debate is in one of these, a firing is skipped.
BUSY_STATUSES = (DebateStatus.PENDING, DebateStatus.RUNNING, DebateStatus.VOTING)
# A debate is named after its schedule and its run number.
MAX_SCHEDULE_NAME_IN_DEBATE = 180


@dataclass(frozen=True)
class ScheduleFiring:
    """What one firing did: the debate it started, or the code and reason of its skip."""

    schedule_id: int
    debate_id: int | None = None
    skipped: str = ""
    reason: str = ""


# -- checking a template ------------------------------------------------------------


def _validated(
    owner: AbstractBaseUser, data: Mapping[str, Any], schedule: Schedule | None = None
) -> dict[str, Any]:
    """Return the columns to store of the template ``data``, given over ``schedule``'s
    (a change: the whole template is checked again), or raise ``ValidationError``
    naming every bad field."""
    if isinstance(data, Mapping):
        data = {**(_current(schedule) if schedule is not None else {}), **data}
        # An empty seating setting (the admin's blank one, the temperature range stored
        # empty when the mode is not temperature) is none given.
        data = {
            name: value
            for name, value in data.items()
            if name not in SEATING_FIELDS or name == "mode" or value not in (None, [], {})
        }
    return validate(ScheduleInputSerializer, data, context={"owner": owner})


def _current(schedule: Schedule) -> dict[str, Any]:
    """Return the stored template as a client gives it, objects by id."""
    return {
        name: getattr(schedule, Schedule._meta.get_field(name).attname)
        for name in ScheduleInputSerializer().fields
    }


def _seating(values: Mapping[str, Any]) -> dict[str, Any]:
    """Return the seating fields of a schedule as a debate's input takes them.

    A stored empty ``temperature_range`` (the mode is not ``temperature``) is none given.
    """
    seating = {name: values[name] for name in SEATING_FIELDS}
    seating["temperature_range"] = seating["temperature_range"] or None
    return seating


def _owned(owner: AbstractBaseUser, schedule_id: int) -> Schedule:
    """Return the owner's schedule, row-locked until the transaction ends."""
    schedule = (
        Schedule.objects.select_for_update(of=("self",))
        .select_related("periodic_task")
        .filter(owner=owner, pk=schedule_id)
        .first()
    )
    if schedule is None:
        raise NotFound("Schedule not found.")
    return schedule


def schedule_check(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> None:
    """Raise ``ValidationError`` unless ``data`` (every field, ids for objects) is valid.

    For forms that show the refusal next to their fields before saving (the admin).
    """
    _validated(owner, data)


# -- keeping beat in step -------------------------------------------------------------


def periodic_task_name(schedule_id: int) -> str:
    """Return the name of the periodic task that fires schedule ``schedule_id``."""
    return f"debates.schedule:{schedule_id}"


def _interval(minutes: int) -> IntervalSchedule:
    # IntervalSchedule has no unique constraint: reuse the oldest equal row.
    interval = (
        IntervalSchedule.objects.filter(every=minutes, period=IntervalSchedule.MINUTES)
        .order_by("pk")
        .first()
    )
    return interval or IntervalSchedule.objects.create(
        every=minutes, period=IntervalSchedule.MINUTES
    )


def _periodic_task_sync(schedule: Schedule) -> PeriodicTask:
    """Write the schedule's periodic task as the schedule says; link it if it is new.

    ``PeriodicTask.save()`` (not a queryset update) signals the change to beat.
    """
    name = periodic_task_name(schedule.pk)
    task = (
        schedule.periodic_task
        or PeriodicTask.objects.filter(name=name).first()
        or PeriodicTask(name=name)
    )
    task.task = FIRE_TASK
    task.kwargs = json.dumps({"schedule_id": schedule.pk})
    task.interval = _interval(schedule.interval_minutes)
    task.enabled = schedule.enabled
    task.expire_seconds = min(schedule.interval_minutes * 60, MAX_FIRING_EXPIRY_S)
    task.description = f"Recurring debate: {schedule.name}"
    task.save()
    if schedule.periodic_task_id != task.pk:
        schedule.periodic_task = task
        Schedule.objects.filter(pk=schedule.pk).update(periodic_task=task)
    return task


def _set_enabled(schedule: Schedule, enabled: bool) -> Schedule:
    schedule.enabled = enabled
    schedule.save(update_fields=["enabled", "updated_at"])
    _periodic_task_sync(schedule)
    return schedule


# -- create, change, pause, resume, delete -------------------------------------------------


def schedule_create(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> Schedule:
    """Create a schedule and its periodic task; ``strategy``, ``trader`` and seat models
    are given by id."""
    values = _validated(owner, data)
    with transaction.atomic():
        schedule_create_check(owner_id=owner.pk)
        schedule = Schedule.objects.create(owner=owner, **values)
        _periodic_task_sync(schedule)
    return schedule


def schedule_update(
    *, owner: AbstractBaseUser, schedule_id: int, changes: Mapping[str, Any]
) -> Schedule:
    """Change the fields in ``changes`` and the periodic task with them.

    The whole template is checked again, except for a bare pause (``enabled: false``),
    which never needs a valid template.
    """
    if changes == {"enabled": False}:
        return schedule_pause(owner=owner, schedule_id=schedule_id)
    with transaction.atomic():
        schedule = _owned(owner, schedule_id)
        values = _validated(owner, changes, schedule)
        for name, value in values.items():
            setattr(schedule, name, value)
        schedule.save()
        _periodic_task_sync(schedule)
    return schedule


def schedule_pause(*, owner: AbstractBaseUser, schedule_id: int) -> Schedule:
    """Stop firing a schedule: disable it and its periodic task."""
    with transaction.atomic():
        return _set_enabled(_owned(owner, schedule_id), False)


def schedule_resume(*, owner: AbstractBaseUser, schedule_id: int) -> Schedule:
    """Fire a paused schedule again, once its template is still valid."""
    with transaction.atomic():
        schedule = _owned(owner, schedule_id)
        _validated(owner, {"enabled": True}, schedule)
        return _set_enabled(schedule, True)


def schedule_delete(*, owner: AbstractBaseUser, schedule_id: int) -> None:
    """Delete a schedule and its periodic task; the debates it created stay."""
    with transaction.atomic():
        schedule = _owned(owner, schedule_id)
        task = schedule.periodic_task
        schedule.delete()
        if task is not None:
            task.delete()


# -- firing ---------------------------------------------------------------------------


def _lock(schedule_id: int) -> Schedule | None:
    return (
        Schedule.objects.select_for_update(of=("self",))
        .select_related("owner", "strategy", "trader", "periodic_task")
        .filter(pk=schedule_id)
        .first()
    )


def _refusal(schedule: Schedule) -> tuple[str, str] | None:
    """Return (code, reason) when the schedule must not start a debate now."""
    if not schedule.enabled:
        return "disabled", "The schedule is paused."
    busy = (
        Debate.objects.filter(schedule=schedule, status__in=BUSY_STATUSES)
        .order_by("pk")
        .values_list("pk", "status")
        .first()
    )
    if busy is not None:
        return "previous_debate_active", f"Debate {busy[0]} is still {busy[1]}."
    if schedule.strategy is None:
        return "strategy_deleted", "The schedule's strategy was deleted."
    return _trader_refusal(schedule) or _replay_refusal(schedule)


def _trader_refusal(schedule: Schedule) -> tuple[str, str] | None:
    """Return (code, reason) when the trader the schedule executes on is gone or stopped."""
    trader = schedule.trader
    if not schedule.auto_execute:
        return None
    if trader is None:
        return "trader_deleted", "The schedule executes automatically; its trader was deleted."
    if not trader.is_running:
        return "trader_stopped", f"Trader {trader.name} is stopped."
    return None


def _replay_refusal(schedule: Schedule) -> tuple[str, str] | None:
    """Return (code, reason) when the schedule's replay cannot go on from its instant."""
    as_of, trader = schedule.replay_as_of, schedule.trader
    if as_of is not None and as_of > DATASET_END:
        return (
            "replay_finished",
            f"The replay reached the end of the dataset ({DATASET_END.isoformat()}); "
            "the schedule was paused.",
        )
    replay_errors = replay_refusals(
        schedule.strategy,
        trader,
        {"replay_as_of": as_of, "auto_execute": schedule.auto_execute},
    )
    if replay_errors:
        return "invalid_template", " ".join(m for ms in replay_errors.values() for m in ms)
    if (
        as_of is not None
        and _paper_clock_driven(schedule)
        and trader.replay_as_of is not None
        and trader.replay_as_of > as_of
    ):
        return (
            "trader_clock_ahead",
            f"Paper trader {trader.name} is at {trader.replay_as_of.isoformat()}, after "
            f"this firing's instant {as_of.isoformat()}.",
        )
    return None


def _paper_clock_driven(schedule: Schedule) -> bool:
    """Say whether this schedule's debates move its paper trader's clock (each one's
    execution step does)."""
    trader = schedule.trader
    return bool(
        schedule.replay_as_of is not None
        and schedule.auto_execute
        and trader is not None
        and trader.is_dataset_paper
    )


def _skip(schedule: Schedule, code: str, reason: str) -> ScheduleFiring:
    message = f"{code}: {reason}"[: Schedule._meta.get_field("last_skip_reason").max_length]
    # The schedule's row is locked by the firing: its counts by reason are read fresh.
    by_reason = dict(schedule.skips_by_reason or {})
    by_reason[code] = by_reason.get(code, 0) + 1
    Schedule.objects.filter(pk=schedule.pk).update(
        skip_count=F("skip_count") + 1,
        skips_by_reason=by_reason,
        last_skip_reason=message,
        updated_at=timezone.now(),
    )
    if code == "replay_finished":
        _set_enabled(schedule, False)
    return ScheduleFiring(schedule_id=schedule.pk, skipped=code, reason=reason)


def _debate_input(schedule: Schedule) -> DebateInput:
    return DebateInput(
        name=f"{schedule.name[:MAX_SCHEDULE_NAME_IN_DEBATE]} #{schedule.run_count + 1}",
        strategy=schedule.strategy_id,
        participants=list(schedule.participants),
        symbol=schedule.symbol,
        max_rounds=schedule.max_rounds,
        interval_minutes=schedule.interval_minutes,
        prompt_variant=schedule.prompt_variant,
        auto_execute=schedule.auto_execute,
        trader=schedule.trader_id,
        as_of=schedule.replay_as_of,
        cache=schedule.cache,
        weighting=schedule.weighting,
        schedule_id=schedule.pk,
        level=schedule.level,
        **_seating({name: getattr(schedule, name) for name in SEATING_FIELDS}),
    )


def _describe(error: ApplicationError) -> str:
    details = "; ".join(
        f"{name}: {' '.join(str(m) for m in messages)}" for name, messages in error.fields.items()
    )
    return f"{error.message} {details}".strip()


def schedule_fire(*, schedule_id: int) -> ScheduleFiring:
    """Create and start the schedule's next debate, or record why not (Celery beat's call).

    Everything happens under the schedule's row lock, in one transaction: the checks,
    the debate, the schedule's counters and replay instant, and the start (whose run is
    enqueued when the transaction commits). A firing that cannot
    start a debate changes nothing but ``skip_count`` and ``last_skip_reason``.
    """
    with transaction.atomic():
        schedule = _lock(schedule_id)
        if schedule is None:
            return ScheduleFiring(
                schedule_id=schedule_id, skipped="deleted", reason="No such schedule."
            )
        refusal = _refusal(schedule)
        if refusal is not None:
            return _skip(schedule, *refusal)
        quota = schedule_fire_refusal(owner_id=schedule.owner_id)
        if quota is not None:
            return _skip(schedule, quota.code, quota.message)
        quiet = quiet_market(schedule=schedule)
        if quiet is not None:
            if schedule.replay_as_of is not None:
                Schedule.objects.filter(pk=schedule.pk).update(
                    replay_as_of=schedule.replay_as_of
                    + timedelta(minutes=schedule.interval_minutes)
                )
            return _skip(schedule, "quiet_market", quiet)
        try:
            debate = debate_create(owner=schedule.owner, data=_debate_input(schedule))
        except ValidationError as exc:
            return _skip(schedule, "invalid_template", _describe(exc))
        as_of = schedule.replay_as_of
        Schedule.objects.filter(pk=schedule.pk).update(
            last_debate=debate,
            last_fired_at=timezone.now(),
            run_count=F("run_count") + 1,
            replay_as_of=(as_of + timedelta(minutes=schedule.interval_minutes) if as_of else None),
            updated_at=timezone.now(),
        )
        debate_start(debate_id=debate.pk)
    return ScheduleFiring(schedule_id=schedule.pk, debate_id=debate.pk)
