"""Running a piece of work in other threads, as concurrent requests or workers would.

Each thread has a database connection of its own, closed when its work ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from django.db import connection


def _with_own_connection(work: Callable[[], None]) -> Callable[[], None]:
    def run() -> None:
        try:
            work()
        finally:
            connection.close()

    return run


def in_thread(work: Callable[[], None]) -> threading.Thread:
    """Start ``work`` in a thread of its own and return the thread."""
    thread = threading.Thread(target=_with_own_connection(work))
    thread.start()
    return thread


def run_at_once(work: Callable[[], None], count: int, *, timeout: float = 60.0) -> None:
    """Run ``work`` in ``count`` threads started together and wait for them all."""
    threads = [threading.Thread(target=_with_own_connection(work)) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)


Result = TypeVar("Result")


def results_at_once(work: Callable[[], Result], count: int) -> list[Result]:
    """Run ``work`` in ``count`` threads at once; return what each returned, in the order
    they returned."""
    results: list[Result] = []
    run_at_once(lambda: results.append(work()), count)
    return results


def outcomes_at_once(work: Callable[[], object], count: int) -> list[str]:
    """Run ``work`` in ``count`` threads at once; return, sorted, what each got: "done",
    or the ``code`` of the error that refused it."""
    outcomes: list[str] = []

    def counted() -> None:
        try:
            work()
            outcomes.append("done")
        except Exception as exc:  # the refusals are what is counted
            outcomes.append(getattr(exc, "code", repr(exc)))

    run_at_once(counted, count)
    return sorted(outcomes)
