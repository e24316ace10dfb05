"""Selective debate: the level a debate runs at, and when its rounds have settled.

Levels: ``L1`` (light: round 1 only, the openings' positions are the ballots) and ``L2``
(the full debate). A debate asked for ``auto`` is gated after its openings from signals,
each recorded when it fires: high impact (automatic execution on a trader that is not
paper: L2, never lowered), failure (the schedule's previous debate failed: L2), a human
seat (L2), a held position (the trader holds a position on a candidate coin: the votes,
which see the book, decide what to do with it; L2), disagreement (the openings disagree
on the primary coin's direction, or their mean confidence is below ``min_confidence``:
L2); with none of them the debate stops at L1. Past the daily token budget a non-forced
L2 is lowered to L1. A level asked for explicitly is forced and kept. No Django here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

AUTO, L0, L1, L2 = "auto", "L0", "L1", "L2"
LEVELS = (AUTO, L0, L1, L2)
DEFAULT_MIN_CONFIDENCE = 60.0

_DIRECTION = {"open_long": "long", "open_short": "short"}


@dataclass(frozen=True)
class Opening:
    """One seat's opening on the primary coin: its action and confidence, if it answered."""

    action: str | None
    confidence: float | None


@dataclass(frozen=True)
class Gate:
    """The level chosen, why, and whether the budget may not lower it."""

    level: str
    reasons: tuple[str, ...]
    forced: bool


def gate(
    *,
    requested: str,
    openings: Sequence[Opening],
    primary: str,
    high_impact: bool = False,
    failure: str = "",
    human: bool = False,
    min_confidence: float = DEFAULT_MIN_CONFIDENCE,
    over_budget: str = "",
    held: Sequence[str] = (),
) -> Gate:
    """Return the level of a debate whose round-1 ``openings`` are in.

    ``failure`` and ``over_budget`` say what failed or which budget is passed (empty:
    nothing); ``held``, the candidate coins its trader holds a position on.
    """
    if requested in (L1, L2):
        return Gate(requested, (f"{requested} was asked for",), True)
    answered = [opening for opening in openings if opening.action is not None]
    directions = _directions(answered)
    mean = _mean_confidence(answered)
    # Each signal that fires is a reason for the full debate, recorded in this order.
    signals = (
        (high_impact, "high impact: automatic execution on a trader that is not paper"),
        (bool(failure), f"failure: {failure}"),
        (human, "a human seat takes part"),
        (bool(held), f"held: the trader holds {', '.join(held)}; the votes decide against it"),
        (
            len(directions) > 1,
            f"disagreement: the openings differ on {primary} ({', '.join(directions)})",
        ),
        (
            mean < min_confidence,
            f"uncertainty: mean confidence {mean:.0f} below {min_confidence:.0f}",
        ),
    )
    reasons = tuple(reason for fired, reason in signals if fired)
    if not reasons:
        return Gate(L1, (f"the openings agree on {primary} at mean confidence {mean:.0f}",), False)
    if over_budget and not high_impact:  # high impact is never lowered
        return Gate(L1, (*reasons, f"budget: {over_budget}, lowered to L1"), False)
    return Gate(L2, reasons, high_impact)


def _directions(openings: Sequence[Opening]) -> list[str]:
    """Return the directions the openings take, sorted: long, short, or flat for an
    action that opens nothing."""
    return sorted({_DIRECTION.get(opening.action or "", "flat") for opening in openings})


def _mean_confidence(openings: Sequence[Opening]) -> float:
    """Return the openings' mean confidence, 0 when none gave one."""
    confidences = [o.confidence for o in openings if o.confidence is not None]
    return sum(confidences) / len(confidences) if confidences else 0.0


def settled(
    previous: Mapping[int, Mapping[str, str]], current: Mapping[int, Mapping[str, str]]
) -> bool:
    """Say whether no participant changed any per-coin action from one round to the next.

    Each maps a seat to its actions by coin; a seat missing from either round (its turn
    failed) changes nothing, and at least one seat must be in both.
    """
    both = set(previous) & set(current)
    return bool(both) and all(previous[seat] == current[seat] for seat in both)
