"""Completed debates written straight to the database, as a run would leave them, and
prices read from the bundled candle files independently of the project's code."""

from __future__ import annotations

import csv
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from functools import cache
from pathlib import Path

from django.conf import settings

from debates.models import Debate, Decision, SeatKind
from tests.debates.factories import (
    AIModelFactory,
    BallotFactory,
    DebateFactory,
    MessageFactory,
    ParticipantFactory,
    VoteFactory,
)

FILES = Path(settings.BASE_DIR) / "strategies" / "data" / "market"
# In place of a seat's AI model: the seat is the debate owner's own (a human seat).
HUMAN = SeatKind.HUMAN


@cache
def _closes(symbol: str, timeframe: str) -> dict[int, Decimal]:
    with open(FILES / f"{symbol}-{timeframe}.csv") as handle:
        return {int(row["timestamp"]): Decimal(row["close"]) for row in csv.DictReader(handle)}


def close_by(symbol: str, at: datetime) -> Decimal:
    """Return the close of the last 15m candle closed by ``at`` (from 2024-08-05)."""
    opened = int((at - timedelta(minutes=15)).timestamp() * 1000)
    opened -= opened % (15 * 60_000)
    return _closes(symbol, "15m")[opened]


def iso(at: datetime) -> str:
    return at.astimezone(UTC).isoformat().replace("+00:00", "Z")


def completed_debate(
    *,
    owner,
    strategy,
    as_of: datetime,
    seats: list[tuple[str, object | None]],
    openings: dict[int, dict[str, str]],
    votes: dict[int, dict[str, tuple[str, float]]],
    decisions: dict[str, str],
    symbols: tuple[str, ...] = ("BTCUSDT",),
    rebuttal_tokens: int = 0,
    **fields,
) -> Debate:
    """Return a completed debate at ``as_of``: ``seats`` (personality, AI model, None
    for a new one or ``HUMAN``) in speaking order; each seat's round-1 ``openings`` and final
    ``votes`` (action, confidence) per coin; the ``decisions`` per coin. Each seat's
    round-2 message bills ``rebuttal_tokens`` (prompt and completion halves)."""
    debate = DebateFactory(
        owner=owner,
        strategy=strategy,
        symbol=symbols[0],
        symbols=list(symbols),
        status="completed",
        phase="done",
        as_of=as_of,
        max_rounds=2,
        market_snapshot={
            "source": "dataset",
            "exchange": "binance",
            "as_of": iso(as_of),
            "coins": [{"symbol": s, "price": float(close_by(s, as_of))} for s in symbols],
        },
        **fields,
    )
    for order, (personality, model) in enumerate(seats):
        participant = ParticipantFactory(
            debate=debate,
            personality=personality,
            speak_order=order,
            kind=SeatKind.HUMAN if model == HUMAN else SeatKind.MODEL,
            ai_model=None if model == HUMAN else model or AIModelFactory(owner=owner),
        )
        said = [
            {"symbol": s, "action": a, "confidence": 60, "reasoning": ""}
            for s, a in openings.get(order, {}).items()
        ]
        MessageFactory(participant=participant, round=1, decisions=said)
        MessageFactory(
            participant=participant,
            round=2,
            message_type="rebuttal",
            prompt_tokens=rebuttal_tokens // 2,
            completion_tokens=rebuttal_tokens - rebuttal_tokens // 2,
        )
        ballot = BallotFactory(participant=participant)
        for symbol, (action, confidence) in votes.get(order, {}).items():
            VoteFactory(ballot=ballot, symbol=symbol, action=action, confidence=confidence)
    for symbol, action in decisions.items():
        cast = [coins[symbol][0] for coins in votes.values() if symbol in coins]
        Decision.objects.create(
            debate=debate,
            symbol=symbol,
            action=action,
            confidence=70,
            is_primary=symbol == symbols[0],
            voters=len(cast),
            supporters=cast.count(action),
        )
    return debate
