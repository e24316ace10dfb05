"""One log line per debate step a worker runs, at INFO, as ``key=value`` pairs.

Connected to Celery's task signals (``DebatesConfig.ready``), so the steps themselves
stay free of logging: each turn, vote and consensus task ends with a line such as

    step debate=12 step=turn round=2 participant=31 outcome=ok model_ms=1840 attempts=1
    parse=ok latency_ms=1903 task=debates.turn_run

A step a task ran in place of its own (``debates.services.cached``: a debate whose
answers the model-call cache holds) writes the same line, with ``in_task`` the id of
the task that ran it.

``outcome`` is what was stored (``ok``, ``error`` for a failed model call, ``none`` when
nothing was: a cancelled debate, a step another worker holds) or, for a task that raised,
Celery's state (``retry``, ``failure``). The line never holds a prompt, an answer or a key.
Below INFO (``LOG_LEVEL=WARNING``) no line is written, and what a step stored is not
read back for one.
"""

from __future__ import annotations

import inspect
import logging
import time
from typing import Any

from celery import current_app
from celery.signals import task_postrun, task_prerun

logger = logging.getLogger("debates.step_log")

STEPS = {
    "debates.turn_run": "turn",
    "debates.vote_run": "vote",
    "debates.consensus_finalize": "consensus",
}
_started: dict[str, float] = {}


@task_prerun.connect
def _step_started(task_id: str = "", task: Any = None, **_: Any) -> None:
    if task is not None and task.name in STEPS:
        _started[task_id] = time.perf_counter()


@task_postrun.connect
def _step_ended(
    task_id: str = "",
    task: Any = None,
    args: tuple = (),
    kwargs: dict | None = None,
    state: str | None = None,
    **_: Any,
) -> None:
    began = _started.pop(task_id, None)
    if task is not None and task.name in STEPS:
        _write(task, args, kwargs or {}, state, began)


def step_ran_in_place(name: str, args: tuple, *, began: float, holder: Any) -> None:
    """Write the line of a step that task ``holder`` ran in place (a step the model-call
    cache answered, ``debates.services.cached``): the line its own task ``name`` would
    have written with ``args``, and ``in_task`` the task that ran it."""
    task = current_app.tasks.get(name) if name in STEPS else None
    if task is not None:
        _write(task, args, {}, "SUCCESS", began, in_task=holder)


def _write(
    task: Any,
    args: tuple,
    kwargs: dict,
    state: str | None,
    began: float | None,
    **extra: Any,
) -> None:
    if not logger.isEnabledFor(logging.INFO):
        return  # no line is written: nothing is read for it (a query a step)
    try:
        fields = step_fields(task, args, kwargs, state)
    except Exception:  # a log line never fails a step
        logger.debug("no step line for %s %s", task.name, args, exc_info=True)
        return
    if began is not None:
        fields["latency_ms"] = round((time.perf_counter() - began) * 1000)
    fields["task"] = task.name
    fields.update(extra)
    logger.info("step %s", " ".join(f"{key}={value}" for key, value in fields.items()))


def step_fields(task: Any, args: tuple, kwargs: dict, state: str | None) -> dict[str, Any]:
    """Return the fields of a step's line: its debate, kind, round and participant, and
    what it stored."""
    from debates.models import Ballot, Message

    given = inspect.signature(task.run).bind_partial(*args, **kwargs).arguments
    fields: dict[str, Any] = {"debate": given.get("debate_id"), "step": STEPS[task.name]}
    if "round_number" in given:
        fields["round"] = given["round_number"]
    if "participant_id" in given:
        fields["participant"] = given["participant_id"]
    if state not in (None, "SUCCESS"):
        fields["outcome"] = state.lower()
        return fields
    stored = None
    if fields["step"] == "turn":
        stored = Message.objects.filter(
            debate_id=fields["debate"],
            round=fields["round"],
            participant_id=fields["participant"],
        )
    elif fields["step"] == "vote":
        stored = Ballot.objects.filter(
            debate_id=fields["debate"], participant_id=fields["participant"]
        )
    if stored is None:
        fields["outcome"] = "ok"
        return fields
    row = stored.values("status", "latency_ms", "attempts", "parse_status", "cached").first()
    if row is None:
        fields["outcome"] = "none"
        return fields
    fields.update(
        outcome=row["status"],
        model_ms="cached" if row["cached"] else row["latency_ms"],
        attempts=row["attempts"],
        parse=row["parse_status"],
    )
    return fields
