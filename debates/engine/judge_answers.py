"""What both of the judge's calls share: its role, the frame of its prompts' user text,
and the lenient reading of its answers (tagged blocks, else the first JSON value).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

import json_repair

from debates.engine.digest import clip
from debates.engine.normalise import ascii_punctuation

JUDGE_ROLE = (
    "You are the judge of a debate about the crypto market between AI participants "
    "(labelled P1, P2, ...). You do not vote and take no side"
)
"""How both judge prompts begin; each goes on with what the call asks of the judge."""

_THINK = re.compile(r"<think>.*?</think>", re.I | re.S)


def user_text(first: str, section: tuple[str, str, int], body: str, ask: str, form: str) -> str:
    """Return a judge prompt's user text: its first line, a ``(heading, text, cap)``
    section (only when it has text), its ``body``, and the request for an answer."""
    parts = [first]
    heading, text, cap = section
    if text.strip():
        parts.append(f"## {heading}\n" + clip(text, cap, heading.lower()))
    parts += [body, f"{ask}, as {form}."]
    return "\n\n".join(parts)


def without_thinking(text: object) -> str:
    """Return the answer ``text`` without its ``<think>`` blocks (``""`` if not a string),
    so a draft inside them is never read."""
    return _THINK.sub("", text if isinstance(text, str) else "")


def tagged(text: str, names: Sequence[str], *, keep_lines: bool = False) -> str:
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


def json_value(text: str) -> Any:
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


def json_object(text: str) -> dict[str, Any] | None:
    """Return the first JSON value in ``text`` when it is an object, else None."""
    value = json_value(text)
    return value if isinstance(value, dict) else None
