"""Creating, changing and deleting trader accounts (SPEC 10).

Credentials are write-only: stored encrypted, never returned. A real exchange account
needs its API key and secret (OKX also its passphrase); a paper account needs none.
The exchange, the starting balance and the market source are fixed once the account
exists: its balance, positions, orders and paper clock belong to them (a position opened
at a dataset instant has no stops to check against live prices). Execution itself lives
in ``traders.services``.
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError

from arena.exceptions import Conflict, NotFound, ValidationError
from traders.models import Exchange, Trader, TraderStatus

FIELDS = (
    "name",
    "exchange",
    "api_key",
    "api_secret",
    "api_passphrase",
    "sandbox",
    "status",
    "starting_balance",
    "fee_rate",
    "market_source",
)
SECRETS = ("api_key", "api_secret", "api_passphrase")
FIXED_AFTER_CREATE = ("exchange", "starting_balance", "market_source")
MARKET_SOURCES = ("dataset", "live")
MAX_SECRET_LENGTH = 500
MAX_BALANCE = Decimal("999999999999")
MAX_FEE_RATE = Decimal("0.1")


class _Refusals(dict):
    """Messages per bad field."""

    def add(self, name: str, message: str) -> None:
        self.setdefault(name, []).append(message)


def _decimal(value: Any) -> Decimal | None:
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        return None
    try:
        number = Decimal(str(value))
    except InvalidOperation:
        return None
    return number if number.is_finite() else None


def _clean(values: dict[str, Any]) -> dict[str, Any]:
    """Return ``values`` ready to store, or raise ``ValidationError`` naming every bad field."""
    refuse = _Refusals()
    for name in ("name", *SECRETS):
        if not isinstance(values[name], str):
            refuse.add(name, "Must be a string.")
            continue
        values[name] = values[name].strip()
        if name in SECRETS and len(values[name]) > MAX_SECRET_LENGTH:
            refuse.add(name, f"At most {MAX_SECRET_LENGTH} characters.")
    if isinstance(values["name"], str) and not values["name"]:
        refuse.add("name", "Required.")
    elif isinstance(values["name"], str) and len(values["name"]) > 100:
        refuse.add("name", "At most 100 characters.")

    exchange = values["exchange"]
    if exchange not in Exchange.values:
        refuse.add("exchange", f"{exchange!r} is not one of: {', '.join(Exchange.values)}.")
    elif exchange != Exchange.PAPER:
        needed = ("api_key", "api_secret", *(("api_passphrase",) if exchange == "okx" else ()))
        for name in needed:
            if values[name] == "":
                refuse.add(name, f"Required for the {exchange} exchange.")
    if values["status"] not in TraderStatus.values:
        refuse.add("status", f"{values['status']!r} is not one of: running, stopped.")
    if values["market_source"] not in MARKET_SOURCES:
        refuse.add("market_source", f"{values['market_source']!r} is not one of: dataset, live.")
    if not isinstance(values["sandbox"], bool):
        refuse.add("sandbox", "Must be true or false.")

    balance = _decimal(values["starting_balance"])
    if balance is None:
        refuse.add("starting_balance", "Must be a decimal number.")
    elif not Decimal(0) < balance <= MAX_BALANCE or balance != round(balance, 8):
        refuse.add(
            "starting_balance",
            f"Must be more than 0 and at most {MAX_BALANCE}, with at most 8 decimal places.",
        )
    values["starting_balance"] = balance
    fee_rate = _decimal(values["fee_rate"])
    if fee_rate is None:
        refuse.add("fee_rate", "Must be a decimal number.")
    elif not Decimal(0) <= fee_rate < MAX_FEE_RATE or fee_rate != round(fee_rate, 6):
        refuse.add(
            "fee_rate", "Must be at least 0 and below 0.1 (10 %), with at most 6 decimal places."
        )
    values["fee_rate"] = fee_rate

    if refuse:
        raise ValidationError(fields=dict(refuse))
    return values


def _unknown(data: Mapping[str, Any]) -> None:
    unknown = set(data) - set(FIELDS)
    if unknown:
        raise ValidationError(fields={name: ["Unknown field."] for name in sorted(unknown)})


def _owned(owner: AbstractBaseUser, trader_id: int) -> Trader:
    trader = Trader.objects.filter(owner=owner, pk=trader_id).first()
    if trader is None:
        raise NotFound("Trader not found.")
    return trader


def trader_create(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> Trader:
    """Create a trader account; a paper account starts with ``starting_balance``."""
    _unknown(data)
    defaults = {name: Trader._meta.get_field(name).get_default() for name in FIELDS}
    values = _clean({**defaults, **data})
    return Trader.objects.create(owner=owner, balance=values["starting_balance"], **values)


def trader_update(*, owner: AbstractBaseUser, trader_id: int, changes: Mapping[str, Any]) -> Trader:
    """Change the fields in ``changes``; a secret given as ``""`` is removed.

    The exchange, the starting balance and the market source cannot change: create
    another trader instead.
    """
    _unknown(changes)
    trader = _owned(owner, trader_id)
    current = {name: getattr(trader, name) for name in FIELDS}
    fixed = _Refusals()
    for name in FIXED_AFTER_CREATE:
        if name in changes and not _same(changes[name], current[name]):
            fixed.add(name, "Cannot change once the trader exists; create a new trader.")
    if fixed:
        raise ValidationError(fields=dict(fixed))
    values = _clean({**current, **changes})
    for name in FIXED_AFTER_CREATE:
        values.pop(name)
    # Only the named columns: the balance is written by execution, concurrently.
    for name, value in values.items():
        setattr(trader, name, value)
    trader.save(update_fields=[*values, "updated_at"])
    return trader


def _same(given: Any, stored: Any) -> bool:
    if isinstance(stored, Decimal):
        number = _decimal(given)
        return number is not None and number == stored
    return given == stored


def trader_delete(*, owner: AbstractBaseUser, trader_id: int) -> None:
    """Delete a trader unless it has executions or automatic execution relies on it (409)."""
    from debates.models import ACTIVE_STATUSES, Debate, DebateStatus, Schedule

    trader = _owned(owner, trader_id)
    relied_on = (
        Debate.objects.filter(
            trader=trader, auto_execute=True, status__in=(DebateStatus.PENDING, *ACTIVE_STATUSES)
        ).exists()
        or Schedule.objects.filter(trader=trader, auto_execute=True).exists()
    )
    if relied_on:
        raise Conflict(
            f"Trader {trader.name!r} executes a pending or running debate or a schedule "
            "automatically; change or delete those first."
        )
    try:
        with transaction.atomic():
            trader.delete()
    except (ProtectedError, IntegrityError) as exc:
        raise Conflict(
            f"Trader {trader.name!r} has executions, which are kept as a record; "
            "stop the trader instead."
        ) from exc
