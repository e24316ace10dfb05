"""Confidence-weighted consensus of the final votes, coin by coin (SPEC 5.5).

For each candidate coin, over the ballots on that coin only: every ballot adds
``confidence / 100`` to the score of its action and the highest score wins. Ties go to the
more cautious action (wait > hold > close_long = close_short > open_long = open_short); a
tie between the two directions of the same kind is no consensus and gives ``wait`` with
confidence 0. The winner's confidence, leverage, position size, stop loss and take profit
are means over its supporters (over the values they supplied).

Choices the spec leaves open:

- Arithmetic is exact (fractions built from each float's shortest decimal form), so the
  result does not depend on the order of the ballots. Outputs are rounded at the end:
  confidence to 2 decimals, scores and fractions to 6.
- Leverage is the mean rounded to the nearest integer with exact halves going down, the
  cautious side (mean of 10 and 8 = 9; of 9 and 8 = 8), then clamped to 1..20 and to the
  strategy's cap for the coin.
- For an opening action with no value supplied, leverage defaults to 1 and position_pct
  to 0.1 (the cautious minimums), stop loss to 0.03 and take profit to 0.06; defaulted
  fields are listed in ``defaults``. Other actions keep ``None`` for unsupplied values.
- A ballot's confidence outside 0..100 is clamped before it weighs anything; every clamp
  is recorded.
- Below the strategy's minimum confidence, and on no consensus, the decision is ``wait``
  with confidence 0 and no sizing, the reason saying why.
- An abstention is simply not a ballot; ballots on coins that are not candidates count
  for nothing; two ballots by one voter on one coin are a caller error (``ValueError``).

Weighting (``Weighting``): ``confidence`` is the rule above. ``judge`` multiplies each
ballot's ``confidence / 100`` by its voter's judge score (0..1), given to :func:`decide`
as ``voter_weights``; a voter the judge did not score weighs the mean of the scored
voters' weights, and with no score at all (no weights given) the ballots weigh by
confidence alone. ``calibrated`` multiplies it by the voter's shrunk hit rate from the
reviews of its earlier votes (``calibrated_weight``; the reviews are chosen by
``evaluations.selectors``), given the same way. The winner's confidence stays the plain
mean over its supporters: the weight decides which action wins, not how sure its
supporters were.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from enum import StrEnum
from fractions import Fraction
from typing import Any

from debates.engine.types import OPENING_ACTIONS, Action, CoinDecision, plain_dict

MAX_LEVERAGE = 20
MIN_POSITION_PCT = Fraction(1, 10)
MAX_POSITION_PCT = Fraction(1)
DEFAULT_STOP_LOSS = Fraction(3, 100)
DEFAULT_TAKE_PROFIT = Fraction(6, 100)
MAJOR_SYMBOLS = frozenset({"BTCUSDT", "ETHUSDT"})
# What an opening action takes for a value none of its supporters gave (SPEC 5.5).
_OPENING_DEFAULTS: dict[str, int | Fraction] = {
    "leverage": 1,
    "position_pct": MIN_POSITION_PCT,
    "stop_loss": DEFAULT_STOP_LOSS,
    "take_profit": DEFAULT_TAKE_PROFIT,
}

_CAUTION = {
    Action.WAIT: 0,
    Action.HOLD: 1,
    Action.CLOSE_LONG: 2,
    Action.CLOSE_SHORT: 2,
    Action.OPEN_LONG: 3,
    Action.OPEN_SHORT: 3,
}


class Weighting(StrEnum):
    """How much each ballot weighs in the score of its action."""

    CONFIDENCE = "confidence"
    JUDGE = "judge"
    CALIBRATED = "calibrated"


# Calibrated weights: a voter's hit rate shrunk towards one half by ten reviews' worth.
PRIOR_REVIEWS = 10
PRIOR_HIT_RATE = Fraction(1, 2)


def calibrated_weight(right: int, reviewed: int) -> float:
    """Return a voter's calibrated multiplier: its hit rate over ``reviewed`` judged votes
    (``right`` of them right) shrunk towards one half, (right + 10 x 0.5) / (reviewed + 10).
    """
    return float((right + PRIOR_REVIEWS * PRIOR_HIT_RATE) / (reviewed + PRIOR_REVIEWS))


@dataclass(frozen=True)
class Ballot:
    """One voter's final vote on one coin."""

    voter: str
    decision: CoinDecision


