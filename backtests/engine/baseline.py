"""The budget-matched baseline: one model, asked the round-1 prompt again and again.

At a step whose debate completed, one seat's model answers that seat's round-1 prompt,
the trader's book added as the debate's votes see it, independently again and again
(``baseline``: ``rotate``, each seat's in turn, step by step; ``P1``, ``P2``...: that
seat's at every step), until its tokens match the tokens the step's debate spent
(``target``). It asks another answer while the tokens still missing exceed half of its
mean answer's (``wants_another``), so its answers end within one answer's tokens of the
target: short of it by at most half a mean answer, past it by less than the last
answer's tokens. It stops after ``MAX_FAILURES`` failed calls or ``MAX_ANSWERS`` answers,
saying so. Each answer is a ballot of the debate's consensus rule: what one model
decides with the debate's tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

from debates.engine.consensus import Ballot
from debates.engine.types import CoinDecision

OFF, ROTATE = "off", "rotate"
MAX_SEATS = 6
SEAT_CHOICES = tuple(f"P{n}" for n in range(1, MAX_SEATS + 1))
MAX_ANSWERS = 64
MAX_FAILURES = 3


def baseline_seat(setting: str, index: int, seats: int) -> int:
    """Return the speak order (from 0) of the seat whose model answers the baseline at
    step ``index`` of a debate of ``seats`` seats, under ``setting`` (not ``off``)."""
    if setting == ROTATE:
        return index % seats
    return int(setting.removeprefix("P")) - 1


def wants_another(target: int, answered: Sequence[int], failures: int) -> bool:
    """Say whether the baseline asks another answer, having had answers of ``answered``
    tokens each and ``failures`` failed calls, towards ``target`` tokens."""
    if failures >= MAX_FAILURES or len(answered) + failures >= MAX_ANSWERS:
        return False
    if not answered:
        return target > 0
    spent = sum(answered)
    return target - spent > spent / len(answered) / 2


def stop_note(target: int, answered: Sequence[int], failures: int) -> str:
    """Return why the baseline stopped short of its target ("" when it matched it)."""
    if failures >= MAX_FAILURES:
        return f"{failures} calls failed; {sum(answered)} of {target} tokens answered"
    if len(answered) + failures >= MAX_ANSWERS:
        return f"{MAX_ANSWERS} calls asked; {sum(answered)} of {target} tokens answered"
    return ""


def answer_ballots(answers: Sequence[Sequence[CoinDecision]]) -> list[Ballot]:
    """Return the ballots of the baseline's ``answers`` (each its per-coin positions), each
    answer a voter (``S1``, ``S2``...) with its first position on each coin."""
    ballots = []
    for number, answer in enumerate(answers, 1):
        first: dict[str, CoinDecision] = {}
        for decision in answer:
            first.setdefault(decision.symbol, decision)
        ballots.extend(Ballot(f"S{number}", decision) for decision in first.values())
    return ballots
