"""The commands hold Ctrl-C, SIGTERM and SIGHUP until they check for them
(``StopSignals``), so none lands in the middle of a database statement or between a
commit and its hooks, and none ends the process before it has cancelled its run."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys

import pytest
from django.conf import settings

from traders.management.console import STOP_SIGNALS, Interrupted, StopSignals

SIGNALS = pytest.mark.parametrize("signum", STOP_SIGNALS, ids=lambda s: s.name)


def _receive(signum: int) -> None:
    os.kill(os.getpid(), signum)  # its handler runs before the next line does


@SIGNALS
def test_a_signal_in_the_block_waits_for_the_check(signum):
    # given a block holding the stop signals
    with StopSignals() as stop:
        stop.check()  # nothing received yet
        # when the signal comes while the block does something else
        try:
            _receive(signum)
        except KeyboardInterrupt:
            pytest.fail(f"{signum.name} interrupted the work in the block")
        # then the work went on, and the next check raises, naming the signal
        with pytest.raises(Interrupted):
            stop.check()
        assert stop.received == signum


def test_a_second_signal_stops_at_once():
    with StopSignals(), pytest.raises(KeyboardInterrupt):
        _receive(signal.SIGTERM)
        _receive(signal.SIGINT)


def test_the_handlers_before_the_block_are_put_back():
    before = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    with StopSignals():
        assert all(signal.getsignal(signum) is not before[signum] for signum in STOP_SIGNALS)
    assert {signum: signal.getsignal(signum) for signum in STOP_SIGNALS} == before


# A command printing to its console when its terminal hangs up: it waits for a line on
# its input (sent once the terminal is gone), prints, gets the SIGHUP, prints, checks.
_HUNG_UP = """
import os, signal, sys, django
django.setup()
from traders.management.console import Interrupted, StopSignals, command_console, exit_interrupted
with StopSignals() as stop:
    console = command_console()
    sys.stdin.readline()
    console.print("written as the terminal hangs up")
    os.kill(os.getpid(), signal.SIGHUP)
    console.print("written after the hang-up")
    try:
        stop.check()
    except Interrupted:
        exit_interrupted(console, stop, "Interrupted: the last line.")
"""


def _hang_up(stdout, before_the_line=lambda: None) -> subprocess.Popen:
    command = subprocess.Popen(
        [sys.executable, "-c", _HUNG_UP],
        cwd=settings.BASE_DIR,
        env=os.environ | {"DJANGO_SETTINGS_MODULE": "arena.settings.local"},
        stdin=subprocess.PIPE,
        stdout=stdout,
        stderr=subprocess.STDOUT,
    )
    before_the_line()
    command.communicate(b"go\n", timeout=60)
    return command


def test_a_command_whose_terminal_hung_up_still_stops_as_asked():
    # given a command whose output is a terminal
    terminal, its_end = pty.openpty()
    # when the terminal is closed (its writes fail from then on) and the command prints,
    # gets the SIGHUP and prints again
    done = _hang_up(its_end, before_the_line=lambda: (os.close(its_end), os.close(terminal)))
    # then it exits as a shell reports a hang-up (a failed write would have ended it
    # with 1 before it checked)
    assert done.returncode == 128 + signal.SIGHUP


def test_after_a_hang_up_a_redirected_output_keeps_its_file(tmp_path):
    # given a command whose output goes to a file
    with open(tmp_path / "out.txt", "wb") as out:
        # when the terminal it ran from hangs up
        done = _hang_up(out)
    # then the file gets what it writes after, its last line included
    assert done.returncode == 128 + signal.SIGHUP
    written = (tmp_path / "out.txt").read_text()
    assert "written after the hang-up" in written
    assert written.rstrip().endswith("Interrupted: the last line.")
