"""The judge: a model that summarises each round and scores the participants, never voting.

Two kinds of call, each a prompt builder and a parser that never raises:

- the **round summary** (after every round but the last): the points made, the
  agreements, the open disagreements, in the judge's words, followed by a per-coin tally
  of the round's positions that the engine counts itself (a model miscounting cannot
  change it). The whole summary is at most ``ROUND_SUMMARY_MAX_CHARS`` characters;
  later rounds' prompts carry it instead of every earlier message.
- the **scores** (after the votes): per participant, the items of ``RUBRIC`` on 0..10
  with one sentence each. A participant's score is the mean of its items over 10, so
  0..1; with three judges each item is the median of the judges' values
  (:func:`aggregate_scores`), and how far they were apart is recorded as the agreement.

In a debate's plan (``debates.engine.plan``) they are the steps ``judge_round`` (after
each round but the last) and ``judge_final`` (after the votes, before the consensus),
registered here for a debate whose plan settings say it has a judge.

Both follow the debate's output modes (``debates.engine.contract``): ``tagged`` asks for
tagged blocks, ``json_schema`` for one JSON object under :func:`summary_schema` or
:func:`scores_schema`. The parsers read either form whatever was asked, as
``parse_output`` does: small models mix them up. Every cap counts characters.
"""

from __future__ import annotations

import json
import re
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

import json_repair

from debates.engine.contract import JSON_SCHEMA, TAGGED, check_mode
from debates.engine.digest import (
    COIN_REASON_MAX_CHARS,
    LABEL_MAX_CHARS,
    SUMMARY_MAX_CHARS,
    HistoryEntry,
    clip,
    digest,
    neutralise_markup,
    summarise,
)
from debates.engine.normalise import ascii_punctuation, field_key, parse_number
from debates.engine.plan import OPENING, VOTING, PlanSettings, StepSpec, register_step_kind
from debates.engine.types import CoinDecision, plain_dict

ROUND_SUMMARY_MAX_CHARS = 1_500
"""Cap on a whole round summary, the engine's tally included."""
POINTS_MAX_CHARS = 650
"""Cap on the judge's account of the points made in a round."""
AGREEMENTS_MAX_CHARS = 350
"""Cap on the judge's account of what the participants agree on."""
DISAGREEMENTS_MAX_CHARS = 350
"""Cap on the judge's account of the open disagreements."""
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

JUDGE_ROUND = "judge_round"
"""The plan's step after each round but the last: the judge summarises the round."""
JUDGE_FINAL = "judge_final"
"""The plan's step after the votes, before the consensus: the judge scores the debaters."""
JUDGE_OPTION = "judge"
"""The plan setting (``PlanSettings.options``) that says the debate has a judge."""

JUDGE_COUNTS = (1, 3)
SPREAD_TEMPERATURES = (0.2, 0.7, 1.2)
"""The temperatures of three judges: one careful, one middling, one loose."""

_JUDGE_ROLE = (
    "You are the judge of a debate about the crypto market between AI participants "
    "(labelled P1, P2, ...). You do not vote and take no side"
)
_THINK = re.compile(r"<think>.*?</think>", re.I | re.S)
_LABEL = re.compile(r"^(?:p|participant|seat)?\s*#?\s*(\d{1,2})$", re.I)
_SCORES_WRAPPERS = ("scores", "participants", "judgement")
_LABEL_KEYS = ("participant", "label", "name", "id")


class SummaryStatus(StrEnum):
    """How much of a judge's summary answer could be used (as ``ParseStatus``)."""

    OK = "ok"
    PARTIAL = "partial"
    FAILED = "failed"


def judge_temperatures(count: int, temperature: float) -> tuple[float, ...]:
    """Return the temperature of each of ``count`` judges; one judge keeps the model's."""
    if count not in JUDGE_COUNTS:
        raise ValueError(f"judge count must be one of {JUDGE_COUNTS}, not {count!r}")
    return (temperature,) if count == 1 else SPREAD_TEMPERATURES


# -- the round summary ------------------------------------------------------------------


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
            f"{_JUDGE_ROLE}: you summarise round {ctx.round}/{ctx.max_rounds} for the "
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
    user = _user(
        f"Round {ctx.round}/{ctx.max_rounds}. Candidate coins: {', '.join(ctx.symbols)}.",
        (f"Your summary of round {ctx.round - 1}", ctx.previous, ROUND_SUMMARY_MAX_CHARS),
        f"## The messages of round {ctx.round}\n{messages}",
        f"Summarise round {ctx.round} now",
        "the three blocks" if ctx.output_mode == TAGGED else "the JSON object",
    )
    return system, user


