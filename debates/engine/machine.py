"""The debate state machine: where a debate goes next, decided from its facts.

A debate's state is its status, its phase, its current round and who speaks next. It
changes when a turn is stored (the next speaker, the next round, the votes, or a
failure by the rules of SPEC 5.2), when a failed debate is taken back (``retry``), and
by the actions a client takes, each allowed from the statuses of ``ACTION_SOURCES``.
Nothing here reads or writes a database: ``debates.services.transitions`` writes what
these functions decide, as compare-and-set updates.
"""

from __future__ import annotations

from dataclasses import dataclass

from debates.engine.plan import FAILED as STEP_FAILED
from debates.engine.plan import OPENING, REBUTTAL, VOTING, Plan, Step

PENDING, RUNNING, VOTING_STATUS = "pending", "running", "voting"
COMPLETED, CANCELLED, FAILED = "completed", "cancelled", "failed"
ACTIVE = (RUNNING, VOTING_STATUS)
TERMINAL = (COMPLETED, CANCELLED, FAILED)

# The statuses each action may start from; ``debates.state.available_actions`` adds the
# conditions on the plan (a held step for ``advance``, a failed one for ``retry_step``).
ACTION_SOURCES: dict[str, tuple[str, ...]] = {
    "start": (PENDING,),
    "advance": (*ACTIVE, COMPLETED),
    "retry_step": (FAILED, *ACTIVE),
    "submit_turn": ACTIVE,
    "skip_turn": ACTIVE,
    "cancel": (PENDING, *ACTIVE),
    "retry": (FAILED,),
    "execute": (COMPLETED,),
    "delete": (PENDING, *TERMINAL),
}

# A stored turn's status (``debates.models.StepStatus``) when the model answered.
ANSWERED = "ok"

Turn = tuple[int, int, str]  # (round, participant id, status) of a stored turn


@dataclass(frozen=True)
class Failure:
    """Why a debate fails: the step that failed it, a code and a message."""

    step: str
    code: str
    message: str


@dataclass(frozen=True)
class Rounds:
    """The facts the state after a turn is decided from: the debate's status and current
    round, its rounds, its seats in speaking order and every stored turn."""

    status: str
    current_round: int
    max_rounds: int
    seats: tuple[int, ...]
    turns: tuple[Turn, ...]

    def said(self, round_number: int) -> dict[int, str]:
        """Return who has spoken in ``round_number``, with their turn's status."""
        return {seat: status for r, seat, status in self.turns if r == round_number}


@dataclass(frozen=True)
class State:
    """Where a debate is: its status, phase, current round and next speaker; with the
    failure that ended it, and the round that ended and began on the way there."""

    status: str
    phase: str
    current_round: int
    current_speaker: int | None = None
    failure: Failure | None = None
    round_ended: int | None = None
    round_started: int | None = None


def round_closes(facts: Rounds, round_number: int) -> bool:
    """Say whether a turn of ``round_number`` just stored ends the debate's current
    round: every seat has spoken in it."""
    return facts.current_round == round_number and len(facts.said(round_number)) == len(facts.seats)


def may_stop_early(facts: Rounds, round_number: int) -> bool:
    """Say whether a turn of ``round_number`` just stored closes a round after which the
    rounds may end early (the gate after the openings, the early stop after a later
    round): the round closes with a turn answered, before the last round."""
    return (
        round_closes(facts, round_number)
        and ANSWERED in facts.said(round_number).values()
        and round_number < facts.max_rounds
    )


def after_turn(facts: Rounds, round_number: int, *, votes_now: bool = False) -> State:
    """Return where a running debate is once a turn of ``round_number`` is stored.

    When the turn ends the round: a round whose every turn failed fails the debate;
    otherwise the next round opens, or the votes begin after the last round or earlier
    when ``votes_now`` (the gate kept the debate light, or the positions settled), unless
    fewer than two participants ever answered, which fails it. Rounds 2..N are spoken in
    order, so the next speaker is known the moment a turn is stored.
    """
    current = facts.current_round
    phase = OPENING if current == 1 else REBUTTAL
    if not round_closes(facts, round_number):
        return State(RUNNING, phase, current, _next_speaker(facts, current))
    ended = {"round_ended": round_number}
    if ANSWERED not in facts.said(round_number).values():
        failure = Failure(
            f"round {round_number}", "round_failed", f"Every turn of round {round_number} failed."
        )
        return State(FAILED, phase, current, None, failure, **ended)
    if round_number < facts.max_rounds and not votes_now:
        following = round_number + 1
        speaker = _next_speaker(facts, following)
        return State(RUNNING, REBUTTAL, following, speaker, round_started=following, **ended)
    answered = len({seat for _, seat, status in facts.turns if status == ANSWERED})
    if answered < 2:
        failure = Failure(
            "rounds",
            "not_enough_participants",
            f"Only {answered} participant(s) ever answered; a debate needs 2.",
        )
        return State(FAILED, phase, current, None, failure, **ended)
    return State(VOTING_STATUS, VOTING, current, None, **ended)


def _next_speaker(facts: Rounds, round_number: int) -> int | None:
    """Return who speaks next in ``round_number``: none in round 1 (the openings are
    written side by side), else the first seat in speaking order yet to speak."""
    if round_number < 2:
        return None
    said = facts.said(round_number)
    return next((seat for seat in facts.seats if seat not in said), None)


def retry_status(phase: str) -> str:
    """Return the status a failed debate goes back to on ``retry``: voting when it
    failed in its votes or consensus, else running."""
    return VOTING_STATUS if phase in (VOTING, "consensus") else RUNNING


def retry_step_status(status: str, step_kind: str) -> str:
    """Return the status a debate goes to when its failed step of ``step_kind`` runs
    again: a failed debate goes back to the votes for a vote, else to the rounds; an
    active one stays as it is."""
    if status != FAILED:
        return status
    return VOTING_STATUS if step_kind == VOTING else RUNNING


# The kinds of a held debate's failed step that may run again, by the debate's status:
# a turn while the rounds go on, a vote while voting.
_RETRIED_WHILE = {RUNNING: (OPENING, REBUTTAL), VOTING_STATUS: (VOTING,)}


def retry_step_target(status: str, plan: Plan) -> Step | None:
    """Return the step ``retry_step`` would run again in a debate of ``status`` with
    ``plan``, or None when it does not apply.

    A failed debate retries the step that failed it. A held debate (manual pace, or
    after a retried step) retries the step it stopped after when that step failed and
    can still be asked.
    """
    if status == FAILED:
        step = plan.step(plan.current_step)
        return step if step is not None and step.status == STEP_FAILED else None
    if not plan.can_advance:
        return None
    step = plan.step((plan.released or 0) - 1)
    if step is None or step.status != STEP_FAILED:
        return None
    return step if step.kind in _RETRIED_WHILE.get(status, ()) else None
