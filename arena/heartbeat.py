"""A heartbeat: call a function every few seconds while a block of work runs.

Used to keep leases and claims alive exactly as long as their holder is: a holder that
dies stops beating, and its lease runs out soon after.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterator

from django.db import connection

logger = logging.getLogger(__name__)


@contextlib.contextmanager
def heartbeat(beat: Callable[[], None], *, every_s: float, name: str) -> Iterator[None]:
    """Call ``beat()`` every ``every_s`` seconds in a thread for the ``with`` block."""
    stop = threading.Event()

    def run() -> None:
        try:
            while not stop.wait(every_s):
                beat()
        except Exception:
            logger.exception("heartbeat %s stopped", name)
        finally:
            connection.close()  # the thread's own database connection, if it opened one

    thread = threading.Thread(target=run, name=f"heartbeat-{name}", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()
