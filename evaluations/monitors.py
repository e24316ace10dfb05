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
    mix = {kind: round(kinds[kind] / usable, 6) if usable else None for kind in KINDS}
    failure_share = round(failures / len(window), 6) if window else None
    warnings = []
    if len(window) >= MIN_SAMPLE:
        idle = (kinds["hold"] + kinds["wait"]) / usable if usable else 0.0
        if idle > HOLD_WAIT_LIMIT:
            warnings.append(f"hold and wait are {idle:.0%} of the last {usable} usable decisions")
        if failures / len(window) > PARSE_FAILURE_LIMIT:
            warnings.append(
                f"parse failures are {failures / len(window):.0%} of the last {len(window)}"
            )
    if len(window) == WINDOW and kinds["open_long"] + kinds["open_short"] == 0:
        warnings.append(f"no open in the last {WINDOW} decisions")
    return Monitor(
        decisions=len(window), mix=mix, parse_failure_share=failure_share, warnings=tuple(warnings)
    )
