"""Running a piece of work in other threads, as concurrent requests or workers would.

Each thread has a database connection of its own, closed when its work ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

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
