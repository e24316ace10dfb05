"""Reads of backtests, each with a fixed number of queries."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django_eventstream import get_current_event_id

from arena.exceptions import NotFound
from backtests.events import backtest_channel
from backtests.models import Backtest


def backtest_list(*, owner: Any, status: str | None = None) -> QuerySet[Backtest]:
    """Return the owner's backtests, newest first, optionally of one status; their
    reports (the detail's) are left unread."""
    queryset = Backtest.objects.filter(owner=owner).defer("report")
    if status:
        queryset = queryset.filter(status=status)
    return queryset.order_by("-created_at", "-id")


def backtest_get(*, backtest_id: int, owner: Any | None = None) -> Backtest:
    """Return one backtest; another user's is not found."""
    queryset = Backtest.objects.all() if owner is None else Backtest.objects.filter(owner=owner)
    backtest = queryset.filter(pk=backtest_id).first()
    if backtest is None:
        raise NotFound("Backtest not found.")
    return backtest


def backtest_representation(*, backtest_id: int, owner: Any | None = None) -> dict[str, Any]:
    """Return the detail representation (REST, the ``initial`` event, ``manage.py backtest``).

    The event id is read first: a client resuming from it may see an event twice (and
    drops it by id), never miss one.
    """
    from backtests.serializers import BacktestDetailSerializer

    event_id = get_current_event_id([backtest_channel(backtest_id)])
    backtest = backtest_get(backtest_id=backtest_id, owner=owner)
    return BacktestDetailSerializer(backtest, context={"event_id": event_id}).data
