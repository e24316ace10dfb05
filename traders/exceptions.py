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