@dataclass(frozen=True)
class MajorCaps:
    """A leverage cap for BTC/ETH and another for every other coin, as strategies set it."""

    major: int
    others: int

    def __call__(self, symbol: str) -> int:
        """Return the cap for ``symbol``."""
        return self.major if symbol in MAJOR_SYMBOLS else self.others


@dataclass(frozen=True)
class ConsensusLimits:
    """The strategy's limits: minimum confidence and the leverage cap per coin.

    ``max_leverage`` is one cap for every coin, a mapping from symbol to cap (coins not
    in it get MAX_LEVERAGE), or a function of the symbol.
    """

    min_confidence: float = 0
    max_leverage: int | Mapping[str, int] | Callable[[str], int] = MAX_LEVERAGE

    @classmethod
    def by_major(cls, *, major: int, others: int, min_confidence: float = 0) -> ConsensusLimits:
        """Return limits capping BTC/ETH at ``major`` and every other coin at ``others``."""
        return cls(min_confidence=min_confidence, max_leverage=MajorCaps(major, others))

    def leverage_cap(self, symbol: str) -> int:
        """Return the highest leverage allowed for ``symbol`` (within 1..MAX_LEVERAGE)."""
        cap = self.max_leverage
        if callable(cap):
            value = cap(symbol)
        elif isinstance(cap, Mapping):
            value = cap.get(symbol, MAX_LEVERAGE)
        else:
            value = cap
        return max(1, min(MAX_LEVERAGE, int(value)))


@dataclass(frozen=True)
class Clamp:
    """A value the consensus moved into its allowed range."""

    field: str
    original: float
    value: float
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        return {"field": self.field, "from": self.original, "to": self.value, "reason": self.reason}


@dataclass(frozen=True)
class CoinConsensus:
    """The consensus decision for one coin, with how it was reached."""

    symbol: str
    action: Action
    confidence: float
    leverage: int | None
    position_pct: float | None
    stop_loss: float | None
    take_profit: float | None
    scores: dict[str, float] = field(hash=False)
    clamps: tuple[Clamp, ...]
    defaults: tuple[str, ...]
    reason: str
    supporters: int
    voters: int

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        return {
            **plain_dict(self),
            "scores": dict(self.scores),
            "clamps": [clamp.to_dict() for clamp in self.clamps],
            "defaults": list(self.defaults),
        }


def decide(
    votes: Iterable[Ballot],
    symbols: Sequence[str],
    limits: ConsensusLimits | None = None,
    *,
    voter_weights: Mapping[str, float] | None = None,
) -> list[CoinConsensus]:
    """Return the consensus for every candidate coin, in candidate order.

    ``voter_weights`` maps voters to a multiplier of their ballots' weight (0..1, the
    judge's scores); None or empty weighs by confidence alone.
    """
    limits = limits or ConsensusLimits()
    votes = list(votes)
    weights = _voter_weights(voter_weights, {ballot.voter for ballot in votes})
    by_symbol: dict[str, list[Ballot]] = {symbol: [] for symbol in symbols}
    seen: set[tuple[str, str]] = set()
    for ballot in votes:
        key = (ballot.voter, ballot.decision.symbol)
        if key in seen:
            raise ValueError(f"{ballot.voter} voted twice on {ballot.decision.symbol}")
        seen.add(key)
        if ballot.decision.symbol in by_symbol:
            by_symbol[ballot.decision.symbol].append(ballot)
    return [_decide_coin(symbol, ballots, limits, weights) for symbol, ballots in by_symbol.items()]


def _voter_weights(given: Mapping[str, float] | None, voters: set[str]) -> dict[str, Fraction]:
    """Return each voter's exact multiplier: its weight, else the scored voters' mean."""
    if not given:
        return {}
    known = {voter: min(Fraction(1), max(Fraction(0), _exact(w))) for voter, w in given.items()}
    neutral = sum(known.values(), Fraction(0)) / len(known)
    return {voter: known.get(voter, neutral) for voter in voters}


