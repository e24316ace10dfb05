"""Which turns of a debate the models were asked, and when each turn was stored: a debate
resumed by another worker must not ask a model again for a turn already stored."""

from __future__ import annotations

import re

from debates.models import Debate, Message
from tests.fakes.llm_server import FakeLLMServer

# A participant's turn in a model's prompt: its round and its seat (P1, P2, ...).
TURN = re.compile(r"round (\d)/\d\. You are P(\d),")


def turns_asked(llm: FakeLLMServer) -> list[tuple[tuple[int, int], float]]:
    """Return the (round, seat) of each turn a model was asked, with when it was asked."""
    asked = []
    for request in llm.requests:
        found = TURN.search(request.prompt)
        if found:
            asked.append(((int(found.group(1)), int(found.group(2))), request.arrived_at))
    return asked


def turns_stored(debate: Debate) -> dict[tuple[int, int], float]:
    """Return when each turn of a debate was stored, by (round, seat)."""
    return {
        (m.round, m.participant.speak_order + 1): m.created_at.timestamp()
        for m in Message.objects.filter(debate=debate).select_related("participant")
    }


def turns_asked_again(llm: FakeLLMServer, debate: Debate) -> list[tuple[int, int]]:
    """Return the (round, seat) of each turn a model was asked after it had been stored
    (a ``KeyError`` for a turn asked and never stored)."""
    stored = turns_stored(debate)
    return [key for key, asked_at in turns_asked(llm) if asked_at >= stored[key]]
