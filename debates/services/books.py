"""A debate's book and track record: read from its trader, or given by its caller.

A debate with a trader reads the trader's book at its prepare step (``trader_book``,
through the setting ``DEBATE_BOOK_READER``: the trading app's reader). A debate whose
votes await their book (a backtest step at ``book: aware``) is given it by its caller
once the caller knows it (``debate_book_give``); its rounds run meanwhile, its votes
once it is given. Either way the track record is read with the book, when the strategy
shows it (``track_record``, through ``DEBATE_TRACK_RECORD_READER``: the evaluations
app's reader): each voter's last reviewed calls on the debate's coins, as known at the
debate's instant. Both are stored once and never rebuilt, so every vote, and any later
audit, sees the same account and record.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from debates.locks import lock_debate
from debates.models import Debate, DebateStatus
from debates.services import transitions


def trader_book(debate: Debate) -> dict[str, Any] | None:
    """Return the book of the debate's trader at its instant, or None for a debate
    without a trader; raise ``BookUnavailable`` when the account cannot be read."""
    if debate.trader_id is None:
        return None
    reader = import_string(settings.DEBATE_BOOK_READER)
    return reader(
        trader_id=debate.trader_id,
        as_of=debate.as_of,
        strategy_id=debate.strategy_id,
        debate_id=debate.pk,
    )


def track_record(
    debate: Debate, *, instant: datetime, symbols: Sequence[str]
) -> dict[str, Any] | None:
    """Return each voter's track record at ``instant`` on ``symbols`` (by participant
    id), or None when the debate's strategy does not show it."""
    strategy = debate.strategy
    if strategy is None or not strategy.track_record:
        return None
    reader = import_string(settings.DEBATE_TRACK_RECORD_READER)
    return reader(debate_id=debate.pk, instant=instant, symbols=list(symbols))


def debate_book_give(*, debate_id: int, book: dict[str, Any]) -> Debate | None:
    """Give ``book`` to a debate whose votes await it and whose rounds are over, read
    its track record, and send its votes; return its new state, or None when it does
    not await a book now (given already, or not voting yet)."""
    from debates.services.runs import run_enqueue

    with transaction.atomic():
        debate = lock_debate(
            debate_id=debate_id,
            status=DebateStatus.VOTING,
            also=("strategy__track_record", "symbols"),
        )
        if debate is None or not debate.awaits_book:
            return None
        instant = debate.as_of or timezone.now()
        record = track_record(debate, instant=instant, symbols=debate.symbols)
        moved = transitions.book_given(debate_id=debate_id, book=book, track_record=record)
        if moved is not None:
            run_enqueue(debate_id=debate_id, state=moved)
        return moved
