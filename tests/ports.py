"""Ports for the servers a test starts in another process (uvicorn, honcho, redis-server).

Such a port is chosen free, closed again, then bound by the other process a moment
later. A port the kernel hands out for ``bind(("127.0.0.1", 0))`` comes from the
ephemeral range, where any outgoing connection of a parallel test may take it in that
moment; so each pytest-xdist worker takes its ports from a band of its own below that
range (``gw0`` 20500-20999, ``gw1`` 21000-21499, ...; a run without xdist 20000-20499),
in turn, so a port just closed is not taken again at once.
"""

from __future__ import annotations

import itertools
import os
import socket

FIRST = 20_000
BAND = 500

_worker = os.environ.get("PYTEST_XDIST_WORKER", "")
_band = int(_worker.removeprefix("gw")) + 1 if _worker else 0
_start = FIRST + _band * BAND
_next = itertools.cycle(range(_start, _start + BAND))


def free_port() -> int:
    """Return a TCP port of this worker's band that was free a moment ago."""
    for _ in range(BAND):
        port = next(_next)
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"no free port in {_start}-{_start + BAND - 1}")
