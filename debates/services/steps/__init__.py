"""The steps of a debate run, and the one path that runs each of them.

``step_run`` runs one step of the plan (a turn, a vote, a judge call, the consensus):
it holds the step's claim while a model may be called (``debates.claims``: one live copy
of a step calls the model), calls the step's service, which reads what it needs, asks
the model, and records the answer in its own transaction, and writes the step's log
line. Each step's task calls it (``debates.tasks``). So does the prepare task of a debate
at ``cache: use``, for the steps the model-call cache answers, one after another in
place (``steps_run_in_place``): such a step waits for no model, and sending it to a
worker as a task of its own would cost more than the step. At the first step the cache
does not answer (or another copy of which is running, or that no service here runs: a
person's, the execution), the rest of the plan is sent as any run's is
(``runs.run_enqueue``). A worker lost in the middle leaves the steps done so far
stored, and the watchdog sends the rest.

The log line of a step, at INFO, as ``key=value`` pairs, for example::

    step debate=12 step=turn round=2 participant=31 outcome=ok model_ms=1840 attempts=1
    parse=ok latency_ms=1903 task=debates.turn_run

``outcome`` is what was stored (``ok``, ``error`` for a failed model call, ``none`` when
nothing was: a cancelled debate, say) or ``retry`` for a step that must run again later;
a step run in place says ``in_task``, the task that ran it. The line never holds a
prompt, an answer or a key; below INFO nothing is read for it.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable
from typing import Any

from arena import metrics
from debates.claims import StepDeferred, step_held
from debates.engine.judge import JUDGE_FINAL, JUDGE_ROUND
from debates.engine.plan import CONSENSUS, OPENING, PREPARE, REBUTTAL, VOTING, StepKey
from debates.models import Ballot, CacheMode, Message
from debates.selectors import debate_state
from debates.services import transitions
from debates.services.calls import NotCached
from debates.services.consensus import consensus_finalize
from debates.services.judge import judge_scores_ask, judge_summary_ask
from debates.services.lifecycle import debate_prepare
from debates.services.runs import STEP_TASKS, pending_stages, run_enqueue
from debates.services.steps.turns import turn_ask, turn_record
from debates.services.steps.votes import ballot_record, vote_ask, vote_row

__all__ = [
    "ballot_record",
    "judge_final_run",
    "judge_round_run",
    "prepare_step_run",
    "step_run",
    "steps_run_in_place",
    "turn_record",
    "turn_run",
    "vote_row",
    "vote_run",
]

logger = logging.getLogger("debates.step_log")

# The service of each kind of step this app runs, from the debate's id, the step's key
# and whether only the model-call cache may answer; a turn's and a vote's return what
# they stored. The execution step is the traders app's, run by its task alone.
_SERVICES: dict[str, Callable[[int, StepKey, bool], Any]] = {
    OPENING: lambda debate_id, key, cached_only: turn_ask(
        debate_id=debate_id, round_number=key[1], participant_id=key[2], cached_only=cached_only
    ),
    VOTING: lambda debate_id, key, cached_only: vote_ask(
        debate_id=debate_id, participant_id=key[2], cached_only=cached_only
    ),
    JUDGE_ROUND: lambda debate_id, key, cached_only: judge_summary_ask(
        debate_id=debate_id, round_number=key[1], cached_only=cached_only
    ),
    JUDGE_FINAL: lambda debate_id, key, cached_only: judge_scores_ask(
        debate_id=debate_id, cached_only=cached_only
    ),
    CONSENSUS: lambda debate_id, key, cached_only: consensus_finalize(debate_id=debate_id),
}
_SERVICES[REBUTTAL] = _SERVICES[OPENING]


def step_run(*, debate_id: int, key: StepKey, holder: str, cached_only: bool = False) -> None:
    """Run step ``key`` of a debate in task ``holder``; ``cached_only``: in place, only
    the model-call cache may answer its call (else ``NotCached`` is raised, the step
    having done nothing).

    Raise ``StepDeferred`` when the step must run again later (no free model slot, or
    another copy of it is running).
    """
    began = time.perf_counter()
    run = functools.partial(_SERVICES[key[0]], debate_id, key, cached_only)
    with metrics.batch():  # the step's counts and its model call's: one round trip
        try:
            if key[0] == CONSENSUS:
                stored = run()  # no model call: the debate's row lock keeps a second copy out
            else:
                beat = functools.partial(transitions.progressed, debate_id=debate_id)
                with step_held(step=_claim(debate_id, key), holder=holder, on_beat=beat):
                    stored = run()
        except StepDeferred:
            _counted(key[0], began, "retry")
            _log(debate_id, key, began, outcome="retry")
            raise
        _counted(key[0], began, _outcome(key[0], stored)["outcome"])
    _log(debate_id, key, began, stored, in_task=holder if cached_only else None)


def _claim(debate_id: int, key: StepKey) -> str:
    """Return the name of the claim of step ``key``."""
    kind, round_number, speaker = key
    if kind in (OPENING, REBUTTAL):
        return f"{debate_id}:turn:{round_number}:{speaker}"
    if kind == VOTING:
        return f"{debate_id}:vote:{speaker}"
    return f"{debate_id}:{kind}" + (f":{round_number}" if round_number is not None else "")


def turn_run(*, debate_id: int, round_number: int, participant_id: int, **run: Any) -> None:
    """Run a participant's turn in a round (``step_run``, with its ``holder`` and
    ``cached_only``)."""
    kind = OPENING if round_number == 1 else REBUTTAL
    step_run(debate_id=debate_id, key=(kind, round_number, participant_id), **run)


def vote_run(*, debate_id: int, participant_id: int, **run: Any) -> None:
    """Run a participant's final vote (``step_run``)."""
    step_run(debate_id=debate_id, key=(VOTING, None, participant_id), **run)


