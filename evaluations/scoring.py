"""The arithmetic of outcome reviews, the debate-effect ledger and calibration.

Pure Python, no Django: ``evaluations.services`` and ``evaluations.selectors`` feed it
plain values.

Verdicts. A move is ``realised_return`` = price at the horizon / price at the instant
- 1. A move whose size is under the flat threshold (a percentage, ``review_flat_pct``)
is *still*; otherwise *up* or *down*. An action takes a side: ``open_long`` and
``close_short`` expect the price to rise, ``open_short`` and ``close_long`` to fall, and
``hold`` and ``wait`` expect no move worth trading. A side-taking action is ``right``
when the move went its way, ``wrong`` when it went the other way, and ``flat`` when the
move was still; ``hold`` and ``wait`` are ``right`` on a still move and ``wrong`` on any
other. Accuracies are right / (right + wrong): flat verdicts count for neither.

Calibration of a voter (an AI model in a personality), over its votes judged right or
wrong: the hit rate; the base rate, the share of the same samples (coins, instants and
horizon) on which the most frequent move (up, down or still) happened, which is what
the best constant call would have scored there, so a voter always long in a rising
market shows no skill; the Brier score of its confidence read as the probability of
being right, mean((confidence/100 - hit)^2); and a reliability table over ten
confidence bins ([0, 10), [10, 20) ... [90, 100]).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

RIGHT, WRONG, FLAT = "right", "wrong", "flat"
UP, DOWN, STILL = "up", "down", "still"
RISING = frozenset({"open_long", "close_short"})
FALLING = frozenset({"open_short", "close_long"})
BUYING = RISING  # the side of the order an action sends: buy, else sell
RELIABILITY_BINS = 10


def realised_return(at_instant: Decimal, at_horizon: Decimal) -> float:
    """Return the move from ``at_instant`` to ``at_horizon`` as a fraction."""
    return float(at_horizon / at_instant - 1)


def move(realised: float, flat_pct: float) -> str:
    """Return ``up``, ``down`` or ``still`` (a move under ``flat_pct`` percent)."""
    if abs(realised) * 100 < flat_pct:
        return STILL
    return UP if realised > 0 else DOWN


def verdict(action: str, realised: float, flat_pct: float) -> str:
    """Return the verdict of ``action`` on a move of ``realised`` (module docstring)."""
    went = move(realised, flat_pct)
    if action in RISING or action in FALLING:
        if went == STILL:
            return FLAT
        return RIGHT if (went == UP) == (action in RISING) else WRONG
    return RIGHT if went == STILL else WRONG


def marked_pnl(
    action: str, quantity: Decimal, fill_price: Decimal, at_horizon: Decimal, fee: Decimal
) -> Decimal:
    """Return an executed fill marked to the horizon price, less its fee."""
    side = 1 if action in BUYING else -1
    return (side * quantity * (at_horizon - fill_price) - fee).quantize(Decimal("0.00000001"))


def share(part: float, whole: float, digits: int = 6) -> float | None:
    """Return ``part / whole`` rounded to ``digits``, None when ``whole`` is zero."""
    return round(part / whole, digits) if whole else None


def accuracy(verdicts: Iterable[str]) -> float | None:
    """Return right / (right + wrong), None with neither."""
    counts = Counter(verdicts)
    return share(counts[RIGHT], counts[RIGHT] + counts[WRONG])


@dataclass(frozen=True)
class LedgerRow:
    """One reviewed coin decision of a debate, beside its round-1 majority and, where its
    step has one, the budget-matched baseline; with the move it was judged on."""

    debate_id: int
    symbol: str
    action: str
    verdict: str
    round1_action: str
    round1_verdict: str
    realised_return: float = 0.0
    baseline_action: str = ""
    baseline_verdict: str = ""

    @property
    def flipped(self) -> bool:
        """Say whether the decision differs from the round-1 majority's."""
        return self.action != self.round1_action

    @property
    def useful(self) -> bool:
        """Say whether the decision is right where the round-1 majority's was not."""
        return self.verdict == RIGHT and self.round1_verdict != RIGHT

    @property
    def harmful(self) -> bool:
        """Say whether the round-1 majority's was right and the decision is not."""
        return self.round1_verdict == RIGHT and self.verdict != RIGHT


