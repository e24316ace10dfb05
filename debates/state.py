"""The debate state machine: which transitions exist, and which actions apply now.

Transitions are applied as compare-and-set updates by ``debates.services.transitions``;
this module states the rules and reads a debate's plan of steps, so that services, the
API, the live events and the admin compute what a client may do in one place.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from debates.engine import machine
from debates.engine.judge import JUDGE_OPTION
from debates.engine.plan import (
    CONSENSUS,
    DONE,
    FAILED,
    MODEL_SEAT,
    OPENING,
    PREPARE,
    REBUTTAL,
    SKIPPED,
    VOTING,
    Plan,
    PlanSettings,
    Progress,
    Seat,
    Step,
    StepKey,
    build_plan,
    step_index,
)
from debates.engine.types import EXECUTABLE_ACTIONS
from debates.models import (
    ACTIVE_STATUSES,
    TERMINAL_STATUSES,
    Debate,
    DebateStatus,
    Participant,
    StepStatus,
)

# The columns of a debate's state: all that a ``status`` event and ``available_actions``
# read of a debate (besides its stored steps and decisions), its replayed instant, the
# task it names to tell its caller it ended or awaits its book, whether it does, and its
# model-call cache mode, which decides how its run is sent
# (``debates.services.runs.run_plan``).
STATE_COLUMNS = (
    "status",
    "phase",
    "current_round",
    "current_speaker",
    "level_used",
    "error",
    "max_rounds",
    "auto_execute",
    "pace",
    "steps_released",
    "step_outcomes",
    "judge_model",
    "human_due_at",
    "human_turn_timeout_minutes",
    "as_of",
    "cache",
    "caller_task",
    "awaits_book",
)

# The statuses each action may start from; ``available_actions`` adds the conditions on
# the plan (a held step for ``advance``, a failed one for ``retry_step``, ...).
ACTION_SOURCES: dict[str, tuple[str, ...]] = {
    "start": (DebateStatus.PENDING,),
    "advance": (*ACTIVE_STATUSES, DebateStatus.COMPLETED),
    "retry_step": (DebateStatus.FAILED, *ACTIVE_STATUSES),
    "submit_turn": ACTIVE_STATUSES,
    "skip_turn": ACTIVE_STATUSES,
    "cancel": (DebateStatus.PENDING, *ACTIVE_STATUSES),
    "retry": (DebateStatus.FAILED,),
    "execute": (DebateStatus.COMPLETED,),
    "delete": (DebateStatus.PENDING, *TERMINAL_STATUSES),
}

# A stored step's status (``debates.models.StepStatus``) as a status of the plan.
_RECORDED = {StepStatus.OK: DONE, StepStatus.ERROR: FAILED}


def outcome_name(key: StepKey) -> str:
    """Return the name a step's outcome is stored under in ``Debate.step_outcomes``:
    its kind (``execution``), with its round and speaker where it has them
    (``judge_round:2:``)."""
    kind, round_number, speaker = key
    if round_number is None and speaker is None:
        return kind
    return ":".join(("" if part is None else str(part)) for part in key)


def step_outcome(debate: Debate, key: StepKey) -> dict | None:
    """Return the stored outcome of step ``key`` of ``debate`` ({status, ...}), if any."""
    return (debate.step_outcomes or {}).get(outcome_name(key))


def _outcome_key(name: str) -> StepKey:
    kind, round_number, speaker = ([*name.split(":"), "", ""])[:3]
    return (kind, int(round_number) if round_number else None, int(speaker) if speaker else None)


def plan_settings(debate: Debate, seats: Iterable[Participant] | None = None) -> PlanSettings:
    """Return what decides the steps of ``debate``; its ``seats`` are read from it unless
    given, in speaking order."""
    seats = debate.participants.all() if seats is None else seats
    return PlanSettings(
        max_rounds=debate.max_rounds,
        seats=tuple(Seat(seat.pk, getattr(seat, "kind", MODEL_SEAT)) for seat in seats),
        auto_execute=debate.auto_execute,
        options={JUDGE_OPTION: debate.judge_model_id is not None},
    )


def step_records(
    debate: Debate,
    turns: Iterable[tuple[int, int, str]],
    ballots: Iterable[tuple[int, str]],
) -> dict[StepKey, str]:
    """Return the status of every step of ``debate`` that something stored records, from
    its turns as (round, participant id, status) and ballots as (participant id, status)."""
    records: dict[StepKey, str] = {}
    for round_number, speaker, status in turns:
        kind = OPENING if round_number == 1 else REBUTTAL
        records[(kind, round_number, speaker)] = _RECORDED.get(status, SKIPPED)
    for voter, status in ballots:
        records[(VOTING, None, voter)] = _RECORDED.get(status, SKIPPED)
    if debate.status == DebateStatus.COMPLETED:
        records[(CONSENSUS, None, None)] = DONE  # only the consensus completes a debate
    for name, outcome in (debate.step_outcomes or {}).items():
        records[_outcome_key(name)] = outcome["status"] if isinstance(outcome, dict) else outcome
    if (PREPARE, None, None) not in records and len(records) > 0:
        records[(PREPARE, None, None)] = DONE  # a debate stored before prepare was a step
    return records


def step_released(debate: Debate, key: StepKey, seats: Iterable[Participant] | None = None) -> bool:
    """Say whether step ``key`` of ``debate`` is released to run: every step is, unless
    the debate is held before it (``steps_released``). A step sent before the debate
    was held (what a failure left queued of the canvas, before a retried step) must
    not run; its ``seats`` are read from the debate unless given, and only when held.
    """
    if debate.steps_released is None:
        return True
    index = step_index(plan_settings(debate, seats), key)
    return index is not None and index < debate.steps_released


def plan_of(
    debate: Debate,
    *,
    seats: Iterable[Participant],
    turns: Iterable[tuple[int, int, str]],
    ballots: Iterable[tuple[int, str]] = (),
) -> Plan:
    """Return the plan of ``debate`` from what a step holds already: its seats, its
    turns as (round, participant id, status) and ballots as (participant id, status)."""
    progress = Progress(
        debate_status=debate.status,
        records=step_records(debate, turns, ballots),
        released=debate.steps_released,
    )
    return build_plan(plan_settings(debate, seats), progress)


def debate_plan(debate: Debate) -> Plan:
    """Return the plan of steps of ``debate`` with the status of each.

    Reads its seats, turns and ballots through the related managers: prefetched by the
    detail and list selectors, read by a query each otherwise.
    """
    return plan_of(
        debate,
        seats=debate.participants.all(),
        turns=[(t.round, t.participant_id, t.status) for t in debate.messages.all()],
        ballots=[(b.participant_id, b.status) for b in debate.ballots.all()],
    )


def can_advance(debate: Debate, plan: Plan) -> bool:
    """Say whether ``advance`` may release the next steps of ``debate``: it is held
    before them, and not for a book its caller gives (``awaits_book``)."""
    return plan.can_advance and not debate.awaits_book


def retry_step_target(debate: Debate, plan: Plan) -> Step | None:
    """Return the step ``retry_step`` would run again (``machine.retry_step_target``)."""
    return machine.retry_step_target(debate.status, plan)


class DecisionFacts(NamedTuple):
    """What the actions of a debate read of one of its decisions."""

    action: str
    executed: bool


def decision_facts(debate: Debate) -> list[DecisionFacts]:
    """Return the facts of ``debate``'s decisions (prefetched by the detail and list
    selectors, read by a query otherwise)."""
    return [
        DecisionFacts(decision.action, hasattr(decision, "execution"))
        for decision in debate.decisions.all()
    ]


def available_actions(
    debate: Debate, plan: Plan | None = None, decisions: Iterable[DecisionFacts] | None = None
) -> list[str]:
    """Return the actions a client may take now, in a stable order.

    ``advance`` is offered when the debate is held before its next step (not when its
    votes await the book its caller gives); ``retry_step``
    when it has a failed step to run again (``retry_step_target``); ``submit_turn`` and
    ``skip_turn`` while a step waits for a person; ``execute`` when the debate is
    completed and one of its decisions is executable and not executed yet (its
    ``decisions`` as a step holds them, else read from the debate).
    """
    if plan is None:
        plan = debate_plan(debate)
    conditions = {
        "advance": lambda: can_advance(debate, plan),
        "retry_step": lambda: retry_step_target(debate, plan) is not None,
        "submit_turn": lambda: plan.user_action_required,
        "skip_turn": lambda: plan.user_action_required,
        "execute": lambda: any(
            fact.action in EXECUTABLE_ACTIONS and not fact.executed
            for fact in (decision_facts(debate) if decisions is None else decisions)
        ),
    }
    return [
        name
        for name, sources in ACTION_SOURCES.items()
        if debate.status in sources and conditions.get(name, lambda: True)()
    ]
