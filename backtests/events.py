"""Payloads of a backtest's live events, published through ``arena.sse``.

Only services call these, inside the transaction that made the change; an event goes
out when it commits. ``status`` on each state change, ``progress`` ``{done, total}``
after each step that ends (its debate, and its baseline when it has one), ``report``
(the report, as the detail shows it) at the end.
"""

from __future__ import annotations

from arena.sse import open_channel, publish_on_commit
from backtests.models import Backtest

EVENT_TYPES = ("initial", "status", "progress", "report")


def backtest_channel(backtest_id: int) -> str:
    """Return the stream channel of a backtest."""
    return f"backtest-{backtest_id}"


def stream_opened(backtest_id: int) -> None:
    """Open a new backtest's stream with it."""
    open_channel(backtest_channel(backtest_id))


def status_changed(backtest: Backtest) -> None:
    """Announce the backtest's state."""
    from backtests.serializers import state

    publish_on_commit(backtest_channel(backtest.pk), "status", state(backtest))


def progress(backtest: Backtest) -> None:
    """Announce how many of the backtest's steps have ended."""
    publish_on_commit(
        backtest_channel(backtest.pk),
        "progress",
        {"done": backtest.steps_done, "total": backtest.steps_total},
    )


def report_ready(backtest: Backtest) -> None:
    """Announce the report of a backtest that has just completed."""
    publish_on_commit(backtest_channel(backtest.pk), "report", backtest.report)