def _user(first: str, section: tuple[str, str, int], body: str, ask: str, form: str) -> str:
    """Return a judge prompt's user text: its first line, a ``(heading, text, cap)``
    section (only when it has text), its ``body``, and the request for an answer."""
    parts = [first]
    heading, text, cap = section
    if text.strip():
        parts.append(f"## {heading}\n" + clip(text, cap, heading.lower()))
    parts += [body, f"{ask}, as {form}."]
    return "\n\n".join(parts)


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
    caps = {
        "points": POINTS_MAX_CHARS,
        "agreements": AGREEMENTS_MAX_CHARS,
        "disagreements": DISAGREEMENTS_MAX_CHARS,
    }
    return {
        "type": "object",
        "properties": {name: {"type": "string", "maxLength": cap} for name, cap in caps.items()},
        "required": list(caps),
        "additionalProperties": False,
    }


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


def parse_summary(text: str, ctx: SummaryContext) -> RoundSummary:
    """Parse a judge's summary answer for ``ctx``'s round; never raise.

    Tagged blocks are read first (a missing closing tag runs to the next tag or the
    end), else a JSON object with the three fields; an answer with neither but some
    prose keeps the prose as the points (``partial``); an empty answer is ``failed``.
    """
    tally = round_tally(ctx.messages, ctx.symbols)
    text = _THINK.sub("", text if isinstance(text, str) else "")
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
    found = {name: _tagged(text, aliases) for name, aliases in _SUMMARY_ALIASES.items()}
    value = None if any(found.values()) else _json_object(text)
    if value is None:
        return found
    keys = {field_key(key): item for key, item in value.items()}
    return {
        name: next((keys[a] for a in aliases if isinstance(keys.get(a), str)), "")
        for name, aliases in _SUMMARY_ALIASES.items()
    }


