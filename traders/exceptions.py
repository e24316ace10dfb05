"""Refusals of the trading services, each with a stable code (SPEC 6 and 10)."""

from __future__ import annotations

from rest_framework import status

from arena.exceptions import ApplicationError


class NotExecutable(ApplicationError):
    """The decision cannot be executed: it says hold or wait, or the trader cannot trade."""

    code = "not_executable"
    status_code = status.HTTP_409_CONFLICT
    default_message = "This decision cannot be executed."


class TraderStopped(NotExecutable):
    """The trader is stopped: it executes nothing until it is started again."""

    code = "trader_stopped"
    default_message = "The trader is stopped."


class AlreadyExecuted(ApplicationError):
    """The decision was already executed, on a different trader."""

    code = "already_executed"
    status_code = status.HTTP_409_CONFLICT
    default_message = "This decision was already executed on another trader."


class StaleDecision(ApplicationError):
    """The decision is too old, or its price moved too far, to be executed now."""

    code = "stale_decision"
    status_code = status.HTTP_409_CONFLICT
    default_message = "This decision is stale."


class ReconcileBusy(ApplicationError):
    """Another pass is reconciling the trader with its exchange right now."""

    code = "reconcile_busy"
    status_code = status.HTTP_409_CONFLICT
    default_message = "This trader is being reconciled right now; try again in a moment."


class ExchangeFailed(ApplicationError):
    """The trader's exchange could not be read, or refused the request."""

    code = "exchange_error"
    status_code = status.HTTP_502_BAD_GATEWAY
    default_message = "The exchange could not be read."
