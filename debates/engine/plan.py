"""The plan of a debate: its steps in order, and where the debate stands among them.

A plan is computed from a debate's settings (rounds, seats, automatic execution, ...)
and what is stored of its run; nothing here reads a database. Each step has a kind, a
round and a speaker where they apply, and a status derived from the stored rows.

Steps are grouped in *stages*: the steps of one stage do not depend on each other and
may run at the same time (the round-1 openings, the votes); a stage starts once every
step of the stages before it is finished. The Celery canvas of a run is built from the
stages (``debates.services.runs``), and so is the status of every step not stored yet.

The kinds are registered in ``STEP_KINDS``, in three parts: the head of the plan, each
round (built once per round), and the tail. Another kind is added with
``register_step_kind``, placed after a kind already registered in its part, so a judge
summarising each round or scoring the debaters adds its steps without the builder
knowing of it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from debates.engine.types import plain_dict

PREPARE = "prepare"
OPENING = "opening"
REBUTTAL = "rebuttal"
VOTING = "voting"
CONSENSUS = "consensus"
EXECUTION = "execution"

PENDING = "pending"
RUNNING = "running"
WAITING = "waiting"
DONE = "done"
FAILED = "failed"
SKIPPED = "skipped"
STEP_STATUSES = (PENDING, RUNNING, WAITING, DONE, FAILED, SKIPPED)
FINISHED = frozenset({DONE, FAILED, SKIPPED})
LIVE = frozenset({RUNNING, WAITING})

MODEL_SEAT = "model"

# The debate statuses the plan reads (``debates.models.DebateStatus``, by value).
_ACTIVE = frozenset({"running", "voting"})
# Where a step not stored yet may run: an active debate, or a completed one's execution.
_RUNNABLE = _ACTIVE | {"completed"}

StepKey = tuple[str, "int | None", "int | None"]
Part = Literal["head", "round", "tail"]


@dataclass(frozen=True)
class Seat:
    """A participant as the plan sees it: its id, and who takes its turns."""

    id: int
    kind: str = MODEL_SEAT


@dataclass(frozen=True)
class PlanSettings:
    """What decides the steps of a debate; ``options`` carries settings of added kinds."""

    max_rounds: int
    seats: tuple[Seat, ...]
    auto_execute: bool = False
    options: Mapping[str, Any] = field(default_factory=dict)

    def seat(self, seat_id: int | None) -> Seat | None:
        return next((seat for seat in self.seats if seat.id == seat_id), None)


@dataclass(frozen=True)
class StepSpec:
    """A step before it has a place and a status."""

    kind: str
    round: int | None = None
    speaker: int | None = None

    @property
    def key(self) -> StepKey:
        return (self.kind, self.round, self.speaker)


# A kind's builder returns its stages: each a list of steps that may run at once.
# Round kinds are given the round number, head and tail kinds None.
Builder = Callable[[PlanSettings, "int | None"], list[list[StepSpec]]]


@dataclass(frozen=True)
class StepKind:
    name: str
    part: Part
    build: Builder


STEP_KINDS: dict[Part, list[StepKind]] = {"head": [], "round": [], "tail": []}


def register_step_kind(name: str, *, part: Part, build: Builder, after: str | None = None) -> None:
    """Add kind ``name`` to the plan, in ``part``, after kind ``after`` (else last).

    Registering a kind again replaces it in place.
    """
    kinds = STEP_KINDS[part]
    kind = StepKind(name, part, build)
    for index, known in enumerate(kinds):
        if known.name == name:
            kinds[index] = kind
            return
    if after is None:
        kinds.append(kind)
        return
    position = next(i for i, known in enumerate(kinds) if known.name == after)
    kinds.insert(position + 1, kind)


def _prepare(settings: PlanSettings, round_number: int | None) -> list[list[StepSpec]]:
    return [[StepSpec(PREPARE)]]


def _turns(settings: PlanSettings, round_number: int | None) -> list[list[StepSpec]]:
    if round_number == 1:  # the openings are written independently, at the same time
        return [[StepSpec(OPENING, 1, seat.id) for seat in settings.seats]]
    return [[StepSpec(REBUTTAL, round_number, seat.id)] for seat in settings.seats]


def _votes(settings: PlanSettings, round_number: int | None) -> list[list[StepSpec]]:
    return [[StepSpec(VOTING, None, seat.id) for seat in settings.seats]]


def _consensus(settings: PlanSettings, round_number: int | None) -> list[list[StepSpec]]:
    return [[StepSpec(CONSENSUS)]]


def _execution(settings: PlanSettings, round_number: int | None) -> list[list[StepSpec]]:
    return [[StepSpec(EXECUTION)]] if settings.auto_execute else []


register_step_kind(PREPARE, part="head", build=_prepare)
register_step_kind(OPENING, part="round", build=_turns)
register_step_kind(VOTING, part="tail", build=_votes)
register_step_kind(CONSENSUS, part="tail", build=_consensus)
register_step_kind(EXECUTION, part="tail", build=_execution)


@dataclass(frozen=True)
class Step:
    """One step of a plan: ``{index, kind, round, speaker, status}`` and its stage."""

    index: int
    kind: str
    round: int | None
    speaker: int | None
    status: str
    stage: int

    @property
    def key(self) -> StepKey:
        return (self.kind, self.round, self.speaker)

    def to_dict(self) -> dict[str, Any]:
        """Return the step as the API shows it (its stage is the plan's business)."""
        return plain_dict(self, leave_out={"stage"})


@dataclass(frozen=True)
class Progress:
    """What is stored of a run: the debate's status, each recorded step's status
    (done, failed, skipped, or waiting for a person), and how many steps are released
    to run (None: all of them; a manual pace releases one at a time)."""

    debate_status: str
    records: Mapping[StepKey, str]
    released: int | None = None


@dataclass(frozen=True)
class Plan:
    steps: tuple[Step, ...]
    current_step: int | None
    can_advance: bool
    user_action_required: bool
    released: int | None = None  # how many steps may run (None: all of them)

    def step(self, index: int | None) -> Step | None:
        return self.steps[index] if index is not None and 0 <= index < len(self.steps) else None

    def next_unrecorded(self, start: int) -> Step | None:
        """Return the first step from index ``start`` on that has not run yet."""
        return next(
            (s for s in self.steps[start:] if s.status not in FINISHED and s.status != WAITING),
            None,
        )


def plan_specs(settings: PlanSettings) -> list[list[StepSpec]]:
    """Return the stages of a debate with ``settings``, in order."""
    stages: list[list[StepSpec]] = []
    for kind in STEP_KINDS["head"]:
        stages += kind.build(settings, None)
    for round_number in range(1, settings.max_rounds + 1):
        for kind in STEP_KINDS["round"]:
            stages += kind.build(settings, round_number)
    for kind in STEP_KINDS["tail"]:
        stages += kind.build(settings, None)
    return [stage for stage in stages if stage]


def step_index(settings: PlanSettings, key: StepKey) -> int | None:
    """Return the index of step ``key`` in the plan of a debate with ``settings``."""
    specs = (spec for stage in plan_specs(settings) for spec in stage)
    return next((index for index, spec in enumerate(specs) if spec.key == key), None)


def build_plan(settings: PlanSettings, progress: Progress) -> Plan:
    """Return the plan of a debate with ``settings`` whose run has ``progress``."""
    status = progress.debate_status
    released = progress.released
    steps: list[Step] = []
    earlier_finished = True  # every step of the stages before this one is finished
    for stage_number, stage in enumerate(plan_specs(settings)):
        stage_finished = True
        for spec in stage:
            index = len(steps)
            state = progress.records.get(spec.key)
            if state is None:
                state = _unrecorded(settings, spec, status, index, released, earlier_finished)
            if state not in FINISHED:
                stage_finished = False
            steps.append(Step(index, spec.kind, spec.round, spec.speaker, state, stage_number))
        earlier_finished = earlier_finished and stage_finished
    plan_steps = tuple(steps)
    waiting = any(step.status == WAITING for step in plan_steps)
    return Plan(
        steps=plan_steps,
        current_step=_current(plan_steps, status),
        can_advance=_can_advance(plan_steps, status, released, waiting),
        user_action_required=waiting,
        released=released,
    )


def stages_to_run(plan: Plan, people: Collection[int] = ()) -> list[list[Step]]:
    """Return what runs next: the stages of ``plan`` still to run, in order, each as its
    steps released and not finished, up to the first stage holding a step of one of
    ``people`` (the seats a person holds: no task runs their turn or vote, and the
    service recording it asks again for what runs next).

    Every start, retry, advance and resume, a person's step recorded and the watchdog
    send what this returns, so a stored step is never asked again.
    """
    released = plan.steps if plan.released is None else plan.steps[: plan.released]
    stages: list[list[Step]] = []
    for _, stage in itertools.groupby(released, key=lambda step: step.stage):
        unfinished = [step for step in stage if step.status not in FINISHED]
        runnable = [step for step in unfinished if step.speaker not in people]
        if runnable:
            stages.append(runnable)
        if len(runnable) < len(unfinished):
            break  # a person's step: the rest is sent once it is recorded
    return stages


def _unrecorded(
    settings: PlanSettings,
    spec: StepSpec,
    status: str,
    index: int,
    released: int | None,
    ready: bool,
) -> str:
    """Return the status of a step nothing is stored of."""
    if status == "cancelled" or (status == "completed" and spec.kind != EXECUTION):
        return SKIPPED
    held = released is not None and index >= released
    if status not in _RUNNABLE or not ready or held:
        return PENDING
    seat = settings.seat(spec.speaker)
    if seat is not None and seat.kind != MODEL_SEAT:
        return WAITING  # a person's turn or vote: no task runs it, the person writes it
    return RUNNING


def _current(steps: tuple[Step, ...], status: str) -> int | None:
    """Return the index of the step the debate is at.

    A failed debate is at the step that failed it (see ``_failing``). Otherwise the
    debate is at its first live step, or else at its first pending one; a debate with
    every step finished is at none.
    """
    failing = _failing(steps) if status == "failed" else None
    if failing is not None:
        return failing
    for wanted in (LIVE, frozenset({PENDING})):
        found = next((step for step in steps if step.status in wanted), None)
        if found is not None:
            return found.index
    return None


def _failing(steps: tuple[Step, ...]) -> int | None:
    """Return the index of the step that failed a debate: the first failed step of the
    round of the last step that ran (a round fails when all its turns do), else that
    last step if it failed."""
    ran = [step for step in steps if step.status in (DONE, FAILED)]
    if not ran:
        return None
    last = ran[-1]
    failed = [step for step in ran if step.status == FAILED and step.round == last.round]
    if last.round is not None and failed:
        return failed[0].index
    return last.index if last.status == FAILED else None


def _can_advance(steps: tuple[Step, ...], status: str, released: int | None, waiting: bool) -> bool:
    """Say whether the debate is held before its next step, waiting for ``advance``."""
    if released is None or waiting:
        return False
    if status not in _ACTIVE and status != "completed":
        return False
    if any(step.status not in FINISHED for step in steps[:released]):
        return False
    following = steps[released:]
    return any(step.status == PENDING for step in following)
