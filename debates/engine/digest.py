"""Bounded digests of earlier debate messages, as shown to the other participants.

A digest is a message reduced to its per-coin positions and a capped summary of its
reasoning. All caps count characters (code points), never bytes.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from debates.engine.types import OPENING_ACTIONS, CoinDecision

SUMMARY_MAX_CHARS = 400
"""Cap on the reasoning summary of one earlier message."""
COIN_REASON_MAX_CHARS = 100
"""Cap on the per-coin reasoning quoted in a position line."""
POSITION_LINE_MAX_CHARS = 160
"""Cap on one per-coin position line of a digest."""
LABEL_MAX_CHARS = 32
"""Cap on a participant label or personality id shown in a digest."""
MESSAGE_DIGEST_MAX_CHARS = 2_400
"""Cap on the whole digest of one earlier message (header, positions, summary)."""

_TAG = re.compile(r"[<＜]\s*(/?)\s*([A-Za-z_]+)\s*[>＞]")
_FENCE = re.compile(r"`{3,}")


@dataclass(frozen=True)
class HistoryEntry:
    """One earlier message as other participants see it.

    ``participant`` is the speaker's label without model name or personality (``"P1"``);
    ``failed`` marks a turn that produced no answer.
    """

    participant: str
    personality: str
    round: int
    decisions: tuple[CoinDecision, ...] = ()
    reasoning: str = ""
    failed: bool = False


def participant_label(speak_order: int) -> str:
    """Return the label that names a participant in prompts (``P1`` for the first)."""
    return f"P{speak_order}"


def summarise(text: str, max_chars: int) -> str:
    """Return ``text`` on one line, cut to at most ``max_chars`` characters.

    A cut text ends with an ellipsis and, when a space is close to the cut, ends on a
    word boundary. Slicing works on characters, so a Chinese character is never split.
    """
    if max_chars < 1:
        raise ValueError("max_chars must be at least 1")
    flat = " ".join(text.split())
    if len(flat) <= max_chars:
        return flat
    cut = flat[: max_chars - 1]
    space = cut.rfind(" ")
    if flat[max_chars - 1] != " " and space >= max_chars * 0.8:
        cut = cut[:space]
    return cut.rstrip() + "…"


def clip(text: str, max_chars: int, what: str) -> str:
    """Return ``text`` (line breaks kept) cut to at most ``max_chars`` characters.

    A cut text ends with a note saying so, so the model knows it saw only a part.
    """
    text = text.strip()
    if len(text) <= max_chars:
        return text
    note = f"\n[{what} cut at {max_chars} characters]"
    if len(note) >= max_chars:
        return summarise(text, max_chars)
    cut = text[: max_chars - len(note)]
    newline = cut.rfind("\n")
    if newline > len(cut) // 2:
        cut = cut[:newline]
    return cut.rstrip() + note


def neutralise_markup(text: str) -> str:
    """Return ``text`` with tags bracketed and code fences shortened.

    Quoted model output then cannot pose as a second output contract.
    """
    return _FENCE.sub("`", _TAG.sub(r"[\1\2]", text))


def digest(entry: HistoryEntry, *, with_reasons: bool = True) -> str:
    """Return the bounded digest of one earlier message: its per-coin positions, each with
    its reason, and the summary of its reasoning. Without ``with_reasons`` the positions
    come on the header's line, as ``positions_line`` gives them, and the reasoning after."""
    if entry.failed:
        return _header(entry) + ": turn failed, no answer."
    if not with_reasons:
        lines = [positions_line(entry)]
    else:
        lines = [_header(entry) + ":"]
        lines.extend("  " + _position(decision) for decision in entry.decisions)
        if not entry.decisions:
            lines.append("  no usable positions")
    summary = summarise(neutralise_markup(entry.reasoning), SUMMARY_MAX_CHARS)
    if summary:
        lines.append("  reasoning: " + summary)
    return clip("\n".join(lines), MESSAGE_DIGEST_MAX_CHARS, "message")


def positions_line(entry: HistoryEntry) -> str:
    """Return one earlier message's per-coin positions on one line, without reasons or
    reasoning (``[round 2] P1 bull: BTCUSDT open_long conf 65 5x size 37% SL 1% TP 2%;
    ETHUSDT wait conf 70``): what a summarised round shows of each participant."""
    header = _header(entry)
    if entry.failed:
        return header + ": turn failed, no answer."
    shown = "; ".join(_position(d, False, short=True) for d in entry.decisions)
    return clip(f"{header}: {shown or 'no usable positions'}", MESSAGE_DIGEST_MAX_CHARS, "message")


def _header(entry: HistoryEntry) -> str:
    return (
        f"[round {entry.round}] {summarise(entry.participant, LABEL_MAX_CHARS)} "
        f"{summarise(entry.personality, LABEL_MAX_CHARS)}"
    )


def _position(decision: CoinDecision, with_reason: bool = True, *, short: bool = False) -> str:
    """Return one per-coin position: the coin, the action, the confidence and, for an
    action that opens a position, its sizing (a wait, hold or close opens nothing)."""
    confidence = "conf" if short else "confidence"
    parts = [decision.symbol, decision.action.value, f"{confidence} {decision.confidence:g}"]
    if decision.action in OPENING_ACTIONS:
        parts += _sizing(decision, short)
    line = " ".join(parts)
    reason = summarise(neutralise_markup(decision.reasoning), COIN_REASON_MAX_CHARS)
    if reason and with_reason:
        line += f": {reason}"
    return summarise(line, POSITION_LINE_MAX_CHARS)


def _sizing(decision: CoinDecision, short: bool) -> list[str]:
    parts = []
    if decision.leverage is not None:
        parts.append(f"{decision.leverage}x" if short else f"leverage {decision.leverage}x")
    if decision.position_pct is not None:
        parts.append(f"size {decision.position_pct * 100:.3g}%")
    if decision.stop_loss is not None:
        parts.append(f"SL {decision.stop_loss * 100:.3g}%")
    if decision.take_profit is not None:
        parts.append(f"TP {decision.take_profit * 100:.3g}%")
    return parts