# -- the scores --------------------------------------------------------------------------


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
            f"{_JUDGE_ROLE} on the market: you score how well each participant argued.",
            f"## Rubric (each item a whole number from 0 to {SCORE_MAX})\n{rubric}",
            "## Rules\n"
            "1. Score every participant listed, on every item, with one sentence each.\n"
            "2. Judge the arguing, not whether you agree with the decision.\n"
            "3. A participant whose turns failed gets 0 on what it did not do.",
            "## Output format\n" + _scores_contract(ctx.labels[0], ctx.output_mode),
        )
    )
    user = _user(
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
    text = _THINK.sub("", text if isinstance(text, str) else "")
    block = _tagged(text, ("scores", "score", "judgement"), keep_lines=True)
    entries = _score_entries(_json_value(block or text))
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
    for key in _SCORES_WRAPPERS:
        if isinstance(value.get(key), list | dict):
            return _score_entries(value[key])
    if value and all(isinstance(item, dict) for item in value.values()):
        return list(value.items())  # keyed by label
    return _listed_entries([value])


def _listed_entries(value: list[Any]) -> list[tuple[Any, dict[str, Any]]] | None:
    entries = [(_entry_label(entry), entry) for entry in value if isinstance(entry, dict)]
    return entries or None


def _entry_label(entry: dict[str, Any]) -> Any:
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


# -- three judges --------------------------------------------------------------------------


@dataclass(frozen=True)
class ParticipantScore:
    """A participant's final judge score.

    ``items`` holds each rubric item's median over the judges that scored it, with the
    reason of the judge closest to that median; ``score`` is the items' mean over 10
    (0..1), None when no judge scored it (``missing`` says why). ``agreement`` is 1 when
    the judges gave the same values, 0 when they were the whole scale apart (the mean
    over items of 1 - range/10), None with a single judge.
    """

    label: str
    items: dict[str, ItemScore] = field(hash=False)
    score: float | None
    agreement: float | None
    judges: int
    missing: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        return {
            **plain_dict(self),
            "items": {name: item.to_dict() for name, item in self.items.items()},
        }


def aggregate_scores(
    sheets: Sequence[ScoreSheet | None], labels: Sequence[str], *, failure: str = ""
) -> dict[str, ParticipantScore]:
    """Return each participant's score from the judges' ``sheets`` (None: a failed call).

    ``failure`` is the reason recorded for participants no judge scored, when known.
    """
    usable = [sheet for sheet in sheets if sheet is not None and sheet.usable]
    missing = failure or (
        "no judge answered usably" if not usable else "no judge scored this participant"
    )
    return {
        label: _participant_score(
            label, [sheet.items[label] for sheet in usable if sheet.items.get(label)], missing
        )
        for label in labels
    }


def _participant_score(
    label: str, per_judge: list[dict[str, ItemScore]], missing: str
) -> ParticipantScore:
    """Return a participant's score from the items each judge gave it (``per_judge``)."""
    given = _given_items(per_judge)
    if not given:
        return ParticipantScore(label, {}, None, None, 0, missing)
    items = {name: _median_item(values) for name, values in given.items()}
    agreements = [_agreement(values) for values in given.values() if len(values) > 1]
    mean = sum(item.value for item in items.values()) / len(items)
    return ParticipantScore(
        label=label,
        items=items,
        score=round(mean / SCORE_MAX, 4),
        agreement=round(sum(agreements) / len(agreements), 4) if agreements else None,
        judges=len(per_judge),
    )


def _given_items(per_judge: list[dict[str, ItemScore]]) -> dict[str, list[ItemScore]]:
    """Return, per rubric item some judge scored, the judges' scores of it."""
    given = {name: [judged[name] for judged in per_judge if name in judged] for name in RUBRIC}
    return {name: scores for name, scores in given.items() if scores}


def _agreement(values: list[ItemScore]) -> float:
    """Return 1 when the judges gave an item the same value, 0 when they were the whole
    scale apart."""
    spread = max(item.value for item in values) - min(item.value for item in values)
    return 1 - spread / SCORE_MAX


def _median_item(given: list[ItemScore]) -> ItemScore:
    """Return the judges' median value of one item, with the reason of the judge closest
    to it."""
    median = statistics.median(item.value for item in given)
    closest = min(given, key=lambda item: abs(item.value - median))
    return ItemScore(round(median, 2), closest.reason)


# -- reading loose answers -----------------------------------------------------------------

_TAGS = re.compile(r"[<＜]\s*/?\s*[A-Za-z_]+\s*[>＞]")


def _tagged(text: str, names: Sequence[str], *, keep_lines: bool = False) -> str:
    """Return the body of the first ``<name>`` block of ``text``, or ``""``."""
    pattern = "|".join(re.escape(name) for name in names)
    opening = re.search(rf"[<＜]\s*(?:{pattern})\s*[>＞]", text, re.I)
    if opening is None:
        return ""
    closing = re.search(rf"[<＜]\s*/\s*(?:{pattern})\s*[>＞]", text[opening.end() :], re.I)
    rest = text[opening.end() :]
    following = re.search(r"[<＜]\s*[A-Za-z_]+\s*[>＞]", rest)
    if closing and (following is None or closing.start() <= following.start()):
        body = rest[: closing.start()]
    else:
        body = rest[: following.start()] if following else rest
    return body.strip() if keep_lines else " ".join(body.split())


def _json_value(text: str) -> Any:
    """Return the first JSON array or object in ``text`` (repaired if need be), or None."""
    text = ascii_punctuation(text)
    fence = re.search(r"```[\w+-]*\s*\n?(.*?)(?:```|\Z)", text, re.S)
    if fence and fence.group(1).lstrip()[:1] in ("[", "{"):
        text = fence.group(1)
    start = re.search(r"[\[{]", text)
    if start is None:
        return None
    try:
        return json.JSONDecoder().raw_decode(text[start.start() :])[0]
    except (ValueError, RecursionError):
        pass
    try:
        return json_repair.loads(text[start.start() :])
    except Exception:  # json_repair is third-party; a bad answer must not crash a debate
        return None


def _json_object(text: str) -> dict[str, Any] | None:
    value = _json_value(text)
    return value if isinstance(value, dict) else None


# -- the judge's steps in a debate's plan ----------------------------------------------


def _judge_round_steps(settings: PlanSettings, round_number: int | None) -> list[list[StepSpec]]:
    if not settings.options.get(JUDGE_OPTION) or round_number is None:
        return []
    if round_number >= settings.max_rounds:
        return []  # the last round is followed by the votes, which read every message
    return [[StepSpec(JUDGE_ROUND, round_number)]]


def _judge_final_steps(settings: PlanSettings, round_number: int | None) -> list[list[StepSpec]]:
    return [[StepSpec(JUDGE_FINAL)]] if settings.options.get(JUDGE_OPTION) else []


register_step_kind(JUDGE_ROUND, part="round", build=_judge_round_steps, after=OPENING)
register_step_kind(JUDGE_FINAL, part="tail", build=_judge_final_steps, after=VOTING)
