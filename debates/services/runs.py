"""The Celery canvas of a debate run, built from what is already stored.

A run is: the round-1 openings as a group (they do not depend on each other), the
turns of rounds 2..N one after another in speaking order, then the votes as a group
whose chord callback computes the consensus. The same function plans a fresh start,
a retry and a resume after a crash: it leaves out every step already stored, so no
stored turn is ever asked again.
"""

from __future__ import annotations

import logging
from datetime import timedelta

from celery import chain, chord, group
from celery.canvas import Signature
from django.conf import settings
from django.db import transaction
from django.utils import timezone

from arena.worker import send_on_commit
from debates.models import (
    ACTIVE_STATUSES,
    Ballot,
    Debate,
    DebateStatus,
    Message,
    Participant,
)

logger = logging.getLogger(__name__)


def stale_after() -> timedelta:
    """Return how long an active debate may go without progress before it is resumed
    from its stored steps (``DEBATE_STALE_AFTER_S``, 45 s by default)."""
    return timedelta(seconds=settings.DEBATE_STALE_AFTER_S)


def run_plan(*, debate: Debate, fresh: bool = False) -> Signature | None:
    """Return the canvas of the steps of ``debate`` that are not stored yet.

    ``fresh``: the debate has just started, so it has no stored step to leave out.
    """
    from debates.tasks import consensus_finalize_task, turn_run_task, vote_run_task

    seats = list(
        Participant.objects.filter(debate=debate)
        .order_by("speak_order")
        .values_list("pk", flat=True)
    )
    said, voted = (set(), set()) if fresh else _stored_steps(debate)
    steps: list[Signature] = []
    if debate.status == DebateStatus.RUNNING:
        for round_number in range(max(debate.current_round, 1), debate.max_rounds + 1):
            missing = [pk for pk in seats if (round_number, pk) not in said]
            turns = [turn_run_task.si(debate.pk, round_number, pk) for pk in missing]
            if round_number == 1 and len(turns) > 1:
                steps.append(group(turns))
            else:
                steps.extend(_unread(turn) for turn in turns)
    elif debate.status != DebateStatus.VOTING:
        return None
    votes = [vote_run_task.si(debate.pk, pk) for pk in seats if pk not in voted]
    if len(votes) > 1:
        steps.append(group(votes))
    else:
        steps.extend(_unread(vote) for vote in votes)
    steps.append(_unread(consensus_finalize_task.si(debate.pk)))
    return chained(steps)


def chained(steps: list[Signature]) -> Signature:
    """Return the chain of ``steps``, built in one pass (a run's, or the benchmark's).

    ``chain(group, a, b, ...)`` is the chord of the group with the body ``a | b | ...``,
    but Celery grows that body one ``|`` at a time, each cloning the body so far: a
    fresh 3x3 run took 0.9 to 1.4 ms to build that way, and 0.3 ms as the chord of the
    group and the chain of the rest, which sends the very same messages.
    """
    head, *rest = steps
    if isinstance(head, group) and len(rest) > 1:
        return chain(chord(head, chain(*rest)))
    return chain(*steps)


def _unread(step: Signature) -> Signature:
    """Return ``step`` set not to store its result.

    Only a chord reads results (it counts those of its group), so a step outside a
    group stores none: its sender does not subscribe to it before sending the step, nor
    does its worker write it to Redis afterwards.
    """
    return step.set(ignore_result=True)


def _stored_steps(debate: Debate) -> tuple[set[tuple[int, int]], set[int]]:
    """Return the stored turns (round, participant id) and ballots (participant id)."""
    said = set(
        Message.objects.filter(debate=debate).order_by().values_list("round", "participant_id")
    )
    voted = set(
        Ballot.objects.filter(debate=debate).order_by().values_list("participant_id", flat=True)
    )
    return said, voted


def run_enqueue(*, debate: Debate, fresh: bool = False) -> None:
    """Send the remaining steps of ``debate`` to the workers once the transaction commits."""
    plan = run_plan(debate=debate, fresh=fresh)
    if plan is not None:
        send_on_commit(plan)


def after_consensus(*, debate_id: int) -> None:
    """Hand the primary decision to execution when the debate asked for it."""
    from traders.hooks import auto_execute

    auto_execute(debate_id=debate_id)


def debates_resume_stale(*, older_than: timedelta | None = None) -> list[int]:
    """Re-enqueue the remaining steps of every active debate with no progress for
    ``older_than`` (``stale_after()`` by default).

    A debate whose worker died, or whose queued messages were lost with a Redis restart,
    goes on from its stored steps; step claims keep a still-running step from being
    asked twice. Return the ids of the debates resumed.
    """
    from debates.services.lifecycle import debate_prepare

    cutoff = timezone.now() - (stale_after() if older_than is None else older_than)
    resumed = []
    stale = Debate.objects.filter(status__in=ACTIVE_STATUSES, progressed_at__lt=cutoff)
    for debate_id in stale.values_list("pk", flat=True):
        # Claim the resume itself, so two watchdogs never resume the same debate at once.
        with transaction.atomic():
            claimed = Debate.objects.filter(
                pk=debate_id, status__in=ACTIVE_STATUSES, progressed_at__lt=cutoff
            ).update(progressed_at=timezone.now())
            if not claimed:
                continue
        if not debate_prepare(debate_id=debate_id):
            continue
        with transaction.atomic():
            debate = Debate.objects.get(pk=debate_id)
            logger.warning(
                "resuming debate %s (%s, round %s)", debate_id, debate.status, debate.current_round
            )
            run_enqueue(debate=debate)
        resumed.append(debate_id)
    return resumed
