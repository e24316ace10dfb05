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
from decimal import Decimal
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction
from django.db.models import ProtectedError
from drf_spectacular.utils import extend_schema_serializer
from rest_framework import serializers

from arena.exceptions import Conflict
from arena.inputs import (
    StrictBooleanField,
    StrictCharField,
    StrictChoiceField,
    StrictDecimalField,
    StrictIntegerField,
    StrictSerializer,
    requires_when,
    validate,
)
from arena.queries import owned_or_404
from strategies.models import MarketSource
from traders.models import Exchange, Trader, TraderStatus

FIXED_AFTER_CREATE = ("exchange", "starting_balance", "market_source")


def _secret(help_text: str) -> StrictCharField:
    return StrictCharField(
        required=False,
        allow_blank=True,
        max_length=500,
        write_only=True,
        help_text=f"{help_text} Stored encrypted, never returned; on update an empty "
        "string removes it.",
    )


@extend_schema_serializer(component_name="TraderInput")
class TraderInputSerializer(StrictSerializer):
    model = Trader
    schema_rules = (
        requires_when(
            "exchange", ["binanceusdm", "bybit", "okx"], "api_key", "api_secret", default="paper"
        ),
        requires_when("exchange", ["okx"], "api_passphrase", default="paper"),
    )

    name = StrictCharField(max_length=100)
    exchange = StrictChoiceField(
        choices=Exchange.choices, required=False, help_text="Fixed once the trader exists."
    )
    api_key = _secret("Required for a real exchange.")
    api_secret = _secret("Required for a real exchange.")
    api_passphrase = _secret("Required for OKX.")
    sandbox = StrictBooleanField(required=False)
    status = StrictChoiceField(choices=TraderStatus.choices, required=False)
    requires_approval = StrictBooleanField(
        required=False,
        help_text="An exchange account's automatic executions wait for your approval "
        "(default true; a paper account never waits).",
    )
    approval_minutes = StrictIntegerField(
        required=False,
        min_value=1,
        max_value=1440,
        help_text="How long an automatic execution waits for approval before it lapses.",
    )
    starting_balance = StrictDecimalField(
        max_digits=20,
        decimal_places=8,
        min_value=Decimal("0.00000001"),
        error_messages={"min_value": "Must be more than 0."},
        required=False,
        help_text="Paper: the USDT it starts with. Fixed once the trader exists.",
    )
    fee_rate = StrictDecimalField(
        max_digits=8,
        decimal_places=6,
        min_value=Decimal("0"),
        max_value=Decimal("0.099999"),
        required=False,
        help_text="Paper: fee per fill, as a fraction (0.0004 = 0.04 %).",
    )
    market_source = StrictChoiceField(
        choices=MarketSource.choices,
        required=False,
        help_text="Paper: where prices come from. Fixed once the trader exists.",
    )

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        """Refuse a change of what is fixed once the account exists, then an exchange
        without the credentials it needs."""
        fixed = [name for name in FIXED_AFTER_CREATE if self._changes(attrs, name)]
        if fixed:
            message = "Cannot change once the trader exists; create a new trader."
            raise serializers.ValidationError({name: [message] for name in fixed})
        trader = self.state(attrs)
        missing = [name for name in _credentials(trader["exchange"]) if not trader[name]]
        if missing:
            message = f"Required for the {trader['exchange']} exchange."
            raise serializers.ValidationError({name: [message] for name in missing})
        return attrs

    def _changes(self, attrs: dict[str, Any], name: str) -> bool:
        """Say whether ``attrs`` change field ``name`` of the stored trader."""
        return (
            self.instance is not None
            and name in attrs
            and attrs[name] != getattr(self.instance, name)
        )


def _credentials(exchange: str) -> tuple[str, ...]:
    """Return the credentials a real exchange's requests are signed with (paper: none)."""
    if exchange == Exchange.PAPER:
        return ()
    return ("api_key", "api_secret", *(("api_passphrase",) if exchange == Exchange.OKX else ()))


def trader_create(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> Trader:
    """Create a trader account; a paper account starts with ``starting_balance``."""
    trader = Trader(owner=owner, **validate(TraderInputSerializer, data))
    trader.balance = trader.starting_balance
    trader.save()
    return trader


def trader_update(*, owner: AbstractBaseUser, trader_id: int, changes: Mapping[str, Any]) -> Trader:
    """Change the fields in ``changes``; a secret given as ``""`` is removed.

    The exchange, the starting balance and the market source cannot change: create
    another trader instead.
    """
    trader = owned_or_404(Trader.objects.filter(owner=owner), trader_id, "Trader")
    values = validate(TraderInputSerializer, changes, instance=trader, partial=True)
    # Only the named columns: the balance is written by execution, concurrently.
    for name, value in values.items():
        setattr(trader, name, value)
    trader.save(update_fields=[*values, "updated_at"])
    return trader


def trader_delete(*, owner: AbstractBaseUser, trader_id: int) -> None:
    """Delete a trader unless it has executions or automatic execution relies on it (409)."""
    from debates.models import ACTIVE_STATUSES, Debate, DebateStatus, Schedule

    trader = owned_or_404(Trader.objects.filter(owner=owner), trader_id, "Trader")
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
