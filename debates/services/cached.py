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

Every step keeps its own claim, transaction and events, and records itself as it does
in its task; a worker lost in the middle leaves the steps done so far stored, and the
watchdog sends the rest.
"""

from __future__ import annotations

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
from debates.services.steps import turn_run, vote_run
from debates.step_log import step_ran_in_place


def _turn(debate_id: int, step: Step, holder: str) -> None:
    turn_run(
        debate_id=debate_id, round_number=step.round, participant_id=step.speaker, holder=holder
    )


# The service of each kind of step run in place, from the debate's id, the step and the
# holder of its claim (the task running it). The execution step is the traders app's.
_IN_PLACE: dict[str, Callable[[int, Step, str], None]] = {
    OPENING: _turn,
    REBUTTAL: _turn,
    VOTING: lambda debate_id, step, holder: vote_run(
        debate_id=debate_id, participant_id=step.speaker, holder=holder
    ),
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
    stages = pending_stages(debate_state(debate_id=debate_id))
    for step in (step for stage in stages for step in stage):
        if not _ran_from_cache(debate_id, step, holder):
            run_enqueue(debate_id=debate_id)
            return


def _ran_from_cache(debate_id: int, step: Step, holder: str) -> bool:
    """Run ``step`` in place unless it needs a model call, another copy of it is running,
    or no service here runs it (the execution); say whether it ran. A step whose debate
    has moved on (cancelled, or voting early) does nothing, and counts as run."""
    run = _IN_PLACE.get(step.kind)
    if run is None:
        return False
    began = time.perf_counter()
    try:
        with cached_answers_only():
            run(debate_id, step, holder)
    except (NotCached, StepDeferred):
        return False
    step_ran_in_place(*step_task(debate_id, step), began=began, holder=holder)
    return True
