"""The judge's round summary: its prompt, its JSON schema and the parser of its answer.

After every round but the last, the judge summarises the points made, the agreements and
the open disagreements in its own words; the engine adds its own tally of the round's
positions (a model miscounting cannot change it). Later rounds' prompts carry the
summary instead of every earlier message. See :mod:`debates.engine.judge`.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from debates.engine.contract import JSON_SCHEMA, TAGGED, check_mode
from debates.engine.digest import HistoryEntry, clip, digest, neutralise_markup, summarise
from debates.engine.judge_answers import (
    JUDGE_ROLE,
    json_object,
    tagged,
    user_text,
    without_thinking,
)
from debates.engine.normalise import field_key

ROUND_SUMMARY_MAX_CHARS = 1_500
"""Cap on a whole round summary, the engine's tally included."""
POINTS_MAX_CHARS = 650
"""Cap on the judge's account of the points made in a round."""
AGREEMENTS_MAX_CHARS = 350
"""Cap on the judge's account of what the participants agree on."""
DISAGREEMENTS_MAX_CHARS = 350
"""Cap on the judge's account of the open disagreements."""

# The judge's three blocks: the names a block may go by, and each one's cap.
_SUMMARY_ALIASES = {
    "points": ("points", "points_made", "summary", "main_points"),
    "agreements": ("agreements", "agreement", "consensus"),
    "disagreements": ("disagreements", "disagreement", "open_disagreements", "disputes"),
}
_SUMMARY_CAPS = {
    "points": POINTS_MAX_CHARS,
    "agreements": AGREEMENTS_MAX_CHARS,
    "disagreements": DISAGREEMENTS_MAX_CHARS,
}
_TAGS = re.compile(r"[<＜]\s*/?\s*[A-Za-z_]+\s*[>＞]")


class SummaryStatus(StrEnum):
    """How much of a judge's summary answer could be used (as ``ParseStatus``)."""

    OK = "ok"
    PARTIAL = "partial"
    FAILED = "failed"


@dataclass(frozen=True)
class SummaryContext:
    """What the summary of round ``round`` is built from.

    ``messages`` are the round's turns (failed ones included, so the judge knows who was
    silent); ``previous`` is the judge's words of the summary of the round before, if
    there is one (``summary_text`` without the tally), so a point made earlier and still
    open is not lost. No market data: the judge reports what was said, adding no analysis.
    """

    round: int
    max_rounds: int
    symbols: tuple[str, ...]
    messages: tuple[HistoryEntry, ...]
    previous: str = ""
    output_mode: str = TAGGED

    def __post_init__(self) -> None:
        check_mode(self.output_mode)
        if not 1 <= self.round < self.max_rounds:
            raise ValueError(f"a summary follows rounds 1..{self.max_rounds - 1}, not {self.round}")
        if not self.symbols:
            raise ValueError("at least one candidate symbol is required")


@dataclass(frozen=True)
class RoundSummary:
    """A parsed round summary; :meth:`text` is what later rounds' prompts carry."""

    round: int
    points: str
    agreements: str
    disagreements: str
    tally: dict[str, dict[str, int]] = field(hash=False)
    status: SummaryStatus = SummaryStatus.OK
    problems: tuple[str, ...] = ()

    def text(self) -> str:
        """Return the summary as prompts show it, at most ``ROUND_SUMMARY_MAX_CHARS``."""
        return summary_text(self.to_fields())

    def to_fields(self) -> dict[str, Any]:
        """Return the summary's parts as stored: the judge's three blocks and the tally."""
        return {
            "points": self.points,
            "agreements": self.agreements,
            "disagreements": self.disagreements,
            "tally": {symbol: dict(counts) for symbol, counts in self.tally.items()},
        }

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict (the shape stored on a judge call)."""
        return {
            "round": self.round,
            **self.to_fields(),
            "status": self.status.value,
            "problems": list(self.problems),
            "text": self.text(),
        }


def summary_text(fields: Mapping[str, Any], *, tally: bool = True) -> str:
    """Return a round summary's text from its stored parts (``RoundSummary.to_fields``),
    at most ``ROUND_SUMMARY_MAX_CHARS``; ``tally``: with the engine's tally of the round.

    The judge's next summary reads it without the tally (it counts a round the judge no
    longer summarises), the participants' prompts with it."""
    parts = [f"Points made: {fields.get('points') or 'none recorded.'}"]
    if fields.get("agreements"):
        parts.append(f"Agreements: {fields['agreements']}")
    if fields.get("disagreements"):
        parts.append(f"Open disagreements: {fields['disagreements']}")
    if tally:
        parts.append("Tally of the round: " + tally_text(fields.get("tally") or {}))
    return clip("\n".join(parts), ROUND_SUMMARY_MAX_CHARS, "summary")


