"""A debate at ``cache: use`` runs in place the steps the model-call cache answers.

A step answered from the cache waits for no model: sending it to a worker as a task of
its own would cost more than the step. So the run of such a debate sends its prepare
step alone (``runs.run_plan``), and that task, once the market snapshot is stored, runs
the following steps one after another through the same services the step tasks call:
each turn, vote and judge step whose call the cache answers, and the consensus. At the
first step the cache does not answer (or another copy of which is running, or that no
service here runs: a person's, the execution), it stops, and the rest of the plan is
sent as any run's is (``runs.run_enqueue``): a backtest run again takes one task a
debate, and a debate half in the cache asks the models only for the rest.

Every step keeps its own claim and records itself through the service its task calls;
the openings side by side, and the votes, are asked one after another, then stored
together in one transaction, as the stage they are. A worker lost in the middle leaves
the steps done so far stored, and the watchdog sends the rest.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

from debates.engine.judge import JUDGE_FINAL, JUDGE_ROUND
from debates.engine.plan import CONSENSUS, OPENING, REBUTTAL, VOTING, Step
from debates.selectors import debate_state
from debates.services.calls import NotCached, StepDeferred, cached_answers_only
from debates.services.consensus import consensus_finalize
from debates.services.judge import judge_final_run, judge_round_run
from debates.services.lifecycle import debate_prepare
from debates.services.runs import pending_stages, run_enqueue, runs_in_place, step_task
from debates.services.steps import openings_run, turn_run, votes_run
from debates.step_log import step_ran_in_place


def _turn(debate_id: int, step: Step, holder: str) -> None:
    turn_run(
        debate_id=debate_id, round_number=step.round, participant_id=step.speaker, holder=holder
    )


# The service of each kind of step run in place on its own, from the debate's id, the
# step and the holder of its claim (the task running it). The execution step is the
# traders app's.
_IN_PLACE: dict[str, Callable[[int, Step, str], None]] = {
    REBUTTAL: _turn,
    JUDGE_ROUND: lambda debate_id, step, holder: judge_round_run(
        debate_id=debate_id, round_number=step.round, holder=holder
    ),
    JUDGE_FINAL: lambda debate_id, step, holder: judge_final_run(
        debate_id=debate_id, holder=holder
    ),
    CONSENSUS: lambda debate_id, step, holder: consensus_finalize(debate_id=debate_id),
}


def prepare_step_run(*, debate_id: int, holder: str) -> None:
    """Run a debate's prepare step (``debate_prepare``) in task ``holder`` and, when the
    debate may go on at ``cache: use``, the steps the cache answers (``cached_steps_run``).
    """
    debate = debate_prepare(debate_id=debate_id)
    if debate is not None and runs_in_place(debate):
        cached_steps_run(debate_id=debate_id, holder=holder)


def cached_steps_run(*, debate_id: int, holder: str) -> None:
    """Run in place (in task ``holder``) the steps of a prepared debate that the cache
    answers, in the plan's order; from the first it does not, send the rest as tasks
    (see the module docstring)."""
    for stage in pending_stages(debate_state(debate_id=debate_id)):
        if not _stage_ran_from_cache(debate_id, stage, holder):
            run_enqueue(debate_id=debate_id)
            return


# The service of each kind of step side by side (a stage of them) that runs the stage
# together, from the debate's id, the speakers and the holder of their claims.
_TOGETHER: dict[str, Callable[..., None]] = {OPENING: openings_run, VOTING: votes_run}


def _stage_ran_from_cache(debate_id: int, stage: list[Step], holder: str) -> bool:
    """Run a stage's steps in place; say whether all ran. The openings, and the votes,
    side by side are asked, then stored together (one transaction for the stage); the
    other steps one after another, up to the first that does not run."""
    together = _TOGETHER.get(stage[0].kind)
    if together is not None and all(step.kind == stage[0].kind for step in stage):
        run = functools.partial(
            together,
            debate_id=debate_id,
            participant_ids=tuple(step.speaker for step in stage),
            holder=holder,
        )
        return _ran_from_cache(debate_id, stage, holder, run)
    for step in stage:
        run = _IN_PLACE.get(step.kind)
        if run is None or not _ran_from_cache(
            debate_id, [step], holder, functools.partial(run, debate_id, step, holder)
        ):
            return False
    return True


def _ran_from_cache(
    debate_id: int, steps: list[Step], holder: str, run: Callable[[], None]
) -> bool:
    """Run ``steps`` in place (``run``) unless one needs a model call or another copy of
    one is running; say whether they ran. Steps whose debate has moved on (cancelled, or
    voting early) do nothing, and count as run."""
    began = time.perf_counter()
    try:
        with cached_answers_only():
            run()
    except (NotCached, StepDeferred):
        return False
    for step in steps:
        step_ran_in_place(*step_task(debate_id, step), began=began, holder=holder)
    return True
