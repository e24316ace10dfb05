"""What a model call may use: the seat's temperature, the role's output cap, and the
daily budgets of the debate's owner and schedule.

A user (``TokenBudget``) and a schedule each may have a daily hard cap on tokens (prompt
plus completion, per UTC day); a user may have one in USD as well. Before a call goes
out it reserves the most it can use, its prompt at three characters a token (real
tokenizers give more characters a token for the languages debates are written in) plus
its output cap, and the most that can cost at its model's price (every input token at
the dearer of the input and cache-write prices), in ``TokenLedger``: one conditional
``UPDATE ... WHERE used_tokens <= cap - tokens AND used_usd <= usd_cap - usd`` per
scope, in one transaction, so however many calls race for the last tokens or cents of a
day the database lets through only those that fit. The answer settles the reservation
to what the call used and cost. A scope's ledger of the day opens with what its stored
calls of that day had used and cost. Past a cap no call starts: the debate fails with
``budget_exhausted`` and the figures. A worker killed between the two keeps the
reservation charged: a day's count errs high, never low.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from django.db import transaction
from django.db.models import F, QuerySet, Subquery

from debates.models import Debate, Participant, TokenLedger, TokenScope
from debates.providers.base import ModelRequest, ProviderConfig
from debates.providers.pricing import usd_text
from debates.selectors import spend_of
from debates.services.costs import cost_at_most

PARTICIPANTS, JUDGE = "participants", "judge"
CHARS_PER_TOKEN = 3


@dataclass(frozen=True)
class CallScope:
    """Whose call this is: a debate's seat (``participant_id``), or its judge."""

    debate_id: int
    participant_id: int | None = None
    role: str = PARTICIPANTS


@dataclass(frozen=True)
class Cap:
    """A scope's daily hard caps: on tokens, in USD, or both (None: no such cap)."""

    scope: str
    scope_id: int
    tokens: int | None = None
    usd: Decimal | None = None


@dataclass(frozen=True)
class CallLimits:
    """What a call of a debate may use, read right before it goes out."""

    owner_id: int
    schedule_id: int | None
    temperature: float | None
    max_output_tokens: int | None
    caps: tuple[Cap, ...]
    """The caps of each scope with a hard cap."""


@dataclass(frozen=True)
class Reservation:
    """Tokens and USD a call reserved under each capped scope of one day."""

    day: date
    tokens: int
    usd: Decimal
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
            "owner__token_budget__daily_usd_cap",
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
        owner_usd_cap=row["owner__token_budget__daily_usd_cap"],
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
    owner_usd_cap: Decimal | None,
    schedule_cap: int | None,
    role: str,
    temperature: float | None,
) -> CallLimits:
    """Return the limits of a call of ``role`` at the seat's ``temperature`` in a debate
    of ``owner_id`` (and ``schedule_id``), whose per-role output caps are
    ``max_output_tokens`` and whose owner's and schedule's daily hard caps are
    ``owner_cap`` and ``schedule_cap`` in tokens and ``owner_usd_cap`` in USD (read
    with what else a step reads)."""
    caps = []
    if owner_cap is not None or owner_usd_cap is not None:
        caps.append(Cap(TokenScope.USER, owner_id, owner_cap, owner_usd_cap))
    if schedule_cap is not None:
        caps.append(Cap(TokenScope.SCHEDULE, schedule_id, schedule_cap))
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
    return sum(_most(config, request))


def most_cost(config: ProviderConfig, request: ModelRequest) -> Decimal:
    """Return the most a call can cost: ``most_tokens`` at its model's price now."""
    prompt, output = _most(config, request)
    return cost_at_most(
        provider=config.provider,
        model=config.effective_model,
        prompt_tokens=prompt,
        completion_tokens=output,
    )


