"""The model-call cap inside one process (threads), for the embedded default."""

from __future__ import annotations

import secrets
import threading
import time
from collections import Counter

from debates.providers.slots.leases import (
    ANONYMOUS,
    DEFAULT_CAP,
    DEFAULT_LEASE_S,
    STILL_AFTER_S,
    Lease,
    TooManyWaiting,
    checked_per_owner,
    fair_share,
)


class LocalSlots:
    """An in-process semaphore with expiring leases (threads of one process)."""

    def __init__(
        self,
        cap: int = DEFAULT_CAP,
        *,
        lease_s: float = DEFAULT_LEASE_S,
        per_owner: int | None = None,
        still_after_s: float = STILL_AFTER_S,
    ) -> None:
        self.cap = cap
        self.lease_s = lease_s
        self.per_owner = checked_per_owner(cap, per_owner)
        self.still_after_s = still_after_s
        self._leases: dict[str, tuple[str, float]] = {}  # token -> (owner, expiry)
        self._waiting: dict[str, str] = {}  # token of a waiting acquire -> its owner
        self._moved: dict[str, float] = {}  # owner -> when a call of its last began or ended
        self._changed = threading.Condition()

    def acquire(
        self, wait_s: float, *, lease_s: float | None = None, owner: str = ANONYMOUS
    ) -> Lease | None:
        """Take a slot for ``owner``, waiting up to ``wait_s`` seconds; return None when
        none came free for it; raise ``TooManyWaiting`` when its calls are still and its
        waiting room is full. Waiters take the slots they may hold in the order they came."""
        give_up = time.monotonic() + max(0.0, wait_s)
        token = secrets.token_hex(16)
        waited = False
        with self._changed:
            try:
                while True:
                    now = time.monotonic()
                    self._drop_expired(now)
                    if self._may_take(owner) and not self._taker_ahead_of(token):
                        expires_at = now + (lease_s or self.lease_s)
                        self._leases[token] = (owner, expires_at)
                        self._moved[owner] = now
                        return Lease(token, expires_at, waited=waited, owner=owner)
                    if self._room_full(token, owner, now):
                        raise TooManyWaiting(f"{owner} has {self.per_owner} calls waiting")
                    if now >= give_up:
                        return None
                    self._waiting.setdefault(token, owner)  # keeps its place in the line
                    self._changed.wait(timeout=self._wake_after(owner, now, give_up))
                    waited = True
            finally:
                if self._waiting.pop(token, None) is not None:
                    # Whoever waited behind it looks again: it took a slot, or left the line.
                    self._changed.notify_all()

    def _may_take(self, owner: str) -> bool:
        held = [who for who, _ in self._leases.values()]
        most = self.cap if self.per_owner is None else self.per_owner
        if len(held) >= self.cap or held.count(owner) >= most:
            return False
        others = {who for who in self._waiting.values() if who != owner}
        if not others:
            return True
        share = fair_share(self.cap, len(others | set(held) | {owner}))
        return held.count(owner) < min(most, share)

    def _taker_ahead_of(self, token: str) -> bool:
        # Whether a waiter that came before ``token`` (every waiter, for a newcomer) may
        # take a slot now: it takes it first.
        for ahead, who in self._waiting.items():
            if ahead == token:
                return False
            if self._may_take(who):
                return True
        return False

    def _room_full(self, token: str, owner: str, now: float) -> bool:
        # Whether the owner's calls are still and as many others of its wait as it may hold.
        if self.per_owner is None or now - self._moved.get(owner, 0.0) < self.still_after_s:
            return False
        others = sum(1 for t, who in self._waiting.items() if who == owner and t != token)
        return others >= self.per_owner

    def _wake_after(self, owner: str, now: float, give_up: float) -> float:
        # Look again at the first expiry, at the give-up, and when the owner's calls
        # become still (a release, a take or a waiter leaving wakes the waiters sooner).
        soonest = min((expiry for _, expiry in self._leases.values()), default=give_up)
        still = self._moved.get(owner, 0.0) + self.still_after_s
        due = min(give_up, soonest, still if still > now else give_up)
        return max(0.0, due - now)

    def renew(self, lease: Lease, lease_s: float) -> bool:
        """Make ``lease`` last ``lease_s`` from now; False when it had expired already."""
        with self._changed:
            now = time.monotonic()
            self._drop_expired(now)
            if lease.token not in self._leases:
                return False
            self._leases[lease.token] = (lease.owner, now + lease_s)
            return True

    def release(self, lease: Lease) -> None:
        """Give the slot back and wake the waiters (the freed slot may be one owner's
        share only)."""
        with self._changed:
            if self._leases.pop(lease.token, None) is not None:
                self._moved[lease.owner] = time.monotonic()
                self._changed.notify_all()

    def in_use(self) -> int:
        """Return the number of unexpired leases now."""
        with self._changed:
            self._drop_expired(time.monotonic())
            return len(self._leases)

    def holders(self) -> dict[str, int]:
        """Return how many unexpired leases each owner holds now."""
        with self._changed:
            self._drop_expired(time.monotonic())
            return dict(Counter(owner for owner, _ in self._leases.values()))

    def waiting(self) -> dict[str, int]:
        """Return how many acquires of each owner are waiting for a slot now."""
        with self._changed:
            return dict(Counter(self._waiting.values()))

    def _drop_expired(self, now: float) -> None:
        for token in [t for t, (_, expiry) in self._leases.items() if expiry <= now]:
            del self._leases[token]
