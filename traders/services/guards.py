"""Applying a strategy's portfolio guards (``traders.guards``) to a trader.

``guards_check`` runs whenever a trader's account is measured for a decision: when a
debate's prepare step reads its book, and before an execution opens a position. Under
the trader's row lock it raises the account's peak equity, starts a new day's equity at
the first measure of a UTC day (the account's clock: a paper trader's market instant),
lifts a pause whose time has come, and pauses the trader when a guard trips, with the
guard, why, when and until when. A paused trader opens nothing (``debates.engine.book``:
an opening does only its closes); closes, stops and targets go on. ``trader_resume``
is the owner's lift: it also measures the guards afresh from then on.
"""

from __future__ import annotations

import logging
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.db import transaction

from arena import metrics
from arena.queries import owned_by, owned_or_404
from strategies.models import Strategy
from traders import events, locks
from traders.exchanges.paper import paper_now
from traders.guards import AccountFacts, GuardLimits, Trip, tripped
from traders.models import Exchange, Position, PositionStatus, Trader
from traders.risk import Funds

logger = logging.getLogger(__name__)

_PAUSE_CLEARED = {
    "paused_guard": "",
    "paused_reason": "",
    "paused_at": None,
    "paused_until": None,
}


def guard_limits(strategy: Strategy | None) -> GuardLimits:
    """Return the guards of ``strategy`` (none without one)."""
    if strategy is None:
        return GuardLimits()
    return GuardLimits(
        daily_loss_pct=strategy.daily_loss_limit_pct,
        max_drawdown_pct=strategy.max_drawdown_pct,
        stop_outs=strategy.stop_out_cooldown,
        cooldown_minutes=strategy.cooldown_minutes,
        max_exposure=strategy.max_gross_exposure,
    )


def account_instant(trader: Trader, default: datetime) -> datetime:
    """Return the instant a trader's account is at: a paper trader's clock, the instant
    its orders fill at and its positions open and close at (``paper_now``: the dataset's
    end before it has traded), else ``default`` (now)."""
    if trader.exchange == Exchange.PAPER:
        return paper_now(trader)
    return default


def guards_check(
    *,
    trader_id: int,
    funds: Funds,
    exposure: Decimal,
    now: datetime,
    strategy: Strategy | None,
    debate_id: int | None = None,
) -> Trader:
    """Measure the account at ``now`` and apply the guards (see the module docstring);
    return the trader as it is after. ``debate_id``: the debate a trip is announced on."""
    with transaction.atomic():
        trader = locks.lock_trader(trader_id=trader_id)
        if funds.equity is None:
            return trader  # an account whose equity is unknown is not measured
        fields = _measured(trader, funds.equity, now)
        if trader.paused_guard and trader.paused_until and trader.paused_until <= now:
            fields.update(_PAUSE_CLEARED, guards_since=now)
        trader = _saved(trader, fields)
        if trader.paused_guard:
            return trader
        facts = AccountFacts(
            now=now,
            equity=funds.equity,
            day_start_equity=trader.day_start_equity,
            peak_equity=trader.peak_equity,
            exposure=exposure,
            closes=_closes_since(trader),
        )
        trip = tripped(guard_limits(strategy), facts)
        if trip is not None:
            trader = _paused(trader, trip, now, debate_id)
    return trader


def _measured(trader: Trader, equity: Decimal, now: datetime) -> dict[str, Any]:
    """Return the baselines the guards measure from at ``now``: the peak raised, a new
    day's starting equity at the first measure of a UTC day."""
    fields: dict[str, Any] = {"peak_equity": max(trader.peak_equity or equity, equity)}
    if trader.day_started != now.date():
        fields.update(day_started=now.date(), day_start_equity=equity)
    return fields


def _saved(trader: Trader, fields: dict[str, Any]) -> Trader:
    Trader.objects.filter(pk=trader.pk).update(**fields)
    for name, value in fields.items():
        setattr(trader, name, value)
    return trader


def _closes_since(trader: Trader) -> list[str]:
    """Return why the trader's positions closed since its guards were last cleared, the
    newest first."""
    closed = Position.objects.filter(trader=trader, status=PositionStatus.CLOSED)
    if trader.guards_since is not None:
        closed = closed.filter(closed_at__gt=trader.guards_since)
    return list(closed.order_by("-closed_at", "-id").values_list("close_reason", flat=True)[:50])


def _paused(trader: Trader, trip: Trip, now: datetime, debate_id: int | None) -> Trader:
    """Pause ``trader`` (locked, not paused) for ``trip`` and announce it."""
    logger.warning("trader %s paused: %s", trader.pk, trip.reason)
    metrics.record_on_commit(metrics.GUARD_TRIPS.inc(guard=trip.guard))
    trader = _saved(
        trader,
        {
            "paused_guard": trip.guard,
            "paused_reason": trip.reason,
            "paused_at": now,
            "paused_until": trip.lifts_at,
        },
    )
    if debate_id is not None:
        events.execution_refused(debate_id, code="trader_paused", message=trip.reason)
    return trader


def trader_resume(*, trader_id: int, owner: Any | None = None, now: datetime) -> Trader:
    """Lift a trader's pause (its owner's resume): no guard counts what came before
    ``now``, the account's instant; the peak and the day's start are measured afresh."""
    with transaction.atomic():
        owned_or_404(owned_by(Trader.objects.all(), owner), trader_id, "Trader")
        locked = locks.lock_trader(trader_id=trader_id)
        return _saved(
            locked,
            {
                **_PAUSE_CLEARED,
                "guards_since": account_instant(locked, now),
                "peak_equity": None,
                "day_start_equity": None,
                "day_started": None,
            },
        )
