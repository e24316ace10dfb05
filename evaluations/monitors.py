"""Monitors of what the models decide: the action mix and the parse failures, with
warnings for a model that has gone stuck. Pure Python, no Django.

Over a window of the last ``WINDOW`` decisions (a participant's votes on its debates'
primary coin, or the consensus's primary decisions), newest last: the share of each
kind of action (open_long, open_short, close, hold, wait) among the usable ones, and
apart from them the share of parse failures (a vote with nothing usable in it, which is
not the model's own wait; for the consensus, a decision no usable vote reached).

Warnings: hold plus wait above 80 % of the usable decisions, or parse failures above
10 % of all of them, once the window holds at least ``MIN_SAMPLE``; no open at all over
a full window of ``WINDOW``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluations.scoring import share

WINDOW = 20
MIN_SAMPLE = 10
HOLD_WAIT_LIMIT = 0.8
PARSE_FAILURE_LIMIT = 0.1
PARSE_FAILURE = "parse_failure"
KINDS = ("open_long", "open_short", "close", "hold", "wait")
_KIND = {"close_long": "close", "close_short": "close"}


@dataclass(frozen=True)
class Monitor:
    """The action mix and parse failures of one voter (or the consensus) over a window."""

    decisions: int
    mix: dict[str, float | None]
    parse_failure_share: float | None
    warnings: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        return {**self.__dict__, "warnings": list(self.warnings)}


def monitor(entries: Sequence[str]) -> Monitor:
    """Return the monitor of ``entries`` (actions or ``PARSE_FAILURE``, oldest first);
    only the last ``WINDOW`` count."""
    window = list(entries)[-WINDOW:]
    failures = sum(entry == PARSE_FAILURE for entry in window)
    kinds = Counter(_KIND.get(entry, entry) for entry in window if entry != PARSE_FAILURE)
    usable = len(window) - failures
    return Monitor(
        decisions=len(window),
        mix={kind: share(kinds[kind], usable) for kind in KINDS},
        parse_failure_share=share(failures, len(window)),
        warnings=_warnings(len(window), kinds, failures),
    )


def _warnings(decisions: int, kinds: Counter[str], failures: int) -> tuple[str, ...]:
    """Return the warnings of a window of ``decisions``, ``failures`` of them parse
    failures and the others counted by kind in ``kinds``."""
    warnings = []
    usable = decisions - failures
    if decisions >= MIN_SAMPLE:
        idle = (kinds["hold"] + kinds["wait"]) / usable if usable else 0.0
        if idle > HOLD_WAIT_LIMIT:
            warnings.append(f"hold and wait are {idle:.0%} of the last {usable} usable decisions")
        if failures / decisions > PARSE_FAILURE_LIMIT:
            warnings.append(
                f"parse failures are {failures / decisions:.0%} of the last {decisions}"
            )
    if decisions == WINDOW and kinds["open_long"] + kinds["open_short"] == 0:
        warnings.append(f"no open in the last {WINDOW} decisions")
    return tuple(warnings)
