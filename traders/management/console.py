"""What the console commands (``run_debate``, ``backtest``) share: their console and
logging, their refusals naming the flags, and how Ctrl-C (or SIGTERM, SIGHUP) and
``--timeout`` stop the run they follow."""

from __future__ import annotations

import argparse
import errno
import logging
import os
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, NoReturn

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db.models import Model
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from arena.exceptions import ApplicationError
from debates.engine.personalities import PERSONALITIES
from debates.models import AIModel

# How often a command looks at the run it follows.
POLL_S = 0.2


class ConsoleCommand(BaseCommand):
    """A command that starts a run and follows it on the console."""

    def console(self, options: dict[str, Any]) -> Console:
        """Return the console this run prints to (``command_console``), with the
        in-process worker's bookkeeping kept off it: the command's output is its own."""
        quiet_task_logs()
        return command_console(
            stderr=options["json"],
            no_color=options["no_color"],
            force_color=options["force_color"],
        )

    def run_from_argv(self, argv: list[str]) -> None:
        try:
            super().run_from_argv(argv)
        finally:
            # The in-process worker's threads (embedded default) end with the process:
            # what they would log about the steps they drop and the pool shutting down
            # is noise. (Not in ``handle``: ``call_command`` runs it in a process that
            # goes on.)
            logging.disable(logging.CRITICAL)


def command_console(
    *, stderr: bool = False, no_color: bool = False, force_color: bool = False
) -> Console:
    """Return the console a command prints to: stdout, or stderr when stdout carries
    ``--json``; plain text with Django's ``--no-color`` (no style at all), styled even
    when piped with its ``--force-color``. Once its terminal hangs up, what it prints
    is dropped (``_Output``)."""
    return Console(
        file=_Output(sys.stderr if stderr else sys.stdout),
        highlight=False,
        color_system=None if no_color else "auto",
        force_terminal=True if force_color else None,
    )


def print_whole(console: Console, table: Table) -> None:
    """Print ``table`` at its natural width (each column as wide as its widest line),
    even wider than the console: a terminal too narrow wraps its lines, where the
    console would cut figures short ("39.…")."""
    fits = Measurement.get(console, console.options.update_width(1_000), table).maximum
    width = console.width
    console.width = max(width, fits)  # print's own width is held to the console's
    try:
        console.print(table)
    finally:
        console.width = width


def seconds(text: str) -> float:
    """Return a positive number of seconds (``--timeout``)."""
    value = float(text)  # a ValueError: argparse says "invalid seconds value"
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds; got {text}")
    return value


class _Output:
    """A console's file, whose writes fail with EIO once its terminal has hung up.

    The hang-up's SIGHUP (``StopSignals``) is handled by the main thread at its next
    instruction, which may come after a write has failed: the failure would end the
    command before it cancels its run. So a write the terminal refuses is dropped.
    """

    def __init__(self, file) -> None:
        self._file = file

    def write(self, text: str) -> int:
        try:
            return self._file.write(text)
        except OSError as exc:
            if exc.errno != errno.EIO:
                raise
            return len(text)

    def flush(self) -> None:
        try:
            self._file.flush()
        except OSError as exc:
            if exc.errno != errno.EIO:
                raise

    def __getattr__(self, name: str):  # isatty, fileno, encoding: the file's own
        return getattr(self._file, name)


def problem(error: dict | None, *, markup: bool = True) -> str:
    """Return a stored error (a failed step's, or a debate's with the step that failed) as
    ``step: code: message``, escaped for the console's markup unless ``markup`` is off."""
    error = error or {}
    parts = (error.get(key) for key in ("step", "code", "message"))
    text = ": ".join(str(part) for part in parts if part)
    return escape(text) if markup else text


def command_owner(username: str):
    """Return the user ``--user`` names, made on first use (the embedded default's users
    are made this way)."""
    if not username.strip():
        raise CommandError("--user: give a user name")
    owner, _ = get_user_model().objects.get_or_create(username=username)
    return owner


def personalities_of(text: str) -> list[str]:
    """Return the personalities of ``--participants`` (comma-separated)."""
    return [p.strip() for p in text.split(",") if p.strip()]


def seats(models: list[AIModel], personalities: list[str]) -> list[dict[str, Any]]:
    """Return the participants of a run's input: each seat's model and personality."""
    return [
        {"ai_model": model.pk, "personality": personality}
        for model, personality in zip(models, personalities, strict=True)
    ]


def seat_models(owner, personalities: list[str], ids: str) -> list[AIModel]:
    """Return the models of the seats of ``personalities``: the owner's models of
    ``--models`` (comma-separated ids, one per seat), else the simulated model."""
    unknown = [p for p in personalities if p not in PERSONALITIES]
    if unknown:
        raise CommandError(
            f"--participants: unknown {', '.join(unknown)}; one of {', '.join(PERSONALITIES)}"
        )
    if ids:
        return _owned_models(owner, ids, len(personalities))
    model, _ = AIModel.objects.get_or_create(
        owner=owner,
        provider="simulated",
        name="Simulated model",
        defaults={"model_name": "simulated-v1"},
    )
    return [model] * len(personalities)


