"""Turn a model's free-text answer into per-coin decisions (SPEC 5.4).

Where the decisions are looked for, first match wins:

1. the first ``<decision>`` or ``<final_vote>`` block (tags in any case, full-width angle
   brackets accepted); a missing closing tag means the block runs to the next opening tag
   or to the end of the text;
2. otherwise the first fenced code block holding JSON;
3. otherwise the first JSON array or object in the text: the contract's ``json_schema``
   form is one object, ``{"reasoning": ..., "decisions": [...]}``, whose reasoning is kept.

``<think>...</think>`` blocks (reasoning models) are removed first, so a draft decision
inside them is never taken. The block may hold a JSON array, a single object, an object
wrapping the array (``{"decisions": [...]}``) or an object keyed by symbol. Strict JSON is
tried first, then again with full-width punctuation and smart quotes made ASCII, then
``json_repair``. When an unclosed block ends in the middle of an entry (output cut off at
the token limit), that last entry is dropped as truncated rather than trusted with
half-written numbers.

Entries whose symbol is not a candidate coin or whose action is unknown are dropped,
never relabelled; so are entries without a usable confidence (a vote with no weight is no
vote) and repeated entries for a coin (the first one counts). An optional field that
cannot be read is ignored and reported. Number rules are in
:mod:`debates.engine.normalise`. Text with no usable entry gives no decision and status
``failed``: a keyword in prose is never read as a vote.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import json_repair

from debates.engine.normalise import (
    ascii_punctuation,
    field_key,
    normalise_action,
    normalise_symbol,
    parse_confidence,
    parse_leverage,
    parse_position_pct,
    parse_price_distance,
)
from debates.engine.types import Action, CoinDecision, Dropped, ParseResult, ParseStatus

__all__ = ["normalise_action", "normalise_symbol", "parse_output"]

EXCERPT_MAX_CHARS = 120

_T = TypeVar("_T")

_THINK_OPEN = re.compile(r"<think>", re.I)
_THINK_CLOSE = re.compile(r"</think>", re.I)
_BLOCK_OPEN = re.compile(r"[<＜]\s*(?:decision|final_vote)\s*[>＞]", re.I)
_BLOCK_CLOSE = re.compile(r"[<＜]\s*/\s*(?:decision|final_vote)\s*[>＞]", re.I)
_REASONING_OPEN = re.compile(r"[<＜]\s*reasoning\s*[>＞]", re.I)
_REASONING_CLOSE = re.compile(r"[<＜]\s*/\s*reasoning\s*[>＞]", re.I)
_FENCE = re.compile(r"```[\w+-]*[ \t]*\n?(.*?)(?:```|\Z)", re.S)
_BARE_JSON = re.compile(r"[\[{［｛]\s*[{\"“'［｛]")
_JSON_START = re.compile(r"[\[{]")
_DECODER = json.JSONDecoder()

_WRAPPER_KEYS = ("decisions", "decision", "votes", "final_vote")
_ALIASES = {
    "symbol": ("symbol", "coin", "pair", "asset"),
    "action": ("action", "decision", "signal"),
    "confidence": ("confidence", "conf", "confidence_score"),
    "leverage": ("leverage", "lev"),
    "position_pct": ("position_pct", "position_size", "size_pct", "position"),
    "stop_loss": ("stop_loss", "sl", "stop_loss_pct"),
    "take_profit": ("take_profit", "tp", "take_profit_pct"),
    "reasoning": ("reasoning", "reason", "rationale"),
}
# Keys that make an object one entry rather than a wrapper or a map of entries.
_ENTRY_KEYS = frozenset(_ALIASES["symbol"] + _ALIASES["action"])
_OPTIONAL_FIELDS: dict[str, Callable[[Any], Any]] = {
    "leverage": parse_leverage,
    "position_pct": parse_position_pct,
    "stop_loss": parse_price_distance,
    "take_profit": parse_price_distance,
}


def parse_output(text: str, candidates: Sequence[str]) -> ParseResult:
    """Parse a model answer into decisions for ``candidates``; never raise."""
    text = _without_thinking(text) if isinstance(text, str) else ""
    found = _find_block(text)
    reasoning = _reasoning(text, found)
    if found is None:
        return _failed(reasoning, Dropped("", "no decision block or JSON found"))
    body, closed, _span = found
    value, dropped = _load(body, closed=closed)
    if not _REASONING_OPEN.search(text):
        reasoning = _object_reasoning(value) or reasoning
    entries = _entries(value)
    if entries is None:
        return _failed(reasoning, *(dropped or [Dropped(_excerpt(body), "no JSON entries found")]))
    decisions = _decisions(entries, candidates, dropped)
    if not decisions:
        nothing = Dropped(_excerpt(body), "decision block has no entries")
        return _failed(reasoning, *(dropped or [nothing]))
    status = ParseStatus.PARTIAL if dropped else ParseStatus.OK
    return ParseResult(reasoning, tuple(decisions), status, tuple(dropped))


def _without_thinking(text: str) -> str:
    """Return ``text`` without closed ``<think>`` blocks, in one pass over the text."""
    kept, position = [], 0
    while opening := _THINK_OPEN.search(text, position):
        closing = _THINK_CLOSE.search(text, opening.end())
        if closing is None:
            break
        kept.append(text[position : opening.start()])
        position = closing.end()
    kept.append(text[position:])
    return "".join(kept)


def _failed(reasoning: str, *dropped: Dropped) -> ParseResult:
    return ParseResult(reasoning, (), ParseStatus.FAILED, tuple(dropped))


def _find_block(text: str) -> tuple[str, bool, tuple[int, int]] | None:
    """Return ``(body, closed, span)`` of the first decision block, fence or bare JSON."""
    opening = _BLOCK_OPEN.search(text)
    if opening:
        closing = _BLOCK_CLOSE.search(text, opening.end())
        following = _BLOCK_OPEN.search(text, opening.end())
        if closing and (following is None or closing.start() < following.start()):
            span = (opening.start(), closing.end())
            return text[opening.end() : closing.start()], True, span
        end = following.start() if following else len(text)
        return text[opening.end() : end], False, (opening.start(), end)
    for fence in _FENCE.finditer(text):
        if fence.group(1).lstrip()[:1] in ("[", "{", "［", "｛"):
            return fence.group(1), fence.group(0).endswith("```"), fence.span()
    bare = _BARE_JSON.search(text)
    if bare:
        return text[bare.start() :], False, (bare.start(), len(text))
    return None


def _reasoning(text: str, found: tuple[str, bool, tuple[int, int]] | None) -> str:
    opening = _REASONING_OPEN.search(text)
    if opening:
        closing = _REASONING_CLOSE.search(text, opening.end())
        if closing:
            end = closing.start()
        elif found and found[2][0] >= opening.end():
            end = found[2][0]
        else:
            end = len(text)
        return text[opening.end() : end].strip()
    if found:
        start, end = found[2]
        text = text[:start] + text[end:]
    return text.strip()


def _object_reasoning(value: Any) -> str:
    """Return the reasoning of an answer given as one JSON object (the contract's
    ``json_schema`` form, ``{"reasoning": ..., "decisions": [...]}``), else ``""``."""
    if not isinstance(value, dict) or not any(key in value for key in _WRAPPER_KEYS):
        return ""
    inner = value.get("reasoning")
    return inner.strip() if isinstance(inner, str) else ""


def _load(body: str, *, closed: bool) -> tuple[Any, list[Dropped]]:
    """Decode the JSON in a block body; also return what was cut off as truncated."""
    fence = _FENCE.search(body)
    if fence:
        closed = closed or fence.group(0).endswith("```")
        body = fence.group(1)
    text = ascii_punctuation(body)
    start = _json_start(text)
    if start is None:
        return None, []
    # The raw text comes first so full-width punctuation inside Chinese strings survives.
    for candidate in (body[start:], text[start:]):
        try:
            return _DECODER.raw_decode(candidate)[0], []
        except (ValueError, RecursionError):
            continue
    return _repaired(text[start:].rstrip(), closed=closed)


def _json_start(text: str) -> int | None:
    """Return where the JSON most likely starts: an opening bracket followed by an object
    or a string (skipping prose such as "[RSI] is high"), else the first bracket at all.

    Only the start of the value is tried: decoding from inside a truncated array would
    keep its first complete entry and silently lose the rest.
    """
    likely = _BARE_JSON.search(text)
    if likely:
        return likely.start()
    first = _JSON_START.search(text)
    return first.start() if first else None


def _repaired(text: str, *, closed: bool) -> tuple[Any, list[Dropped]]:
    """Return what ``json_repair`` makes of ``text``; an unclosed block that ends inside an
    entry (output cut at the token limit) loses that entry, reported as truncated."""
    dropped: list[Dropped] = []
    if not closed and text[-1:] not in ("]", "}"):
        cut = text.rfind("}") + 1
        tail = text[cut:]
        if "{" in tail:
            dropped.append(Dropped(_excerpt(tail.lstrip(" ,\n")), "truncated entry"))
        text = text[:cut]
        if not text:
            return None, dropped
    try:
        return json_repair.loads(text), dropped
    except Exception:  # json_repair is third-party; a bad answer must not crash a debate
        return None, dropped


def _entries(value: Any) -> list[Any] | None:
    """Return the entries a decoded value holds: an array, an object wrapping one, a
    single entry, or an object keyed by symbol; None when it holds none of these."""
    if isinstance(value, list):
        return value
    if not isinstance(value, dict) or not value:
        return None
    wrapped = _wrapped(value)
    if wrapped is not None:
        return wrapped
    if {field_key(key) for key in value} & _ENTRY_KEYS:
        return [value]
    if all(isinstance(inner, dict) for inner in value.values()):
        return [{"symbol": key, **inner} for key, inner in value.items()]
    return None


def _wrapped(value: dict[str, Any]) -> list[Any] | None:
    """Return the entries an object holds under a wrapper key such as ``decisions``."""
    for key in _WRAPPER_KEYS:
        inner = value.get(key)
        if isinstance(inner, list):
            return inner
        if isinstance(inner, dict):
            return [inner]
    return None


def _field(fields: dict[str, Any], name: str) -> Any:
    for alias in _ALIASES[name]:
        if fields.get(alias) is not None:
            return fields[alias]
    return None


def _decisions(
    entries: list[Any], candidates: Sequence[str], dropped: list[Dropped]
) -> list[CoinDecision]:
    """Return the usable entries as decisions, the first one per coin; record the others."""
    allowed = {normalise_symbol(symbol) or symbol for symbol in candidates}
    decisions: list[CoinDecision] = []
    for entry in entries:
        decision = _decision(entry, allowed, {d.symbol for d in decisions}, dropped)
        if decision is not None:
            decisions.append(decision)
    return decisions


def _decision(
    entry: Any, allowed: set[str], seen: set[str], dropped: list[Dropped]
) -> CoinDecision | None:
    """Return the entry as a decision, or None after recording why it was dropped."""
    excerpt = _excerpt(entry)
    if not isinstance(entry, dict):
        dropped.append(Dropped(excerpt, "not an object"))
        return None
    fields = {field_key(key): value for key, value in entry.items()}
    required = _required(fields, allowed, seen)
    if isinstance(required, str):
        dropped.append(Dropped(excerpt, required))
        return None
    symbol, action, confidence = required
    values: dict[str, Any] = {}
    for name, parse in _OPTIONAL_FIELDS.items():
        raw = _field(fields, name)
        values[name] = None if raw is None else parse(raw)
        if raw is not None and values[name] is None:
            dropped.append(Dropped(excerpt, f"ignored invalid {name}: {_show(raw)}"))
    reasoning = _field(fields, "reasoning")
    return CoinDecision(
        symbol=symbol,
        action=action,
        confidence=confidence,
        reasoning=reasoning.strip() if isinstance(reasoning, str) else "",
        **values,
    )


def _required(
    fields: dict[str, Any], allowed: set[str], seen: set[str]
) -> tuple[str, Action, float] | str:
    """Return an entry's symbol, action and confidence, or why the entry cannot count:
    the first of them missing or unreadable, else a coin already decided."""
    symbol, why = _read_field(fields, "symbol", normalise_symbol, "not a candidate coin")
    if symbol is None or symbol not in allowed:
        return why or f"not a candidate coin: {symbol}"
    action, why = _read_field(fields, "action", normalise_action, "unknown action")
    if action is None:
        return why
    confidence, why = _read_field(fields, "confidence", parse_confidence, "invalid confidence")
    if confidence is None:
        return why
    if symbol in seen:
        return f"duplicate symbol: {symbol}"
    return symbol, action, confidence


def _read_field(
    fields: dict[str, Any], name: str, read: Callable[[Any], _T | None], unreadable: str
) -> tuple[_T | None, str]:
    """Return field ``name`` as ``read`` gives it, or None and why: missing, or
    ``unreadable`` with the value shown."""
    raw = _field(fields, name)
    if raw is None:
        return None, f"missing {name}"
    value = read(raw)
    if value is None:
        return None, f"{unreadable}: {_show(raw)}"
    return value, ""


def _show(value: Any) -> str:
    shown = value if isinstance(value, str) else _dumps(value)
    return shown if len(shown) <= 40 else shown[:39] + "…"


def _excerpt(value: Any) -> str:
    text = " ".join(value.split()) if isinstance(value, str) else _dumps(value)
    return text if len(text) <= EXCERPT_MAX_CHARS else text[: EXCERPT_MAX_CHARS - 1] + "…"


def _dumps(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (ValueError, RecursionError):  # huge integers, very deep nesting
        return "…"
