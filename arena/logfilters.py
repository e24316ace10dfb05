"""Logging filters of the project (``LOGGING`` in the settings).

``QuietWatchdogs``: Celery beat sends the watchdogs and sweeps of
``CELERY_BEAT_SCHEDULE`` every few seconds, and beat logs each sending, the worker each
receipt and each success, at INFO: 150 lines in 90 s of an idle stack. Those lines go to
DEBUG, except a run's success whose result names what it acted on (the debates it
resumed, the stops it filled: a non-empty list), which stays at INFO.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from django.conf import settings

# What a task that did nothing returns, as Celery's success line shows it.
IDLE_RESULTS = frozenset({"None", "[]", "()", "{}", "0", "False", ""})
# Celery's loggers of a task sent by beat, received by a worker and run by it.
SENT, RECEIVED, RAN = "celery.beat", "celery.worker.strategy", "celery.app.trace"


class QuietWatchdogs(logging.Filter):
    """Log the sending, receipt and idle runs of the beat schedule's tasks at DEBUG."""

    def __init__(self, name: str = "") -> None:
        super().__init__(name)
        self.tasks = frozenset(entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values())

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno != logging.INFO or not self._idle(record):
            return True
        record.levelno, record.levelname = logging.DEBUG, logging.getLevelName(logging.DEBUG)
        return logging.getLogger(record.name).isEnabledFor(logging.DEBUG)

    def _idle(self, record: logging.LogRecord) -> bool:
        """Whether ``record`` tells of a beat task that has not acted (yet)."""
        args = record.args
        if record.name == SENT:
            return isinstance(args, tuple) and len(args) == 2 and args[1] in self.tasks
        if not isinstance(args, Mapping) or args.get("name") not in self.tasks:
            return False
        if record.name == RECEIVED:
            return True
        return (
            record.name == RAN
            and "return_value" in args
            and (str(args["return_value"]) in IDLE_RESULTS)
        )