def _most(config: ProviderConfig, request: ModelRequest) -> tuple[int, int]:
    """Return the most prompt and output tokens a call can use."""
    prompt = math.ceil((len(request.system) + len(request.user)) / CHARS_PER_TOKEN)
    return prompt, config.effective_capabilities.output_cap(config.max_tokens, request.kind)


def budget_reserve(
    limits: CallLimits, tokens: int, usd: Decimal = Decimal(0)
) -> Reservation | None:
    """Reserve ``tokens`` and ``usd`` under every capped scope of ``limits`` for today
    (UTC).

    Return None when no scope is capped; raise ``BudgetExhausted`` when one cannot take
    them, reserving nothing. A scope's first call of the day opens its ledger with what
    the calls stored so far today used and cost (those made before the cap was set).
    """
    if not limits.caps:
        return None
    day = datetime.now(UTC).date()
    with transaction.atomic():
        for cap in limits.caps:
            ledger = TokenLedger.objects.filter(scope=cap.scope, scope_id=cap.scope_id, day=day)
            if _take(ledger, cap, tokens, usd):
                continue
            if not ledger.exists():
                _open(cap.scope, cap.scope_id, day)
                if _take(ledger, cap, tokens, usd):
                    continue
            raise BudgetExhausted(_reached(ledger, cap, tokens, usd))
    scopes = tuple((cap.scope, cap.scope_id) for cap in limits.caps)
    return Reservation(day=day, tokens=tokens, usd=usd, scopes=scopes)


def _take(ledger: QuerySet[TokenLedger], cap: Cap, tokens: int, usd: Decimal) -> bool:
    """Add ``tokens`` and ``usd`` to the day's counts if both stay within ``cap``; say if
    they did."""
    within: dict[str, Any] = {}
    if cap.tokens is not None:
        within["used_tokens__lte"] = cap.tokens - tokens
    if cap.usd is not None:
        within["used_usd__lte"] = cap.usd - usd
    return bool(
        ledger.filter(**within).update(
            used_tokens=F("used_tokens") + tokens, used_usd=F("used_usd") + usd
        )
    )


def _reached(ledger: QuerySet[TokenLedger], cap: Cap, tokens: int, usd: Decimal) -> str:
    """Return the message of a reached cap, with the day's figures."""
    used_tokens, used_usd = ledger.values_list("used_tokens", "used_usd").first() or (0, 0)
    if cap.tokens is not None and used_tokens > cap.tokens - tokens:
        return (
            f"The daily token cap of this {cap.scope} is reached: {used_tokens:,} of "
            f"{cap.tokens:,} tokens used today (UTC), and the next call may use up to "
            f"{tokens:,}."
        )
    return (
        f"The daily USD cap of this {cap.scope} is reached: {usd_text(used_usd)} of "
        f"{usd_text(cap.usd)} USD spent today (UTC), and the next call may cost up to "
        f"{usd_text(usd)} USD."
    )


def _open(scope: str, scope_id: int, day: date) -> None:
    """Open a scope's ledger of ``day`` with what its stored calls of the day used and
    cost."""
    owner = {TokenScope.USER: "owner_id", TokenScope.SCHEDULE: "schedule_id"}
    spent = spend_of(since=day, **{owner[scope]: scope_id})
    row = TokenLedger(
        scope=scope, scope_id=scope_id, day=day, used_tokens=spent.tokens, used_usd=spent.cost_usd
    )
    TokenLedger.objects.bulk_create([row], ignore_conflicts=True)


def budget_settle(reservation: Reservation | None, used: int, cost: Decimal = Decimal(0)) -> None:
    """Count what a call used and cost instead of what it reserved."""
    if reservation is None or (used, cost) == (reservation.tokens, reservation.usd):
        return
    for scope, scope_id in reservation.scopes:
        TokenLedger.objects.filter(scope=scope, scope_id=scope_id, day=reservation.day).update(
            used_tokens=F("used_tokens") + (used - reservation.tokens),
            used_usd=F("used_usd") + (cost - reservation.usd),
        )
