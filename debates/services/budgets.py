"""What a model call may use: the seat's temperature, the role's output cap, and the
daily token budgets of the debate's owner and schedule.

A user (``TokenBudget``) and a schedule each may have a daily hard cap on tokens (prompt
plus completion, per UTC day). Before a call goes out it reserves the most it can use,
its prompt at three characters a token (real tokenizers give more characters a token
for the languages debates are written in) plus its output cap, in ``TokenLedger``: one
conditional ``UPDATE ... WHERE used_tokens <= cap - reserve`` per scope, in one
transaction, so however many calls race for the last tokens of a day the database lets
through only those that fit. The answer settles the reservation to what the call used.
A scope's ledger of the day opens with what its calls stored that day had used.
Past the cap no call starts: the debate fails with ``budget_exhausted`` and the figures.
A worker killed between the two keeps the reservation charged: a day's count errs high,
never low.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from datetime import UTC, date, datetime
from typing import Any

from django.db import transaction
from django.db.models import F, QuerySet, Subquery

from debates.models import Debate, Participant, TokenLedger, TokenScope
from debates.providers.base import ModelRequest, ProviderConfig
from debates.selectors import spend_of

PARTICIPANTS, JUDGE = "participants", "judge"
CHARS_PER_TOKEN = 3


@dataclass(frozen=True)
class CallScope:
    """Whose call this is: a debate's seat (``participant_id``), or its judge."""

    debate_id: int
    participant_id: int | None = None
    role: str = PARTICIPANTS


@dataclass(frozen=True)
class CallLimits:
    """What a call of a debate may use, read right before it goes out."""

    owner_id: int
    schedule_id: int | None
    temperature: float | None
    max_output_tokens: int | None
    caps: tuple[tuple[str, int, int], ...]
    """(scope, scope id, daily cap) of each scope with a hard cap."""


@dataclass(frozen=True)
class Reservation:
    """Tokens a call reserved under each capped scope of one day."""

    day: date
    tokens: int
    scopes: tuple[tuple[str, int], ...]


class BudgetExhausted(Exception):
    """The call would pass a daily hard cap; the message gives the figures."""


def call_limits(scope: CallScope) -> CallLimits | None:
    """Return the limits of ``scope``'s next call, or None when the debate is gone."""
    # Unordered: the models' default orderings would sort the subquery and the query,
    # for one row each.
    seat = (
        Participant.objects.filter(pk=scope.participant_id or 0)
        .order_by()
        .values("temperature")[:1]
    )
    row = (
        Debate.objects.filter(pk=scope.debate_id)
        .order_by()
        .annotate(seat_temperature=Subquery(seat))
        .values(
            "owner_id",
            "schedule_id",
            "max_output_tokens",
            "seat_temperature",
            "schedule__daily_token_cap",
            "owner__token_budget__daily_token_cap",
        )
        .first()
    )
    if row is None:
        return None
    return limits_of(
        owner_id=row["owner_id"],
        schedule_id=row["schedule_id"],
        max_output_tokens=row["max_output_tokens"],
        owner_cap=row["owner__token_budget__daily_token_cap"],
        schedule_cap=row["schedule__daily_token_cap"],
        role=scope.role,
        temperature=row["seat_temperature"],
    )


def limits_of(
    *,
    owner_id: int,
    schedule_id: int | None,
    max_output_tokens: dict | None,
    owner_cap: int | None,
    schedule_cap: int | None,
    role: str,
    temperature: float | None,
) -> CallLimits:
    """Return the limits of a call of ``role`` at the seat's ``temperature`` in a debate
    of ``owner_id`` (and ``schedule_id``), whose per-role output caps are
    ``max_output_tokens`` and whose owner's and schedule's daily hard caps are
    ``owner_cap`` and ``schedule_cap`` (read with what else a step reads)."""
    caps = []
    if owner_cap is not None:
        caps.append((TokenScope.USER, owner_id, owner_cap))
    if schedule_cap is not None:
        caps.append((TokenScope.SCHEDULE, schedule_id, schedule_cap))
    return CallLimits(
        owner_id=owner_id,
        schedule_id=schedule_id,
        temperature=temperature,
        max_output_tokens=(max_output_tokens or {}).get(role),
        caps=tuple(caps),
    )


def limited_config(config: ProviderConfig, limits: CallLimits) -> ProviderConfig:
    """Return ``config`` at the seat's temperature and under the role's output cap."""
    changes: dict[str, Any] = {}
    if limits.temperature is not None:
        changes["temperature"] = limits.temperature
    if limits.max_output_tokens is not None and limits.max_output_tokens < config.max_tokens:
        changes["max_tokens"] = limits.max_output_tokens
    return dataclasses.replace(config, **changes) if changes else config


def most_tokens(config: ProviderConfig, request: ModelRequest) -> int:
    """Return the most tokens a call can use: its prompt, generously counted, and the
    output cap it is sent (room for reasoning included)."""
    prompt = math.ceil((len(request.system) + len(request.user)) / CHARS_PER_TOKEN)
    return prompt + config.effective_capabilities.output_cap(config.max_tokens, request.kind)


def budget_reserve(limits: CallLimits, tokens: int) -> Reservation | None:
    """Reserve ``tokens`` under every capped scope of ``limits`` for today (UTC).

    Return None when no scope is capped; raise ``BudgetExhausted`` when one cannot take
    them, reserving nothing. A scope's first call of the day opens its ledger with what
    the calls stored so far today used (those made before the cap was set).
    """
    if not limits.caps:
        return None
    day = datetime.now(UTC).date()
    with transaction.atomic():
        for scope, scope_id, cap in limits.caps:
            ledger = TokenLedger.objects.filter(scope=scope, scope_id=scope_id, day=day)
            if _take(ledger, cap, tokens):
                continue
            if not ledger.exists():
                _open(scope, scope_id, day)
                if _take(ledger, cap, tokens):
                    continue
            used = ledger.values_list("used_tokens", flat=True).first() or 0
            raise BudgetExhausted(
                f"The daily token cap of this {scope} is reached: {used:,} of {cap:,} "
                f"tokens used today (UTC), and the next call may use up to {tokens:,}."
            )
    return Reservation(day=day, tokens=tokens, scopes=tuple((s, i) for s, i, _ in limits.caps))


def _take(ledger: QuerySet[TokenLedger], cap: int, tokens: int) -> bool:
    """Add ``tokens`` to the day's count if it stays within ``cap``; say if it did."""
    return bool(
        ledger.filter(used_tokens__lte=cap - tokens).update(used_tokens=F("used_tokens") + tokens)
    )


def _open(scope: str, scope_id: int, day: date) -> None:
    """Open a scope's ledger of ``day`` with what its stored calls of the day used."""
    owner = {TokenScope.USER: "owner_id", TokenScope.SCHEDULE: "schedule_id"}
    used = spend_of(since=day, **{owner[scope]: scope_id}).tokens
    TokenLedger.objects.bulk_create(
        [TokenLedger(scope=scope, scope_id=scope_id, day=day, used_tokens=used)],
        ignore_conflicts=True,
    )


def budget_settle(reservation: Reservation | None, used: int) -> None:
    """Count what a call used instead of what it reserved."""
    if reservation is None or used == reservation.tokens:
        return
    for scope, scope_id in reservation.scopes:
        TokenLedger.objects.filter(scope=scope, scope_id=scope_id, day=reservation.day).update(
            used_tokens=F("used_tokens") + (used - reservation.tokens)
        )
