"""What a rule's decisions took in model calls, per unit of what they made.

A rule that reads model answers spends the tokens (prompt plus completion) and the USD
of the calls its decisions rest on, at every step of the window, a step whose debate
did not complete included (its calls were made all the same). Each call counts what
it took when a model was called for it (``answer_tokens``): an answer from the
model-call cache counts the call it repeats, so a re-run reads the same.

- ``debate``, ``weighting:*`` and ``seat:P<n>``: every call of the step's debate (its
  turns, votes and judge calls): each of their decisions rests on the whole debate;
- ``round1_majority``: the round-1 openings alone;
- ``budget_matched``: the baseline's answers.

Buy-and-hold and flat read no answer and spend nothing. Per unit of edge:

- per trade: over the rule's closed trades;
- per point of return over buy-and-hold: over the rule's total return less
  buy-and-hold's, in percentage points; none when the rule did not beat buy-and-hold
  (there is no edge to pay for);
- per correct decision: over the opening decisions the price followed over the scoring
  horizon (``Metrics.correct``).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from backtests.engine.metrics import Metrics

DEBATE_CALLS, OPENINGS, SAMPLES = "debate", "openings", "samples"
USD_PLACES = 8


@dataclass(frozen=True)
class Outlay:
    """Tokens (prompt plus completion) and USD spent on model calls."""

    tokens: int = 0
    cost_usd: Decimal = Decimal(0)

    def __add__(self, other: Outlay) -> Outlay:
        return Outlay(self.tokens + other.tokens, self.cost_usd + other.cost_usd)


def calls_of(rule_key: str) -> str | None:
    """Return which calls rule ``rule_key`` spends (``DEBATE_CALLS``, ``OPENINGS`` or
    ``SAMPLES``), None for a rule that reads no model answer."""
    if rule_key == "debate" or rule_key.startswith(("weighting:", "seat:")):
        return DEBATE_CALLS
    return {"round1_majority": OPENINGS, "budget_matched": SAMPLES}.get(rule_key)


def _per(outlay: Outlay, units: float | None) -> tuple[float | None, float | None]:
    """Return (tokens, USD) per unit of ``units``; none without a positive count."""
    if units is None or units <= 0:
        return None, None
    usd = float(outlay.cost_usd) / units
    return round(outlay.tokens / units, 1), round(usd, USD_PLACES)


def edge_costs(outlay: Outlay, metrics: Metrics, hold_return: float | None) -> dict[str, Any]:
    """Return what ``outlay`` bought a rule of ``metrics``: its tokens and USD, and both
    per trade, per point of return over buy-and-hold (``hold_return``, a fraction; none
    without it) and per correct decision."""
    over = None if hold_return is None else (metrics.total_return - hold_return) * 100
    figures: dict[str, Any] = {"tokens": outlay.tokens, "cost_usd": outlay.cost_usd}
    for unit, count in (
        ("trade", metrics.trades),
        ("point", over),
        ("correct", metrics.correct),
    ):
        figures[f"tokens_per_{unit}"], figures[f"usd_per_{unit}"] = _per(outlay, count)
    return figures
