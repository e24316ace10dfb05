"""A heartbeat: call a function every few seconds while a block of work runs.

Used to keep leases and claims alive exactly as long as their holder is: a holder that
dies stops beating, and its lease runs out soon after. One daemon thread per process
calls the beats of every block (a thread started and joined per block cost each debate
step about a millisecond). A beat that raises is logged and stops its own heartbeat.
"""

from __future__ import annotations

import contextlib
import itertools
import logging
import os
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from django.db import close_old_connections

logger = logging.getLogger(__name__)

# A freshly started worker picks up the work a dead one left behind this long after the
# dead one's leases (step claims, model slots, executions) have run out.
RESUME_ON_BOOT_MARGIN_S = 5


@dataclass
class _Beat:
    call: Callable[[], None]
    every_s: float
    name: str
    due: float


class _Beater:
    """The process's heartbeat thread and the beats it calls when they fall due."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._beats: dict[int, _Beat] = {}
        self._calling: int | None = None
        self._tokens = itertools.count()
        self._started = False

    def add(self, call: Callable[[], None], every_s: float, name: str) -> int:
        """Call ``call`` every ``every_s`` seconds from now on; return its token."""
        with self._changed:
            if not self._started:
                threading.Thread(target=self._run, name="heartbeats", daemon=True).start()
                self._started = True
            token = next(self._tokens)
            self._beats[token] = _Beat(call, every_s, name, time.monotonic() + every_s)
            self._changed.notify_all()
            return token

    def remove(self, token: int) -> None:
        """Stop the beats of ``token``; if one is being called, wait until it returns."""
        with self._changed:
            self._beats.pop(token, None)
            while self._calling == token:
                self._changed.wait()

    def _next_due(self) -> tuple[int, _Beat]:
        # Called with the lock held: wait until a beat falls due and take it.
        while True:
            now = time.monotonic()
            if self._beats:
                token, beat = min(self._beats.items(), key=lambda item: item[1].due)
                if beat.due <= now:
                    beat.due = now + beat.every_s
                    self._calling = token
                    return token, beat
                self._changed.wait(timeout=beat.due - now)
            else:
                self._changed.wait()

    def _run(self) -> None:
        while True:
            with self._changed:
                token, beat = self._next_due()
            try:
                close_old_connections()  # the thread's own connection: drop it if broken
                beat.call()
            except Exception:
                logger.exception("heartbeat %s stopped", beat.name)
                with self._changed:
                    self._beats.pop(token, None)
            finally:
                close_old_connections()  # ... and let it go unless connections are kept
                with self._changed:
                    self._calling = None
                    self._changed.notify_all()


_beater = _Beater()


def _new_beater_in_child() -> None:
    # A forked child (a Celery pool process) has no heartbeat thread: it starts its own.
    global _beater
    _beater = _Beater()


os.register_at_fork(after_in_child=_new_beater_in_child)


@contextlib.contextmanager
def heartbeat(beat: Callable[[], None], *, every_s: float, name: str) -> Iterator[None]:
    """Call ``beat()`` every ``every_s`` seconds for the ``with`` block.

    No beat runs once the block has ended.
    """
    beater = _beater
    token = beater.add(beat, every_s, name)
    try:
        yield
    finally:
        beater.remove(token)
