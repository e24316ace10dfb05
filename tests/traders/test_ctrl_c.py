"""The commands hold Ctrl-C until they check for it (``CtrlC``), so it never lands in the
middle of a database statement or between a commit and its hooks."""

from __future__ import annotations

import os
import signal

import pytest

from traders.management.console import CtrlC, Interrupted


def _press_ctrl_c() -> None:
    os.kill(os.getpid(), signal.SIGINT)  # its handler runs before the next line does


def test_ctrl_c_in_the_block_waits_for_the_check():
    # given a block holding Ctrl-C
    with CtrlC() as ctrl_c:
        ctrl_c.check()  # nothing pressed yet
        # when Ctrl-C is pressed while the block does something else
        try:
            _press_ctrl_c()
        except KeyboardInterrupt:
            pytest.fail("Ctrl-C interrupted the work in the block")
        # then the work went on, and the next check raises
        with pytest.raises(Interrupted):
            ctrl_c.check()


def test_a_second_ctrl_c_stops_at_once():
    with CtrlC(), pytest.raises(KeyboardInterrupt):
        _press_ctrl_c()
        _press_ctrl_c()


def test_the_handler_before_the_block_is_put_back():
    before = signal.getsignal(signal.SIGINT)
    with CtrlC():
        assert signal.getsignal(signal.SIGINT) is not before
    assert signal.getsignal(signal.SIGINT) is before