def round_tally(
    messages: Sequence[HistoryEntry], symbols: Sequence[str]
) -> dict[str, dict[str, int]]:
    """Return, per candidate coin, how many of ``messages`` took each action on it."""
    tally: dict[str, Counter[str]] = {symbol: Counter() for symbol in symbols}
    for entry in messages:
        for decision in entry.decisions:
            if decision.symbol in tally:
                tally[decision.symbol][decision.action.value] += 1
    return {symbol: dict(counts.most_common()) for symbol, counts in tally.items()}


def tally_text(tally: Mapping[str, Mapping[str, int]]) -> str:
    """Return a tally as one short line per coin (``BTCUSDT open_long 2, wait 1``)."""
    lines = []
    for symbol, counts in tally.items():
        shown = ", ".join(f"{action} {count}" for action, count in counts.items())
        lines.append(f"{symbol} {shown or 'no positions'}")
    return "; ".join(lines) + "." if lines else "no positions."


def build_summary_prompt(ctx: SummaryContext) -> tuple[str, str]:
    """Return the (system, user) texts asking the judge to summarise a round."""
    system = "\n\n".join(
        (
            f"{JUDGE_ROLE}: you summarise round {ctx.round}/{ctx.max_rounds} for the "
            "participants, who will read your summary instead of the messages themselves.",
            "## Rules\n"
            "1. Report what was said, with the figures the participants cited; add no "
            "opinion and no new analysis.\n"
            "2. Name participants by label. Cover every candidate coin.\n"
            "3. Be brief: each block a few short lines.",
            "## Output format\n" + _summary_contract(ctx.output_mode),
        )
    )
    messages = "\n".join(digest(entry) for entry in ctx.messages) or "No messages."
    user = user_text(
        f"Round {ctx.round}/{ctx.max_rounds}. Candidate coins: {', '.join(ctx.symbols)}.",
        (f"Your summary of round {ctx.round - 1}", ctx.previous, ROUND_SUMMARY_MAX_CHARS),
        f"## The messages of round {ctx.round}\n{messages}",
        f"Summarise round {ctx.round} now",
        "the three blocks" if ctx.output_mode == TAGGED else "the JSON object",
    )
    return system, user


def _summary_contract(mode: str) -> str:
    limits = (
        f"points at most {POINTS_MAX_CHARS} characters, agreements and disagreements at "
        f"most {AGREEMENTS_MAX_CHARS} each"
    )
    if mode == JSON_SCHEMA:
        return (
            "Answer with one JSON object and nothing else:\n"
            '{"points": "each participant\'s main points, by label", '
            '"agreements": "what they agree on", '
            '"disagreements": "what is still disputed, and between whom"}\n'
            f"Limits: {limits}."
        )
    return (
        "Answer with exactly these three blocks and nothing after them:\n"
        "<points>\neach participant's main points, by label\n</points>\n"
        "<agreements>\nwhat they agree on\n</agreements>\n"
        "<disagreements>\nwhat is still disputed, and between whom\n</disagreements>\n"
        f"Limits: {limits}."
    )


def summary_schema() -> dict[str, Any]:
    """Return the JSON schema of a ``json_schema`` summary answer."""
    return {
        "type": "object",
        "properties": {
            name: {"type": "string", "maxLength": cap} for name, cap in _SUMMARY_CAPS.items()
        },
        "required": list(_SUMMARY_CAPS),
        "additionalProperties": False,
    }


def parse_summary(text: str, ctx: SummaryContext) -> RoundSummary:
    """Parse a judge's summary answer for ``ctx``'s round; never raise.

    Tagged blocks are read first (a missing closing tag runs to the next tag or the
    end), else a JSON object with the three fields; an answer with neither but some
    prose keeps the prose as the points (``partial``); an empty answer is ``failed``.
    """
    tally = round_tally(ctx.messages, ctx.symbols)
    text = without_thinking(text)
    found = _summary_blocks(text)
    problems: list[str] = []
    if not any(found.values()):
        prose = _TAGS.sub(" ", text).strip()
        if not prose:
            return RoundSummary(
                ctx.round, "", "", "", tally, SummaryStatus.FAILED, ("empty answer",)
            )
        found["points"] = prose
        problems.append("no blocks found: the whole answer is kept as the points")
    problems += [f"missing {name}" for name in _SUMMARY_ALIASES if not found[name]]
    fields = {
        name: summarise(neutralise_markup(found[name]), _SUMMARY_CAPS[name])
        for name in _SUMMARY_ALIASES
    }
    status = SummaryStatus.PARTIAL if problems else SummaryStatus.OK
    return RoundSummary(ctx.round, tally=tally, status=status, problems=tuple(problems), **fields)


def _summary_blocks(text: str) -> dict[str, str]:
    """Return the summary's three blocks as tagged in ``text``, else as the fields of a
    JSON object in it; a block that is not there is ``""``."""
    found = {name: tagged(text, aliases) for name, aliases in _SUMMARY_ALIASES.items()}
    value = None if any(found.values()) else json_object(text)
    if value is None:
        return found
    keys = {field_key(key): item for key, item in value.items()}
    return {
        name: next((keys[a] for a in aliases if isinstance(keys.get(a), str)), "")
        for name, aliases in _SUMMARY_ALIASES.items()
    }