def round1_majority(
    openings: Mapping[str, Iterable[CoinDecision]],
    symbols: Sequence[str],
    limits: ConsensusLimits | None = None,
) -> list[CoinConsensus]:
    """Return the consensus rule applied to the round-1 openings' per-coin positions,
    each opening counted as its speaker's ballot: what the same models would have
    decided with no debate. ``openings`` maps each speaker to its positions."""
    ballots = [Ballot(voter, d) for voter, opened in openings.items() for d in opened]
    return decide(ballots, symbols, limits)


def primary_first(results: Sequence[CoinConsensus], symbol: str) -> list[CoinConsensus]:
    """Return ``results`` with the primary coin's decision moved to the front."""
    return sorted(results, key=lambda result: result.symbol != symbol)


def _exact(value: float) -> Fraction:
    if isinstance(value, int):
        return Fraction(value)
    if not math.isfinite(value):
        raise ValueError(f"non-finite number {value!r}")
    return Fraction(Decimal(repr(float(value))))


def _float(value: Fraction, digits: int) -> float:
    return float(round(value, digits))


def _round_half_down(value: Fraction) -> int:
    whole = math.floor(value)
    return whole + 1 if value - whole > Fraction(1, 2) else whole


def _wait(
    symbol: str, reason: str, scores: dict[str, float], clamps: list[Clamp], ballots: list[Ballot]
) -> CoinConsensus:
    return CoinConsensus(
        symbol=symbol,
        action=Action.WAIT,
        confidence=0.0,
        leverage=None,
        position_pct=None,
        stop_loss=None,
        take_profit=None,
        scores=scores,
        clamps=tuple(clamps),
        defaults=(),
        reason=reason,
        supporters=sum(ballot.decision.action == Action.WAIT for ballot in ballots),
        voters=len(ballots),
    )


def _decide_coin(
    symbol: str, ballots: list[Ballot], limits: ConsensusLimits, weights: dict[str, Fraction]
) -> CoinConsensus:
    ballots = sorted(ballots, key=lambda ballot: ballot.voter)
    clamps: list[Clamp] = []
    confidence = {ballot.voter: _confidence(ballot, clamps) for ballot in ballots}
    exact_scores = _scores(ballots, confidence, weights)
    scores = {a.value: _float(exact_scores[a], 6) for a in Action if a in exact_scores}
    winner, note = _winner(exact_scores)
    if winner is None:
        return _wait(symbol, note, scores, clamps, ballots)
    supporters = [ballot for ballot in ballots if ballot.decision.action == winner]
    mean_confidence = sum((confidence[b.voter] for b in supporters), Fraction(0)) / len(supporters)
    if mean_confidence < _exact(limits.min_confidence):
        reason = (
            f"{winner.value} at confidence {_float(mean_confidence, 2):g} is below the "
            f"strategy minimum {limits.min_confidence:g}"
        )
        return _wait(symbol, reason, scores, clamps, ballots)
    sizing, defaults = _sizing(symbol, winner, supporters, limits, clamps)
    return CoinConsensus(
        symbol=symbol,
        action=winner,
        confidence=_float(mean_confidence, 2),
        leverage=sizing["leverage"],
        position_pct=_optional_float(sizing["position_pct"]),
        stop_loss=_optional_float(sizing["stop_loss"]),
        take_profit=_optional_float(sizing["take_profit"]),
        scores=scores,
        clamps=tuple(clamps),
        defaults=defaults,
        reason=(
            f"{winner.value} wins with score {scores[winner]:g} from {len(supporters)} of "
            f"{len(ballots)} votes" + (f"; {note}" if note else "")
        ),
        supporters=len(supporters),
        voters=len(ballots),
    )


def _scores(
    ballots: list[Ballot], confidence: dict[str, Fraction], weights: dict[str, Fraction]
) -> dict[Action, Fraction]:
    """Return each action's exact score: the sum of its ballots' confidence / 100, each
    times its voter's weight."""
    scores: dict[Action, Fraction] = {}
    for ballot in ballots:
        weight = confidence[ballot.voter] / 100 * weights.get(ballot.voter, Fraction(1))
        action = ballot.decision.action
        scores[action] = scores.get(action, Fraction(0)) + weight
    return scores


