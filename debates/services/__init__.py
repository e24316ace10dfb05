"""Every write to debates goes through these services."""

from debates.services.consensus import consensus_finalize
from debates.services.lifecycle import (
    DebateInput,
    debate_advance,
    debate_cancel,
    debate_create,
    debate_delete,
    debate_fail,
    debate_prepare,
    debate_retry,
    debate_retry_step,
    debate_start,
    debate_step_record,
    debates_delete,
)
from debates.services.runs import debates_resume_stale, run_enqueue, run_plan
from debates.services.steps import (
    judge_final_run,
    judge_round_run,
    prepare_step_run,
    step_run,
    steps_run_in_place,
    turn_run,
    vote_run,
)

__all__ = [
    "DebateInput",
    "consensus_finalize",
    "debate_advance",
    "debate_cancel",
    "debate_create",
    "debate_delete",
    "debate_fail",
    "debate_prepare",
    "debate_retry",
    "debate_retry_step",
    "debate_start",
    "debate_step_record",
    "debates_delete",
    "debates_resume_stale",
    "judge_final_run",
    "judge_round_run",
    "prepare_step_run",
    "run_enqueue",
    "run_plan",
    "step_run",
    "steps_run_in_place",
    "turn_run",
    "vote_run",
]
