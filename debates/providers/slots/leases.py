"""What every model-slot semaphore shares: leases, owners' shares, the errors, ``hold``."""

from __future__ import annotations

import contextlib
import logging
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from arena.heartbeat import heartbeat

logger = logging.getLogger(__name__)

DEFAULT_CAP = 3
DEFAULT_LEASE_S = 90.0
DEFAULT_KEY = "arena:model-slots"
# How long a waiter counts as waiting after its last try (it tries every ``poll_s``).
WAITER_TTL_S = 1.0
# The owner of leases taken without one (tools, benchmarks of the cap alone).
ANONYMOUS = "-"
# How long an owner's calls must neither start nor end before its waiting room applies:
# its calls are still (hanging, or slow), and a slot will not free up for it soon.
STILL_AFTER_S = 1.0


def fair_share(cap: int, owners: int) -> int:
    """Return how many of ``cap`` slots one of ``owners`` contending owners may hold."""
    return max(1, math.ceil(cap / max(1, owners)))


class SlotUnavailable(Exception):
    """No model-call slot became free within the time the caller was willing to wait."""


class TooManyWaiting(SlotUnavailable):
    """The owner's calls are still and it has ``per_owner`` other acquires waiting: this
    one waits no more."""


@dataclass(frozen=True)
class Lease:
    """One held slot: its token, the monotonic instant it first expires (local
    estimate), and whether it was free at once or had to be waited for."""

    token: str
    expires_at: float
    waited: bool = False
    owner: str = ANONYMOUS


class Slots(Protocol):
    """What every slot implementation offers."""

    cap: int
    lease_s: float

    def acquire(
        self, wait_s: float, *, lease_s: float | None = None, owner: str = ANONYMOUS
    ) -> Lease | None:
        """Take a slot for ``owner``, waiting up to ``wait_s``; return None when none came
        free (or every free one belongs to another owner's share); raise
        ``TooManyWaiting`` when ``owner``'s calls are still and it has as many other
        acquires waiting as it may hold slots."""

    def renew(self, lease: Lease, lease_s: float) -> bool:
        """Make ``lease`` last ``lease_s`` from now; False when it had expired already."""

    def release(self, lease: Lease) -> None:
        """Give the slot of ``lease`` back (nothing happens if it already expired)."""

    def in_use(self) -> int:
        """Return the number of unexpired leases now."""

    def holders(self) -> dict[str, int]:
        """Return how many unexpired leases each owner holds now."""

    def waiting(self) -> dict[str, int]:
        """Return how many acquires of each owner are waiting for a slot now."""


@contextlib.contextmanager
def hold(
    slots: Slots, wait_s: float, *, lease_s: float | None = None, owner: str = ANONYMOUS
) -> Iterator[Lease]:
    """Hold one slot of ``slots`` for ``owner`` for the ``with`` block; raise
    ``SlotUnavailable`` if none came free within ``wait_s``.

    The lease lasts ``lease_s`` (the slots' default if None) and is renewed every third
    of it until the block ends, so the slot outlives a holder that dies by one lease at
    most, however long its call may take. ``TooManyWaiting`` (a ``SlotUnavailable``)
    comes from ``acquire`` as it is.
    """
    lease_s = lease_s or slots.lease_s
    lease = slots.acquire(wait_s, lease_s=lease_s, owner=owner)
    if lease is None:
        raise SlotUnavailable(f"no model-call slot free within {wait_s:.1f}s")

    def renew() -> None:
        if not slots.renew(lease, lease_s):
            logger.warning("a model slot's lease ran out while its call went on")

    try:
        with heartbeat(renew, every_s=lease_s / 3, name="model slot"):
            yield lease
    finally:
        slots.release(lease)


def checked_per_owner(cap: int, per_owner: int | None) -> int | None:
    """Return ``per_owner`` (None: no limit but the cap) once the cap is checked to be at
    least 1 and ``per_owner`` within it."""
    if cap < 1:
        raise ValueError("cap must be at least 1")
    if per_owner is not None and not 1 <= per_owner <= cap:
        raise ValueError("per_owner must be between 1 and the cap")
    return per_owner