def _owned_models(owner, ids: str, count: int) -> list[AIModel]:
    """Return the owner's models of ``--models``, one per seat, in the order given."""
    try:
        wanted = [int(i) for i in ids.split(",")]
    except ValueError as exc:
        raise CommandError("--models: give model ids, e.g. --models 3,4,5") from exc
    found = {m.pk: m for m in AIModel.objects.filter(owner=owner, pk__in=wanted)}
    if len(wanted) != count or set(wanted) - set(found):
        raise CommandError("--models needs one model id of yours per participant")
    return [found[i] for i in wanted]


def quiet_task_logs() -> None:
    """Keep the in-process worker's bookkeeping (Celery's, the providers' and the step
    log's INFO lines) off a command's console, where the output is the command's own."""
    for name in ("celery", "debates.providers", "debates.services", "debates.step_log"):
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
    """A stop signal, raised where a command checks for it (``StopSignals.check``)."""


class TimedOut(Exception):
    """The command's ``--timeout`` passed before the run it follows ended."""


# The signals that ask a command to stop: Ctrl-C, ``kill`` (and ``timeout``, ``docker
# stop``, a service manager), the terminal closed.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopSignals:
    """Ctrl-C (SIGINT), SIGTERM and SIGHUP held until the command checks for them, where
    it waits.

    Python raises ``KeyboardInterrupt`` for Ctrl-C wherever the main thread happens to
    be. On the embedded default's SQLite file that can be in the middle of a read, which
    then keeps its lock: the cancel that follows waits for it, and the command hangs for
    a minute and leaves its run going. Or between a commit and its hooks: a backtest is
    stored but its first tick is never sent. SIGTERM and SIGHUP end the process at once,
    and on the embedded default its run stays running with no worker to take it on.
    Within ``with StopSignals() as stop:``, each only sets ``stop.received``, and
    ``stop.check()`` raises ``Interrupted`` at the points the command chooses. A second
    signal raises ``KeyboardInterrupt`` at once.

    A closed terminal takes the console with it: on SIGHUP, what was written to the
    terminal goes to ``/dev/null`` from then on (and a console of ``command_console``
    drops what the terminal refused before), so the command can still cancel its run and
    exit; a redirected output keeps its file.
    """

    def __init__(self) -> None:
        self.received: signal.Signals | None = None  # set by the handler, in the main thread

    def _receive(self, signum: int, frame: object) -> None:
        if self.received is not None:
            raise KeyboardInterrupt
        if signum == signal.SIGHUP:
            _detach_from_terminal()
        self.received = signal.Signals(signum)

    def __enter__(self) -> StopSignals:
        self._previous = {signum: signal.signal(signum, self._receive) for signum in STOP_SIGNALS}
        return self

    def __exit__(self, *exc_info: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)

    def check(self) -> None:
        """Raise ``Interrupted`` if a stop signal was received."""
        if self.received is not None:
            raise Interrupted


def _detach_from_terminal() -> None:
    """Point the standard output and error that are a terminal at ``/dev/null``."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for fd in (1, 2):
        if os.isatty(fd):
            os.dup2(devnull, fd)
    os.close(devnull)


def poll(stop: StopSignals, timeout: float, ended: Callable[[], bool]) -> None:
    """Call ``ended`` (which shows what is new) every ``POLL_S`` until it says the run
    ended; raise ``Interrupted`` on a stop signal, checked before each call, and
    ``TimedOut`` once ``timeout`` seconds have passed."""
    deadline = time.monotonic() + timeout
    while True:
        stop.check()
        if ended():
            return
        if time.monotonic() > deadline:
            raise TimedOut
        time.sleep(POLL_S)


@contextmanager
def cancelled_when_stopped(
    console: Console, stop: StopSignals, timeout: float, run: Model, cancel: Callable[[], Model]
) -> Iterator[None]:
    """Follow ``run`` (a debate or a backtest) within the block; on a stop signal or the
    timeout, cancel it and end the command saying so ("debate 7 cancelled"): 128 plus
    the signal, or a ``--timeout`` error. A run that has ended (``cancel`` refuses)
    stays as it ended."""
    try:
        yield
    except Interrupted:
        exit_interrupted(console, stop, f"Interrupted: {_cancelled(run, cancel)}.")
    except TimedOut:
        raise CommandError(f"--timeout: {timeout:g} s passed; {_cancelled(run, cancel)}.") from None


def _cancelled(run: Model, cancel: Callable[[], Model]) -> str:
    """Cancel ``run`` unless it has ended; return it and its status ("debate 7 cancelled")."""
    try:
        status = cancel().status
    except ApplicationError:
        status = type(run).objects.get(pk=run.pk).status
    return f"{run._meta.model_name} {run.pk} {status}"


def exit_interrupted(console: Console, stop: StopSignals, line: str) -> NoReturn:
    """Print ``line`` (what became of the run the signal stopped) and exit with 128 plus
    the signal's number (130 for Ctrl-C), as a shell does."""
    console.print(line)
    raise SystemExit(128 + (stop.received or signal.SIGINT))