@dataclass(frozen=True)
class Ledger:
    """What the rounds after the first did to the decisions, in aggregate.

    A flip is a decision whose action differs from the round-1 majority's; it is right
    when the final action's verdict is right, and useful when it is right while the
    round-1 majority's was not. ``participants`` maps each voter's key to the accuracy
    of its own final votes. ``verdict`` says whether the debate earned its tokens
    (``evaluations.verdicts``).
    """

    decisions: int
    flips: int
    flips_right: int
    flips_wrong: int
    useful_flips: int
    harmful_flips: int
    flip_rate: float | None
    flip_accuracy: float | None
    round1_accuracy: float | None
    final_accuracy: float | None
    round_tokens: int
    tokens_per_useful_flip: float | None
    participants: dict[str, dict[str, Any]] = field(default_factory=dict)
    verdict: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        return dict(self.__dict__)


def ledger(
    rows: Sequence[LedgerRow],
    *,
    round_tokens: int,
    participants: dict[str, dict[str, Any]] | None = None,
    verdict: dict[str, Any] | None = None,
) -> Ledger:
    """Aggregate ``rows``; ``round_tokens`` are the tokens rounds 2..N spent on them;
    ``verdict`` is whether the debate earned its tokens (``evaluations.verdicts``)."""
    flips = [row for row in rows if row.flipped]
    verdicts = Counter(row.verdict for row in flips)
    right, wrong = verdicts[RIGHT], verdicts[WRONG]
    useful = sum(row.useful for row in flips)
    harmful = sum(row.harmful for row in flips)
    return Ledger(
        decisions=len(rows),
        flips=len(flips),
        flips_right=right,
        flips_wrong=wrong,
        useful_flips=useful,
        harmful_flips=harmful,
        flip_rate=share(len(flips), len(rows)),
        flip_accuracy=share(right, right + wrong),
        round1_accuracy=accuracy(row.round1_verdict for row in rows),
        final_accuracy=accuracy(row.verdict for row in rows),
        round_tokens=round_tokens,
        tokens_per_useful_flip=share(round_tokens, useful, digits=2),
        participants=dict(participants or {}),
        verdict=dict(verdict or {}),
    )


@dataclass(frozen=True)
class Sample:
    """One judged vote: its confidence (0..100), whether it was right, the move seen."""

    confidence: float
    right: bool
    move: str


@dataclass(frozen=True)
class Bin:
    """One row of a reliability table."""

    low: int
    high: int
    count: int
    mean_confidence: float | None
    share_right: float | None


@dataclass(frozen=True)
class Calibration:
    """How far one voter's confidence means anything (module docstring)."""

    samples: int
    right: int
    hit_rate: float | None
    base_rate: float | None
    skill: float | None
    brier: float | None
    reliability: tuple[Bin, ...]

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        data = dict(self.__dict__)
        data["reliability"] = [dict(b.__dict__) for b in self.reliability]
        return data


def calibration(samples: Sequence[Sample]) -> Calibration:
    """Return the calibration over ``samples``."""
    reliability = _reliability(samples)
    if not samples:
        return Calibration(0, 0, None, None, None, None, reliability)
    n = len(samples)
    right = sum(s.right for s in samples)
    hit = right / n
    base = max(Counter(s.move for s in samples).values()) / n
    brier = sum((s.confidence / 100 - s.right) ** 2 for s in samples) / n
    return Calibration(
        samples=n,
        right=right,
        hit_rate=round(hit, 6),
        base_rate=round(base, 6),
        skill=round(hit - base, 6),
        brier=round(brier, 6),
        reliability=reliability,
    )


def _reliability(samples: Sequence[Sample]) -> tuple[Bin, ...]:
    """Return the reliability table of ``samples``: one bin per tenth of confidence, the
    last one closed (100 falls in [90, 100])."""
    width = 100 // RELIABILITY_BINS
    binned: list[list[Sample]] = [[] for _ in range(RELIABILITY_BINS)]
    for s in samples:
        binned[min(int(s.confidence // width), RELIABILITY_BINS - 1)].append(s)
    return tuple(
        Bin(
            low=index * width,
            high=(index + 1) * width,
            count=len(group),
            mean_confidence=share(sum(s.confidence for s in group), len(group), digits=4),
            share_right=share(sum(s.right for s in group), len(group)),
        )
        for index, group in enumerate(binned)
    )