def judge_round_run(*, debate_id: int, round_number: int, **run: Any) -> None:
    """Run the judge's summary of a round (``step_run``)."""
    step_run(debate_id=debate_id, key=(JUDGE_ROUND, round_number, None), **run)


def judge_final_run(*, debate_id: int, **run: Any) -> None:
    """Run the judge's scores after the votes (``step_run``)."""
    step_run(debate_id=debate_id, key=(JUDGE_FINAL, None, None), **run)


def prepare_step_run(*, debate_id: int, holder: str) -> None:
    """Run a debate's prepare step (``debate_prepare``) in task ``holder`` and, when the
    debate may go on at ``cache: use``, the steps the cache answers in place."""
    began = time.perf_counter()
    debate = debate_prepare(debate_id=debate_id)
    _counted(PREPARE, began, "ok" if debate is not None else "none")
    if debate is not None and debate.cache == CacheMode.USE:
        steps_run_in_place(debate_id=debate_id, holder=holder)


def steps_run_in_place(*, debate_id: int, holder: str) -> None:
    """Run in task ``holder`` the steps of a prepared debate that the cache answers, in
    the plan's order; from the first it does not, send the rest as tasks. A step whose
    debate has moved on (cancelled, or voting early) does nothing, and counts as run."""
    for stage in pending_stages(debate_state(debate_id=debate_id)):
        for step in stage:
            if step.kind not in _SERVICES or not _ran_in_place(debate_id, step.key, holder):
                run_enqueue(debate_id=debate_id)
                return


def _ran_in_place(debate_id: int, key: StepKey, holder: str) -> bool:
    """Run step ``key`` in place from the cache; say whether it ran."""
    try:
        step_run(debate_id=debate_id, key=key, holder=holder, cached_only=True)
    except (NotCached, StepDeferred):
        return False  # its call is not cached, or another copy of it is running
    return True


def _counted(kind: str, began: float, outcome: str) -> None:
    """Count a step of ``kind`` begun at ``began`` in the metrics (``arena.metrics``);
    the time of a step that must run again later is not observed."""
    updates = [metrics.STEPS.inc(step=kind, outcome=outcome)]
    if outcome != "retry":
        updates.append(metrics.STEP_SECONDS.observe(time.perf_counter() - began, step=kind))
    metrics.record(*updates)


def _log(debate_id: int, key: StepKey, began: float, stored: Any = None, **extra: Any) -> None:
    """Write the log line of step ``key`` of a debate (see the module docstring), from
    the turn or ballot it ``stored``, if any."""
    if not logger.isEnabledFor(logging.INFO):
        return
    kind, round_number, speaker = key
    fields: dict[str, Any] = {"debate": debate_id, "step": _LOGGED.get(kind, kind)}
    if round_number is not None:
        fields["round"] = round_number
    if speaker is not None:
        fields["participant"] = speaker
    if extra.get("outcome") is None:
        fields.update(_outcome(kind, stored))
    fields["latency_ms"] = round((time.perf_counter() - began) * 1000)
    fields["task"] = STEP_TASKS[kind][0]
    fields.update({name: value for name, value in extra.items() if value is not None})
    logger.info("step %s", " ".join(f"{name}={value}" for name, value in fields.items()))


_LOGGED = {OPENING: "turn", REBUTTAL: "turn", VOTING: "vote"}


def _outcome(kind: str, stored: Message | Ballot | None) -> dict[str, Any]:
    """Return what a step stored, for its log line: a turn's or a ballot's status, model
    time, attempts and parse status (``none`` when a turn or vote stored nothing)."""
    if kind not in _LOGGED:
        return {"outcome": "ok"}
    if stored is None:
        return {"outcome": "none"}
    return {
        "outcome": stored.status,
        "model_ms": "cached" if stored.cached else stored.latency_ms,
        "attempts": stored.attempts,
        "parse": stored.parse_status,
    }
