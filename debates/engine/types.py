"""Value types shared by the debate engine: actions, per-coin decisions, parse results."""

from __future__ import annotations

import math
from collections.abc import Collection
from dataclasses import dataclass, fields
from enum import Enum, StrEnum
from typing import Any


class Action(StrEnum):
    """What a participant proposes to do with one coin."""

    OPEN_LONG = "open_long"
    OPEN_SHORT = "open_short"
    CLOSE_LONG = "close_long"
    CLOSE_SHORT = "close_short"
    HOLD = "hold"
    WAIT = "wait"


OPENING_ACTIONS: frozenset[Action] = frozenset({Action.OPEN_LONG, Action.OPEN_SHORT})
CLOSING_ACTIONS: frozenset[Action] = frozenset({Action.CLOSE_LONG, Action.CLOSE_SHORT})
EXECUTABLE_ACTIONS: frozenset[Action] = OPENING_ACTIONS | CLOSING_ACTIONS


class ParseStatus(StrEnum):
    """How much of a model's output could be used.

    ``ok``: at least one decision and nothing dropped; ``partial``: at least one decision
    but some entry or field was dropped; ``failed``: no usable decision at all.
    """

    OK = "ok"
    PARTIAL = "partial"
    FAILED = "failed"


def plain_dict(value: Any, *, leave_out: Collection[str] = ()) -> dict[str, Any]:
    """Return a dataclass's fields as a dict, in field order, enums as their values and
    without the fields named in ``leave_out``.

    Other values are kept as they are: a ``to_dict`` replaces the nested ones it shows
    otherwise (``dataclasses.asdict`` would copy them deeply and keep the enums).
    """
    return {
        field.name: _plain(getattr(value, field.name))
        for field in fields(value)
        if field.name not in leave_out
    }


def _plain(value: Any) -> Any:
    return value.value if isinstance(value, Enum) else value


def _optional_float(value: Any) -> float | None:
    return None if value is None else float(value)


@dataclass(frozen=True)
class CoinDecision:
    """One participant's position on one coin.

    ``confidence`` is on a 0..100 scale; ``position_pct``, ``stop_loss`` and
    ``take_profit`` are fractions (0.3 = 30 % of the balance, 0.03 = 3 % of the price).
    ``None`` means the participant did not supply the value.
    """

    symbol: str
    action: Action
    confidence: float
    leverage: int | None = None
    position_pct: float | None = None
    stop_loss: float | None = None
    take_profit: float | None = None
    reasoning: str = ""

    def __post_init__(self) -> None:
        if not isinstance(self.action, Action):
            raise TypeError(f"action must be an Action, got {self.action!r}")
        numbers = (self.confidence, self.position_pct, self.stop_loss, self.take_profit)
        if any(value is not None and not math.isfinite(value) for value in numbers):
            raise ValueError(f"non-finite number in decision for {self.symbol}")

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict (the shape stored on messages and votes)."""
        return plain_dict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> CoinDecision:
        """Rebuild a decision from :meth:`to_dict` output; raise ``ValueError`` if invalid."""
        leverage = data.get("leverage")
        return cls(
            symbol=str(data["symbol"]),
            action=Action(data["action"]),
            confidence=float(data["confidence"]),
            leverage=None if leverage is None else int(leverage),
            position_pct=_optional_float(data.get("position_pct")),
            stop_loss=_optional_float(data.get("stop_loss")),
            take_profit=_optional_float(data.get("take_profit")),
            reasoning=str(data.get("reasoning") or ""),
        )


@dataclass(frozen=True)
class Dropped:
    """Part of a model's output that was not used: a short excerpt and why."""

    entry: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        """Return a JSON-serialisable dict."""
        return plain_dict(self)


@dataclass(frozen=True)
class ParseResult:
    """What :func:`debates.engine.parsing.parse_output` made of a model's output."""

    reasoning: str
    decisions: tuple[CoinDecision, ...]
    status: ParseStatus
    dropped: tuple[Dropped, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        return {
            **plain_dict(self),
            "decisions": [decision.to_dict() for decision in self.decisions],
            "dropped": [item.to_dict() for item in self.dropped],
        }
