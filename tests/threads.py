"""Running a piece of work in many threads at once, as concurrent requests would."""

from __future__ import annotations

import threading
from collections.abc import Callable

from django.db import connection


def run_at_once(work: Callable[[], None], count: int, *, timeout: float = 60.0) -> None:
    """Run ``work`` in ``count`` threads started together and wait for them all.

    Each thread has a database connection of its own, closed when its work ends.
    """

    def run() -> None:
        try:
            work()
        finally:
            connection.close()

    threads = [threading.Thread(target=run) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
