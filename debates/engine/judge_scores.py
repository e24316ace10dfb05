"""The judge's scores: its prompt, its JSON schema and the parser of one judge's answer.

After the votes, the judge scores each participant on the items of ``RUBRIC``, 0..10
with one sentence each; :func:`debates.engine.judge.aggregate_scores` makes the
participants' scores of one or three judges' sheets.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from debates.engine.contract import JSON_SCHEMA, TAGGED, check_mode
from debates.engine.digest import (
    COIN_REASON_MAX_CHARS,
    LABEL_MAX_CHARS,
    SUMMARY_MAX_CHARS,
    HistoryEntry,
    neutralise_markup,
    summarise,
)
from debates.engine.judge_answers import JUDGE_ROLE, json_value, tagged, user_text, without_thinking
from debates.engine.normalise import ascii_punctuation, field_key, parse_number
from debates.engine.types import CoinDecision, plain_dict

REASON_MAX_CHARS = 200
"""Cap on the sentence that justifies one rubric item."""
JUDGE_MARKET_MAX_CHARS = 3_000
"""Cap on the market summary a judge prompt carries."""
SCORE_MAX = 10

RUBRIC: dict[str, str] = {
    "market_data": "use of the market data: claims backed by the figures given "
    "(price, indicators, funding, open interest), none invented",
    "answers": "answers to the others: engages with the other participants' points by "
    "label, accepting or rejecting them with reasons",
    "consistency": "consistency between reasoning and decision: the actions and "
    "confidences follow from the reasoning, and changes of mind are explained",
}
"""The items each participant is scored on, with what each one means."""

_LABEL = re.compile(r"^(?:p|participant|seat)?\s*#?\s*(\d{1,2})$", re.I)
_SCORES_WRAPPERS = ("scores", "participants", "judgement")
_LABEL_KEYS = ("participant", "label", "name", "id")


@dataclass(frozen=True)
class JudgedSeat:
    """One participant as the judge sees it: every turn, and its final vote."""

    label: str
    personality: str
    messages: tuple[HistoryEntry, ...]
    vote: tuple[CoinDecision, ...] = ()


@dataclass(frozen=True)
class ScoresContext:
    """What the scoring call is built from: every participant's record and the market
    summary its use of the data is checked against (no round summary: the rubric scores
    each participant's own reasoning, answers and decisions, all in its record)."""

    symbols: tuple[str, ...]
    seats: tuple[JudgedSeat, ...]
    market_summary: str = ""
    output_mode: str = TAGGED

    def __post_init__(self) -> None:
        check_mode(self.output_mode)
        if not self.seats:
            raise ValueError("at least one participant is required")

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(seat.label for seat in self.seats)


@dataclass(frozen=True)
class ItemScore:
    """One rubric item of one participant: 0..10 and the sentence that justifies it."""

    value: float
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        return plain_dict(self)


@dataclass(frozen=True)
class ScoreSheet:
    """One judge's parsed scores: per participant label, per rubric item."""

    items: dict[str, dict[str, ItemScore]] = field(hash=False)
    problems: tuple[str, ...] = ()

    @property
    def usable(self) -> bool:
        return any(self.items.values())

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict (the shape stored on a judge call)."""
        return {
            "items": {
                label: {name: item.to_dict() for name, item in items.items()}
                for label, items in self.items.items()
            },
            "problems": list(self.problems),
        }


def build_scores_prompt(ctx: ScoresContext) -> tuple[str, str]:
    """Return the (system, user) texts asking the judge to score every participant."""
    rubric = "\n".join(f"- {name}: {meaning}." for name, meaning in RUBRIC.items())
    system = "\n\n".join(
        (
            f"{JUDGE_ROLE} on the market: you score how well each participant argued.",
            f"## Rubric (each item a whole number from 0 to {SCORE_MAX})\n{rubric}",
            "## Rules\n"
            "1. Score every participant listed, on every item, with one sentence each.\n"
            "2. Judge the arguing, not whether you agree with the decision.\n"
            "3. A participant whose turns failed gets 0 on what it did not do.",
            "## Output format\n" + _scores_contract(ctx.labels[0], ctx.output_mode),
        )
    )
    user = user_text(
        f"Candidate coins: {', '.join(ctx.symbols)}.",
        ("Market summary", ctx.market_summary, JUDGE_MARKET_MAX_CHARS),
        "## The participants\n" + "\n\n".join(_seat_text(seat) for seat in ctx.seats),
        "Score every participant now",
        "a <scores> block" if ctx.output_mode == TAGGED else "the JSON object",
    )
    return system, user


def _seat_text(seat: JudgedSeat) -> str:
    """Return a participant's record: positions round by round, its latest message, vote."""
    label = summarise(seat.label, LABEL_MAX_CHARS)
    lines = [f"{label} ({summarise(seat.personality, LABEL_MAX_CHARS)}):"]
    for symbol, steps in _positions_by_coin(seat.messages).items():
        lines.append(f"  {symbol}: " + summarise(_trajectory(steps), 200))
    failed = [str(entry.round) for entry in seat.messages if entry.failed]
    if failed:
        lines.append(f"  failed turns in rounds {', '.join(failed)}")
    answered = [entry for entry in seat.messages if not entry.failed]
    if answered:
        # its positions are in the lines above, the reasons for its decisions in its vote
        latest = answered[-1]
        reasoning = summarise(neutralise_markup(latest.reasoning), SUMMARY_MAX_CHARS)
        lines.append(f"  latest message (round {latest.round}): {reasoning or 'no reasoning'}")
    lines.append("  final vote: " + ("; ".join(map(_vote_text, seat.vote)) or "none"))
    return "\n".join(lines)


def _positions_by_coin(
    messages: Sequence[HistoryEntry],
) -> dict[str, list[tuple[int, str, float]]]:
    """Return each coin's ``(round, action, confidence)`` over ``messages``, in order."""
    by_symbol: dict[str, list[tuple[int, str, float]]] = {}
    for entry in messages:
        for decision in entry.decisions:
            by_symbol.setdefault(decision.symbol, []).append(
                (entry.round, decision.action.value, decision.confidence)
            )
    return by_symbol


def _vote_text(decision: CoinDecision) -> str:
    """Return one coin of a final vote: its action, confidence and short reason."""
    shown = f"{decision.symbol} {decision.action.value} {decision.confidence:g}"
    if not decision.reasoning:
        return shown
    return f"{shown} ({summarise(neutralise_markup(decision.reasoning), COIN_REASON_MAX_CHARS)})"


def _trajectory(steps: Sequence[tuple[int, str, float]]) -> str:
    """Return a coin's positions round by round, rounds in a row with the same action
    written once: ``r1 open_long 64 > r2-r4 wait 70/72/75``."""
    runs: list[list[tuple[int, str, float]]] = []
    for step in steps:
        if runs and runs[-1][-1][1] == step[1] and runs[-1][-1][0] + 1 == step[0]:
            runs[-1].append(step)
        else:
            runs.append([step])
    shown = []
    for run in runs:
        rounds = f"r{run[0][0]}" + (f"-r{run[-1][0]}" if len(run) > 1 else "")
        shown.append(f"{rounds} {run[0][1]} " + "/".join(f"{c:g}" for _, _, c in run))
    return " > ".join(shown)


def _scores_contract(label: str, mode: str) -> str:
    example = {"participant": label}
    for name in RUBRIC:
        example[name] = 7
        example[f"{name}_reason"] = "one sentence"
    shown = json.dumps(example)
    if mode == JSON_SCHEMA:
        return (
            "Answer with one JSON object and nothing else:\n"
            f'{{"scores": [{shown}]}}\n'
            '"scores" holds one object per participant.'
        )
    return (
        "Answer with exactly this block and nothing after it:\n"
        f"<scores>\n[\n  {shown}\n]\n</scores>\n"
        "The <scores> block holds a JSON array with one object per participant."
    )


def scores_schema(labels: Sequence[str]) -> dict[str, Any]:
    """Return the JSON schema of a ``json_schema`` scores answer about ``labels``."""
    properties: dict[str, Any] = {"participant": {"type": "string", "enum": list(labels)}}
    for name in RUBRIC:
        properties[name] = {"type": "integer", "minimum": 0, "maximum": SCORE_MAX}
        properties[f"{name}_reason"] = {"type": "string", "maxLength": REASON_MAX_CHARS}
    sheet = {
        "type": "object",
        "properties": properties,
        "required": list(properties),
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {
            "scores": {
                "type": "array",
                "items": sheet,
                "minItems": len(labels),
                "maxItems": len(labels),
            }
        },
        "required": ["scores"],
        "additionalProperties": False,
    }


def parse_scores(text: str, labels: Sequence[str]) -> ScoreSheet:
    """Parse one judge's scores answer about ``labels``; never raise.

    The entries are looked for in a ``<scores>`` block, else in the first JSON value of
    the answer. An entry is a participant's object: ``participant`` (``P1``, ``p1``,
    ``Participant 1`` or ``1``) and per item either a number (``7``, ``"7/10"``) with an
    optional ``<item>_reason``, or ``{"score": 7, "reason": ...}``; an object keyed by
    label works too. Values are clamped to 0..10; unknown labels and unreadable items
    are dropped and reported; the first entry for a label counts.
    """
    text = without_thinking(text)
    block = tagged(text, ("scores", "score", "judgement"), keep_lines=True)
    entries = _score_entries(json_value(block or text))
    if entries is None:
        return ScoreSheet({}, ("no scores found",))
    allowed = set(labels)
    items: dict[str, dict[str, ItemScore]] = {}
    problems: list[str] = []
    for raw_label, entry in entries:
        label = normalise_label(raw_label)
        if label is None or label not in allowed:
            problems.append(f"not a participant: {summarise(str(raw_label), 40)}")
        elif label in items:
            problems.append(f"duplicate participant: {label}")
        else:
            items[label] = _rubric_items(label, entry, problems)
    problems += [f"{label}: not scored" for label in labels if label not in items]
    return ScoreSheet(items, tuple(problems))


def _rubric_items(label: str, entry: dict[str, Any], problems: list[str]) -> dict[str, ItemScore]:
    """Return the rubric items of one participant's entry; record each unreadable one."""
    fields = {field_key(key): item for key, item in entry.items()}
    scored: dict[str, ItemScore] = {}
    for name in RUBRIC:
        item = _item_score(fields, name)
        if item is None:
            problems.append(f"{label}: no readable {name}")
        else:
            scored[name] = item
    return scored


def normalise_label(raw: object) -> str | None:
    """Return a participant label as ``P<n>``, or None when ``raw`` is not one."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return f"P{raw}" if raw >= 1 else None
    if not isinstance(raw, str):
        return None
    match = _LABEL.match(ascii_punctuation(raw).strip())
    return f"P{int(match.group(1))}" if match and int(match.group(1)) >= 1 else None


def _score_entries(value: Any) -> list[tuple[Any, dict[str, Any]]] | None:
    """Return ``(label, entry)`` for each participant's object in a decoded answer: an
    array of objects, one wrapped under ``scores`` (or alike), an object keyed by label,
    or a single object; None when it holds none."""
    if isinstance(value, dict):
        return _object_entries(value)
    if isinstance(value, list):
        return _listed_entries(value)
    return None


def _object_entries(value: dict[str, Any]) -> list[tuple[Any, dict[str, Any]]] | None:
    """Return the entries of an object: those it wraps, else its values when every one is
    an object (keyed by label), else the object itself as the only entry."""
    for key in _SCORES_WRAPPERS:
        if isinstance(value.get(key), list | dict):
            return _score_entries(value[key])
    if value and all(isinstance(item, dict) for item in value.values()):
        return list(value.items())  # keyed by label
    return _listed_entries([value])


def _listed_entries(value: list[Any]) -> list[tuple[Any, dict[str, Any]]] | None:
    """Return the objects of an array with their labels; None when it holds none."""
    entries = [(_entry_label(entry), entry) for entry in value if isinstance(entry, dict)]
    return entries or None


def _entry_label(entry: dict[str, Any]) -> Any:
    """Return the raw label an entry names its participant by, None when it names none."""
    fields = {field_key(key): item for key, item in entry.items()}
    return next((fields[key] for key in _LABEL_KEYS if key in fields), None)


def _item_score(fields: dict[str, Any], name: str) -> ItemScore | None:
    raw = fields.get(name)
    reason = fields.get(f"{name}_reason")
    if isinstance(raw, dict):
        inner = {field_key(key): item for key, item in raw.items()}
        raw = inner.get("score", inner.get("value"))
        reason = inner.get("reason", reason)
    value = _score_value(raw)
    if value is None:
        return None
    text = summarise(neutralise_markup(reason), REASON_MAX_CHARS) if isinstance(reason, str) else ""
    return ItemScore(value, text)


def _score_value(raw: Any) -> float | None:
    if isinstance(raw, str) and "/" in raw:
        head, _, tail = raw.partition("/")
        out_of = parse_number(tail)
        raw = head if out_of and out_of[0] == SCORE_MAX else None
    parsed = parse_number(raw)
    if parsed is None:
        return None
    return min(float(SCORE_MAX), max(0.0, parsed[0]))
