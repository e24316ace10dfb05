"""How a simulated debater gives way to the others: the one place where its answer depends
on what the others said and how sure they were.

From round 2 on, and in its vote, a simulated participant reads every participant's
latest position on each coin (``ModelRequest.positions``). When a confident majority of
the others stands on another side than its own reading (long, short, or out of the
market): more than half of the others' confidence, the consensus rule's weights, from
participants whose average confidence is at least ``MIN_CONFIDENCE``, it may move. The
chance grows with that share and with their confidence, and shrinks with its own; the
draw comes from a generator seeded by the debate's seat (``ModelRequest.seed``), the turn
and the coin, so the same debate always moves the same way. A participant whose own
latest position already sides with that majority (it moved in an earlier turn) keeps to
it.

It moves to the most confident action of the heaviest side against it when its
personality may take that side, otherwise (a bull facing shorts) out of the market, to
``wait``, with less confidence and a smaller position than before. The contrarian never
gives way: going against the majority is its part.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from debates.providers.base import ModelRequest, Position

MIN_CONFIDENCE = 60
"""The others' average confidence from which a participant may give way to them."""
MAX_CHANCE = 0.9
"""The highest chance of giving way in one turn: a participant always may hold out."""
_SIDES = {"open_long": "long", "close_short": "long", "open_short": "short", "close_long": "short"}
_STEADFAST = frozenset({"contrarian"})


@dataclass(frozen=True)
class Leaning:
    """What a personality may do when it gives way: the sides it may take, its usual
    leverage and its smallest position."""

    personality: str
    may_long: bool
    may_short: bool
    leverage: int
    smallest: float


def side(action: str) -> str:
    """Return the side an action takes: ``long``, ``short`` or ``out`` (hold, wait)."""
    return _SIDES.get(action, "out")


def give_way(
    request: ModelRequest, leaning: Leaning, decision: dict[str, Any]
) -> tuple[dict[str, Any], str] | None:
    """Return ``decision`` moved towards a confident majority of the others and the
    sentence saying so, or None when the participant holds its position."""
    if leaning.personality in _STEADFAST:
        return None
    symbol, action = decision["symbol"], decision["action"]
    positions = request.positions.get(symbol, ())
    others = [p for p in positions if p.participant != request.participant]
    against = [p for p in others if side(p.action) != side(action)]
    weight = sum(p.confidence for p in others)
    share = sum(p.confidence for p in against) / weight if weight > 0 else 0.0
    if share <= 0.5:
        return None
    mean = sum(p.confidence for p in against) / len(against)
    target = _target(against, leaning)
    if mean < MIN_CONFIDENCE or side(target) == side(action):
        return None
    own = next((p for p in positions if p.participant == request.participant), None)
    conceded = own is not None and side(own.action) == side(target)
    if not conceded and _draw(request, symbol) >= _chance(share, mean, decision):
        return None
    return _moved(decision, target, mean, leaning), _sentence(against, action, target, conceded)


def _target(against: Sequence[Position], leaning: Leaning) -> str:
    """Return the action a participant gives way to: the most confident action of the
    heaviest side against it, if its personality may take that side, else ``wait``."""
    by_side: dict[str, list[Position]] = {}
    for position in against:
        by_side.setdefault(side(position.action), []).append(position)
    heaviest, held = max(
        by_side.items(), key=lambda item: (sum(p.confidence for p in item[1]), item[0])
    )
    allowed = {"long": leaning.may_long, "short": leaning.may_short, "out": True}
    if not allowed[heaviest]:
        return "wait"
    return max(held, key=lambda p: (p.confidence, p.action)).action


def _chance(share: float, mean: float, decision: dict[str, Any]) -> float:
    """Return the chance of giving way: the others' share against it times how sure
    they are, less for a participant sure of itself."""
    pull = min(1.0, (mean - 50) / 40)
    conviction = min(1.0, max(0.0, (decision["confidence"] - 50) / 40))
    return min(MAX_CHANCE, share * pull * (1 - 0.5 * conviction))


def _draw(request: ModelRequest, symbol: str) -> float:
    """Return the turn's draw for ``symbol``: the debate's seat, the turn and the coin."""
    seed = f"{request.seed}:{request.kind}:{request.round}:{symbol}"
    return random.Random(seed).random()


def _moved(decision: dict[str, Any], target: str, mean: float, leaning: Leaning) -> dict[str, Any]:
    """Return ``decision`` moved to ``target``: less sure, smaller, at lower leverage."""
    confidence = max(50, round((decision["confidence"] + mean) / 2) - 10)
    opening = side(target) != "out"
    return {
        **decision,
        "action": target,
        "confidence": confidence,
        "leverage": max(1, leaning.leverage // 2) if opening else 1,
        "position_pct": leaning.smallest,
    }


def _sentence(against: Sequence[Position], action: str, target: str, conceded: bool) -> str:
    """Return the sentence that explains the move, naming who stood against."""
    named = ", ".join(f"{p.participant} {p.action} {p.confidence:.0f}" for p in against)
    if conceded:
        return f"I keep to {target}, as last turn: {named} still stand against {action}."
    return f"{named} stand against {action} and they convince me: I move to {target}."
