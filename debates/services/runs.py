"""The Celery canvas of a debate run, built from its plan of steps.

Each stage of the plan (``debates.engine.plan``) becomes a group when it has several
steps (the round-1 openings, the votes) and a single task otherwise, in order; the
consensus is the chord callback of the votes. Only the steps released to run and not
recorded yet are sent, so the same function plans a fresh start, a retry, an advance
and a resume after a crash, and no stored turn is ever asked again.

Each kind of step names the task that runs it (``STEP_TASKS``), by its registered name:
the execution step is a task of the traders app, which this app does not import. A
step no task runs (a person's turn) ends the canvas; the service recording it sends
the rest. A debate at ``cache: use`` sends its prepare step alone: that task runs in
place the steps the model-call cache answers, then sends the rest
(``debates.services.steps.steps_run_in_place``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import timedelta

from celery import chain, group, signature
from celery.canvas import Signature
from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from arena.worker import send_on_commit
from debates.engine.judge import JUDGE_FINAL, JUDGE_ROUND
from debates.engine.plan import (
    CONSENSUS,
    EXECUTION,
    OPENING,
    PREPARE,
    REBUTTAL,
    VOTING,
    Step,
    stages_to_run,
)
from debates.models import ACTIVE_STATUSES, CacheMode, Debate, DebateStatus
from debates.selectors import debate_state
from debates.services import transitions
from debates.state import debate_plan, outcome_name

logger = logging.getLogger(__name__)

# The task running each kind of step, and its arguments (ids only) from the debate's
# id and the step. Kinds added to the plan add their task here.
StepArgs = Callable[[int, Step], tuple]
STEP_TASKS: dict[str, tuple[str, StepArgs]] = {
    PREPARE: ("debates.prepare_run", lambda debate_id, step: (debate_id,)),
    OPENING: ("debates.turn_run", lambda debate_id, step: (debate_id, step.round, step.speaker)),
    REBUTTAL: ("debates.turn_run", lambda debate_id, step: (debate_id, step.round, step.speaker)),
    VOTING: ("debates.vote_run", lambda debate_id, step: (debate_id, step.speaker)),
    JUDGE_ROUND: ("debates.judge_round", lambda debate_id, step: (debate_id, step.round)),
    JUDGE_FINAL: ("debates.judge_final", lambda debate_id, step: (debate_id,)),
    CONSENSUS: ("debates.consensus_finalize", lambda debate_id, step: (debate_id,)),
    EXECUTION: ("traders.debate_execute", lambda debate_id, step: (debate_id,)),
}
# The kinds of step whose task calls a model: sent to the call workers' queue
# (debates.routing), where waiting on a provider costs a thread, not a process.
CALL_STEPS = frozenset({OPENING, REBUTTAL, VOTING, JUDGE_ROUND, JUDGE_FINAL})
# How late a completed debate's execution step is still resumed: a decision is not
# traded on hours after its debate (nor are debates completed before the step existed).
EXECUTION_RESUME_WITHIN = timedelta(hours=1)


def stale_after() -> timedelta:
    """Return how long an active debate may go without progress before it is resumed
    from its stored steps (``DEBATE_STALE_AFTER_S``, 45 s by default)."""
    return timedelta(seconds=settings.DEBATE_STALE_AFTER_S)


def step_task(debate_id: int, step: Step) -> tuple[str, tuple]:
    """Return the name of the task that runs ``step`` (a kind of ``STEP_TASKS``) and its
    arguments."""
    name, args = STEP_TASKS[step.kind]
    return name, args(debate_id, step)


def step_signature(debate_id: int, step: Step) -> Signature:
    """Return the task message of ``step`` (a kind of ``STEP_TASKS``)."""
    name, args = step_task(debate_id, step)
    return signature(name, args=args, immutable=True)


def pending_stages(debate: Debate) -> list[list[Step]]:
    """Return what runs next of ``debate`` (``debates.engine.plan.stages_to_run``), read
    with its stored steps (``debates.selectors.debate_state``)."""
    people = {seat.pk for seat in debate.participants.all() if seat.is_human}
    return stages_to_run(debate_plan(debate), people)


def runs_in_place(debate: Debate) -> bool:
    """Say whether the prepare task of ``debate`` runs in place the steps the model-call
    cache answers, then sends the rest (``debates.services.steps``): at ``cache: use``."""
    return debate.cache == CacheMode.USE


def run_plan(*, debate: Debate) -> Signature | None:
    """Return the canvas of the steps of ``debate`` released and not recorded yet
    (``pending_stages``); when its prepare step is still to run and its task runs the
    next steps in place (``runs_in_place``), that step alone.
    """
    stages = pending_stages(debate)
    if stages and stages[0][0].kind == PREPARE and runs_in_place(debate):
        stages = stages[:1]
    canvas: list[Signature] = []
    for stage in stages:
        tasks = [step_signature(debate.pk, step) for step in stage]
        canvas.append(group(tasks) if len(tasks) > 1 else _unread(tasks[0]))
    return chain(*canvas) if canvas else None


def _unread(step: Signature) -> Signature:
    """Return ``step`` set not to store its result.

    Only a chord reads results (it counts those of its group), so a step outside a
    group stores none: its sender does not subscribe to it before sending the step, nor
    does its worker write it to Redis afterwards.
    """
    return step.set(ignore_result=True)


def run_enqueue(*, debate_id: int, state: Debate | None = None) -> bool:
    """Send the released steps of a debate not run yet to the workers on commit; say
    whether there was any (a debate held before its next step has none).

    ``state``: the debate as ``debates.selectors.debate_state`` has just read it.
    """
    plan = run_plan(debate=state if state is not None else debate_state(debate_id=debate_id))
    if plan is not None:
        send_on_commit(plan)
    return plan is not None


def unfinished_runs() -> Q:
    """Return the debates with steps still to run: the active ones, and the ones
    completed within ``EXECUTION_RESUME_WITHIN`` whose execution step (run after the
    consensus completed them) has recorded no outcome yet."""
    execution_unrecorded = Q(
        status=DebateStatus.COMPLETED,
        auto_execute=True,
        finished_at__gte=timezone.now() - EXECUTION_RESUME_WITHIN,
    ) & ~Q(step_outcomes__has_key=outcome_name((EXECUTION, None, None)))
    return Q(status__in=ACTIVE_STATUSES) | execution_unrecorded


def debates_resume_stale(*, older_than: timedelta | None = None) -> list[int]:
    """Re-enqueue the remaining steps of every unfinished debate (``unfinished_runs``)
    with no progress for ``older_than`` (``stale_after()`` by default).

    A debate whose worker died, or whose queued messages were lost with a Redis restart,
    goes on from its stored steps; step claims keep a still-running step from being
    asked twice, and a completed debate's execution step is idempotent. A debate with no
    step to send (it waits for a person, or is held for ``advance``) is left as it is.
    Return the ids of the debates resumed.
    """
    cutoff = timezone.now() - (stale_after() if older_than is None else older_than)
    resumed = []
    stale = Debate.objects.filter(unfinished_runs(), progressed_at__lt=cutoff)
    for debate_id in stale.values_list("pk", flat=True):
        with transaction.atomic():
            claimed = transitions.resume_claimed(
                debate_id=debate_id, unfinished=unfinished_runs(), cutoff=cutoff
            )
        if not claimed:
            continue
        with transaction.atomic():
            if not run_enqueue(debate_id=debate_id):
                continue  # held before its next step (the manual pace), or waiting
            debate = Debate.objects.get(pk=debate_id)
            logger.warning(
                "resuming debate %s (%s, round %s)", debate_id, debate.status, debate.current_round
            )
        resumed.append(debate_id)
    return resumed