def _winner(scores: dict[Action, Fraction]) -> tuple[Action | None, str]:
    """Return the top-scoring action and how a tie went, or None and why none wins."""
    if not scores:
        return None, "no votes"
    top = max(scores.values())
    winner, note = _resolve([action for action in Action if scores.get(action) == top])
    if winner is None:
        return None, f"{note} at score {_float(top, 6):g}"
    return winner, note


def _sizing(
    symbol: str,
    winner: Action,
    supporters: list[Ballot],
    limits: ConsensusLimits,
    clamps: list[Clamp],
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Return the winner's leverage, position size, stop loss and take profit (means over
    its supporters' values, clamped) and the names of those defaulted: an opening action
    takes ``_OPENING_DEFAULTS`` for what no supporter gave, another keeps None."""
    sizing = {
        "leverage": _leverage(symbol, supporters, limits, clamps),
        "position_pct": _position(supporters, clamps),
        "stop_loss": _supplied_mean(supporters, "stop_loss"),
        "take_profit": _supplied_mean(supporters, "take_profit"),
    }
    if winner not in OPENING_ACTIONS:
        return sizing, ()
    defaults = tuple(name for name, value in sizing.items() if value is None)
    return {**sizing, **{name: _OPENING_DEFAULTS[name] for name in defaults}}, defaults


def _confidence(ballot: Ballot, clamps: list[Clamp]) -> Fraction:
    raw = _exact(ballot.decision.confidence)
    clamped = min(Fraction(100), max(Fraction(0), raw))
    if clamped != raw:
        reason = f"vote by {ballot.voter} outside 0..100"
        clamps.append(Clamp("confidence", float(raw), float(clamped), reason))
    return clamped


def _supplied_mean(ballots: list[Ballot], name: str) -> Fraction | None:
    values = [getattr(b.decision, name) for b in ballots]
    supplied = [_exact(value) for value in values if value is not None]
    return sum(supplied, Fraction(0)) / len(supplied) if supplied else None


def _optional_float(value: Fraction | None) -> float | None:
    return None if value is None else _float(value, 6)


def _resolve(tied: list[Action]) -> tuple[Action | None, str]:
    """Return the winner among the top-scoring actions (None: no consensus) and a note."""
    if len(tied) == 1:
        return tied[0], ""
    most_cautious = min(_CAUTION[action] for action in tied)
    cautious = [action for action in tied if _CAUTION[action] == most_cautious]
    if len(cautious) > 1:
        return None, f"no consensus: {cautious[0].value} and {cautious[1].value} tie"
    names = ", ".join(action.value for action in tied)
    return cautious[0], f"tie between {names} goes to the more cautious {cautious[0].value}"


def _leverage(
    symbol: str, supporters: list[Ballot], limits: ConsensusLimits, clamps: list[Clamp]
) -> int | None:
    mean = _supplied_mean(supporters, "leverage")
    if mean is None:
        return None
    leverage = _round_half_down(mean)
    cap = limits.leverage_cap(symbol)
    if leverage > cap:
        where = "" if cap == MAX_LEVERAGE else f" for {symbol}"
        clamps.append(Clamp("leverage", leverage, cap, f"above the maximum {cap}{where}"))
        return cap
    if leverage < 1:
        clamps.append(Clamp("leverage", leverage, 1, "below the minimum 1"))
        return 1
    return leverage


def _position(supporters: list[Ballot], clamps: list[Clamp]) -> Fraction | None:
    position = _supplied_mean(supporters, "position_pct")
    if position is None:
        return None
    if position < MIN_POSITION_PCT:
        clamps.append(Clamp("position_pct", _float(position, 6), 0.1, "below the minimum 0.1"))
        return MIN_POSITION_PCT
    if position > MAX_POSITION_PCT:
        clamps.append(Clamp("position_pct", _float(position, 6), 1.0, "above the maximum 1.0"))
        return MAX_POSITION_PCT
    return position
