"""Celery tasks of a debate run: thin, idempotent interfaces to the services.

Each task receives ids only, calls one service and owns its retry policy. A step that
cannot run yet (no free model slot, or another live copy of it) is retried shortly
after; everything else the service records itself, so a task never fails a chain.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from datetime import timedelta
from typing import Any

from celery import shared_task
from celery.signals import worker_ready
from django.db import InterfaceError, OperationalError, connection

from arena.heartbeat import RESUME_ON_BOOT_MARGIN_S
from debates import services
from debates.claims import StepDeferred, claim_ttl_s
from debates.engine.plan import CONSENSUS
from debates.services.human import human_steps_expire
from debates.services.schedules import schedule_fire

# A step may wait its turn for a model slot many times when many debates run at once.
STEP_MAX_RETRIES = 2000
STEP_OPTIONS = {
    "bind": True,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "max_retries": STEP_MAX_RETRIES,
    "soft_time_limit": 240,
    "time_limit": 300,
}
# A lost database connection (a restart, a dropped socket) is retried on a fresh one.
DATABASE_ERRORS = (OperationalError, InterfaceError)
DATABASE_RETRY_S = 1.0

# A step that calls no model: short, and retried only on a lost database connection.
BRIEF_STEP_OPTIONS = {
    "bind": True,
    "acks_late": True,
    "reject_on_worker_lost": True,
    "max_retries": 30,
    "soft_time_limit": 60,
    "time_limit": 90,
}


def retry_on_fresh_connection(task: Any, exc: Exception) -> Exception:
    """Close the lost connection; return the retry of ``task`` on a fresh one."""
    connection.close()
    return task.retry(exc=exc, countdown=DATABASE_RETRY_S)


@shared_task(name="debates.prepare_run", **BRIEF_STEP_OPTIONS)
def prepare_run_task(self, debate_id: int) -> None:
    """Run a debate's prepare step: build and store its market snapshot; at ``cache:
    use``, then run in place the steps the cache answers and send the rest."""
    try:
        services.prepare_step_run(debate_id=debate_id, holder=self.request.id)
    except DATABASE_ERRORS as exc:
        raise retry_on_fresh_connection(self, exc) from exc


def _model_step(task: Any, run: Callable[[], None]) -> None:
    """Run a step that calls a model under ``task``'s retry policy."""
    try:
        run()
    except StepDeferred as exc:
        raise task.retry(countdown=exc.retry_after) from exc
    except DATABASE_ERRORS as exc:
        raise retry_on_fresh_connection(task, exc) from exc


@shared_task(name="debates.turn_run", **STEP_OPTIONS)
def turn_run_task(self, debate_id: int, round_number: int, participant_id: int) -> None:
    """Ask one participant for its turn in one round."""
    _model_step(
        self,
        lambda: services.turn_run(
            debate_id=debate_id,
            round_number=round_number,
            participant_id=participant_id,
            holder=self.request.id,
        ),
    )


@shared_task(name="debates.vote_run", **STEP_OPTIONS)
def vote_run_task(self, debate_id: int, participant_id: int) -> None:
    """Ask one participant for its final vote."""
    _model_step(
        self,
        lambda: services.vote_run(
            debate_id=debate_id, participant_id=participant_id, holder=self.request.id
        ),
    )


@shared_task(name="debates.judge_round", **STEP_OPTIONS)
def judge_round_task(self, debate_id: int, round_number: int) -> None:
    """Have the debate's judge summarise one round."""
    _model_step(
        self,
        lambda: services.judge_round_run(
            debate_id=debate_id, round_number=round_number, holder=self.request.id
        ),
    )


@shared_task(name="debates.judge_final", **STEP_OPTIONS)
def judge_final_task(self, debate_id: int) -> None:
    """Have the debate's judge score every participant after the votes."""
    _model_step(self, lambda: services.judge_final_run(debate_id=debate_id, holder=self.request.id))


@shared_task(name="debates.consensus_finalize", **BRIEF_STEP_OPTIONS)
def consensus_finalize_task(self, debate_id: int) -> None:
    """Compute and store the consensus of a debate whose votes are in."""
    try:
        services.step_run(debate_id=debate_id, key=(CONSENSUS, None, None), holder=self.request.id)
    except DATABASE_ERRORS as exc:
        raise retry_on_fresh_connection(self, exc) from exc


@shared_task(name="debates.resume_stale", soft_time_limit=60, time_limit=90)
def resume_stale_task(older_than_s: float | None = None) -> list[int]:
    """Resume active debates that stopped making progress (the watchdog)."""
    if older_than_s is None:
        return services.debates_resume_stale()
    return services.debates_resume_stale(older_than=timedelta(seconds=older_than_s))


@shared_task(name="debates.human_steps_expire", soft_time_limit=60, time_limit=90)
def human_steps_expire_task() -> list[int]:
    """Skip the turns and votes people let pass their time (sent by Celery beat)."""
    return human_steps_expire()


@worker_ready.connect
def resume_after_boot(sender=None, **kwargs) -> None:
    """Resume the debates a dead worker left behind, as soon as a worker is up."""
    ttl_s = claim_ttl_s()
    resume_stale_task.apply_async(
        kwargs={"older_than_s": ttl_s}, countdown=ttl_s + RESUME_ON_BOOT_MARGIN_S
    )


@shared_task(name="debates.schedule_fire", soft_time_limit=120, time_limit=150)
def schedule_fire_task(schedule_id: int) -> dict[str, Any]:
    """Fire one schedule (sent by Celery beat): start its next debate or record why not."""
    return asdict(schedule_fire(schedule_id=schedule_id))
