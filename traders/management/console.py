"""What the console commands (``run_debate``, ``backtest``) share: their logging, their
refusals naming the flags, and how Ctrl-C stops the run they follow."""

from __future__ import annotations

import logging
import signal
from typing import NoReturn

from rich.console import Console

from arena.exceptions import ApplicationError


def quiet_task_logs() -> None:
    """Keep the in-process worker's bookkeeping (Celery's, the providers' and the step
    log's INFO lines) off a command's console, where the output is the command's own."""
    for name in ("celery", "debates.providers", "debates.step_log"):
        logging.getLogger(name).setLevel(logging.WARNING)


def flag_of(field_name: str, flags: dict[str, str]) -> str | None:
    """Return the flag of ``flags`` behind an input field (``participants[1].ai_model``
    is --models), or None for a field no flag sets (a quota's count)."""
    if field_name.startswith("participants["):
        return "--models" if field_name.endswith(".ai_model") else "--participants"
    return flags.get(field_name)


def refusal_line(exc: ApplicationError, flags: dict[str, str]) -> str:
    """Return a refusal as one line naming the flags of ``flags`` (each input field's):
    ``--rounds: Must be between ...``; a refusal no flag caused (a quota) is its message."""
    named = {name: flag_of(name, flags) for name in exc.fields}
    if not any(named.values()):
        return exc.message
    return " ".join(
        f"{named[name] or name}: {' '.join(str(m) for m in messages)}"
        for name, messages in exc.fields.items()
    )


class Interrupted(Exception):
    """Ctrl-C, raised where a command checks for it (``CtrlC.check``)."""


class CtrlC:
    """Ctrl-C (SIGINT) held until the command checks for it, where it waits.

    Python raises ``KeyboardInterrupt`` wherever the main thread happens to be. On the
    embedded default's SQLite file that can be in the middle of a read, which then keeps
    its lock: the cancel that follows waits for it, and the command hangs for a minute
    and leaves its run going. Or between a commit and its hooks: a backtest is stored
    but its first tick is never sent. Within ``with CtrlC() as ctrl_c:``, Ctrl-C only
    sets a flag, and ``ctrl_c.check()`` raises ``Interrupted`` at the points the
    command chooses. A second Ctrl-C raises ``KeyboardInterrupt`` at once.
    """

    def __init__(self) -> None:
        self.pressed = False  # set by the handler, which runs in the main thread

    def _press(self, signum: int, frame: object) -> None:
        if self.pressed:
            raise KeyboardInterrupt
        self.pressed = True

    def __enter__(self) -> CtrlC:
        self._previous = signal.signal(signal.SIGINT, self._press)
        return self

    def __exit__(self, *exc_info: object) -> None:
        signal.signal(signal.SIGINT, self._previous)

    def check(self) -> None:
        """Raise ``Interrupted`` if Ctrl-C was pressed."""
        if self.pressed:
            raise Interrupted


def exit_interrupted(console: Console, line: str) -> NoReturn:
    """Print ``line`` (what became of the run Ctrl-C stopped) and exit with 130, as a
    shell does for Ctrl-C."""
    console.print(line)
    # The in-process worker's threads (embedded default) end with the process: what
    # they would log about the steps they drop and the pool shutting down is noise.
    logging.disable(logging.CRITICAL)
    raise SystemExit(130)
