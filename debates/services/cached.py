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
the turns of a round (the openings side by side, the rebuttals one after another, each
seeing those before it) and the votes are asked one after another, then stored together
in one transaction. A worker lost in the middle leaves the steps done so far stored,
and the watchdog sends the rest.
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
from debates.services.steps import round_turns_run, votes_run
from debates.step_log import step_ran_in_place

# The service of each kind of step run in place on its own, from the debate's id, the
# step and the holder of its claim (the task running it). The execution step is the
# traders app's.
_IN_PLACE: dict[str, Callable[[int, Step, str], None]] = {
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
        # A debate with no snapshot before this step has stored no step either: no
        # turn is asked without one.
        recorded = debate.market_snapshot is not None
        cached_steps_run(debate_id=debate_id, holder=holder, recorded=recorded)


def cached_steps_run(*, debate_id: int, holder: str, recorded: bool = True) -> None:
    """Run in place (in task ``holder``) the steps of a prepared debate that the cache
    answers, in the plan's order; from the first it does not, send the rest as tasks
    (see the module docstring). ``recorded=False``: the debate has stored no step (its
    snapshot is the one its prepare step has just made), so its turns, ballots and
    decisions are not read (``debate_state``)."""
    state = debate_state(debate_id=debate_id, recorded=recorded)
    for stage in _together(pending_stages(state)):
        if not _stage_ran_from_cache(debate_id, stage, holder):
            run_enqueue(debate_id=debate_id)
            return


def _together(stages: list[list[Step]]) -> list[list[Step]]:
    """Return ``stages`` with the rebuttals of a round that follow one another (each a
    stage of its own) as one: they run in place together."""
    joined: list[list[Step]] = []
    for stage in stages:
        last = joined[-1] if joined else None
        rebuttal = stage[0].kind == REBUTTAL
        if rebuttal and last and last[0].kind == REBUTTAL and last[0].round == stage[0].round:
            last.extend(stage)
        else:
            joined.append(list(stage))
    return joined


def _stage_ran_from_cache(debate_id: int, stage: list[Step], holder: str) -> bool:
    """Run a stage's steps in place; say whether all ran. The turns of a round (the
    openings side by side, or the rebuttals one after another) and the votes are asked,
    then stored together (one transaction for them); the other steps run one after
    another, up to the first that does not run."""
    kind, speakers = stage[0].kind, tuple(step.speaker for step in stage)
    together = {"debate_id": debate_id, "participant_ids": speakers, "holder": holder}
    if kind in (OPENING, REBUTTAL):
        run = functools.partial(round_turns_run, round_number=stage[0].round, **together)
        return _ran_from_cache(debate_id, stage, holder, run)
    if kind == VOTING:
        return _ran_from_cache(debate_id, stage, holder, functools.partial(votes_run, **together))
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
