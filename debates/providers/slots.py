"""The model-call cap: at most N calls in flight across every process and machine.

``RedisSlots`` is a counting semaphore on Redis with expiring leases. The leases are a
sorted set of random tokens scored by their expiry (milliseconds, Redis server time,
so clocks of different machines do not matter). One Lua script drops expired leases
and takes a slot only while fewer than N remain, atomically; release removes the token
and pushes a wake-up onto a short Redis list, on which waiters block (``BLPOP``) for a
bounded time before trying again, so a freed slot is taken within milliseconds and a
slot freed by expiry within ``poll_s``. A holder renews its lease while its call runs
(``hold``), so a lease can be short whatever the call's deadline: a worker that dies
holding a slot stops renewing it, and the slot is free again within one lease.

``LocalSlots`` is the same contract inside one process (threads), for the embedded
default without Redis. ``model_slots()`` picks one from the Django settings.

A waiter never holds a slot while waiting, and waits at most ``wait_s``: when
``acquire`` returns None the caller (a Celery task) retries later instead of blocking.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from arena.heartbeat import heartbeat

logger = logging.getLogger(__name__)

DEFAULT_CAP = 3
DEFAULT_LEASE_S = 90.0
DEFAULT_KEY = "arena:model-slots"


class SlotUnavailable(Exception):
    """No model-call slot became free within the time the caller was willing to wait."""


@dataclass(frozen=True)
class Lease:
    """One held slot: its token, the monotonic instant it first expires (local
    estimate), and whether it was free at once or had to be waited for."""

    token: str
    expires_at: float
    waited: bool = False


class Slots(Protocol):
    """What every slot implementation offers."""

    cap: int
    lease_s: float

    def acquire(self, wait_s: float, *, lease_s: float | None = None) -> Lease | None:
        """Take a slot, waiting up to ``wait_s``; return None when none came free."""

    def renew(self, lease: Lease, lease_s: float) -> bool:
        """Make ``lease`` last ``lease_s`` from now; False when it had expired already."""

    def release(self, lease: Lease) -> None:
        """Give the slot of ``lease`` back (nothing happens if it already expired)."""

    def in_use(self) -> int:
        """Return the number of unexpired leases now."""


@contextlib.contextmanager
def hold(slots: Slots, wait_s: float, *, lease_s: float | None = None) -> Iterator[Lease]:
    """Hold one slot of ``slots`` for the ``with`` block; raise ``SlotUnavailable`` if
    none came free within ``wait_s``.

    The lease lasts ``lease_s`` (the slots' default if None) and is renewed every third
    of it until the block ends, so the slot outlives a holder that dies by one lease at
    most, however long its call may take.
    """
    lease_s = lease_s or slots.lease_s
    lease = slots.acquire(wait_s, lease_s=lease_s)
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


class LocalSlots:
    """An in-process semaphore with expiring leases (threads of one process)."""

    def __init__(self, cap: int = DEFAULT_CAP, *, lease_s: float = DEFAULT_LEASE_S) -> None:
        if cap < 1:
            raise ValueError("cap must be at least 1")
        self.cap = cap
        self.lease_s = lease_s
        self._leases: dict[str, float] = {}
        self._changed = threading.Condition()

    def acquire(self, wait_s: float, *, lease_s: float | None = None) -> Lease | None:
        """Take a slot, waiting up to ``wait_s`` seconds; return None when none came free."""
        give_up = time.monotonic() + max(0.0, wait_s)
        waited = False
        with self._changed:
            while True:
                now = time.monotonic()
                self._drop_expired(now)
                if len(self._leases) < self.cap:
                    token = secrets.token_hex(16)
                    expires_at = now + (lease_s or self.lease_s)
                    self._leases[token] = expires_at
                    return Lease(token=token, expires_at=expires_at, waited=waited)
                if now >= give_up:
                    return None
                soonest = min(self._leases.values())
                self._changed.wait(timeout=max(0.0, min(give_up, soonest) - now))
                waited = True

    def renew(self, lease: Lease, lease_s: float) -> bool:
        """Make ``lease`` last ``lease_s`` from now; False when it had expired already."""
        with self._changed:
            now = time.monotonic()
            self._drop_expired(now)
            if lease.token not in self._leases:
                return False
            self._leases[lease.token] = now + lease_s
            return True

    def release(self, lease: Lease) -> None:
        """Give the slot back and wake one waiter."""
        with self._changed:
            if self._leases.pop(lease.token, None) is not None:
                self._changed.notify()

    def in_use(self) -> int:
        """Return the number of unexpired leases now."""
        with self._changed:
            self._drop_expired(time.monotonic())
            return len(self._leases)

    def _drop_expired(self, now: float) -> None:
        for token in [t for t, expiry in self._leases.items() if expiry <= now]:
            del self._leases[token]


# KEYS[1] leases zset, ARGV: cap, token, lease_ms. Returns 1 when the slot was taken.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
  return 1
end
return 0
"""

# KEYS[1] leases zset, KEYS[2] wake-up list, ARGV: cap. Wakes one waiter per freed slot;
# the list is trimmed and expires, so wake-ups nobody waited for do not pile up.
_RELEASE = """
local removed = redis.call('ZREM', KEYS[1], ARGV[2])
if removed == 1 then
  redis.call('LPUSH', KEYS[2], '1')
  redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[1]) - 1)
  redis.call('PEXPIRE', KEYS[2], 60000)
end
return removed
"""

# KEYS[1] leases zset, ARGV: token, lease_ms. Returns 1 when the lease was still held.
_RENEW = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local expiry = redis.call('ZSCORE', KEYS[1], ARGV[1])
if expiry and tonumber(expiry) > now then
  redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[2]), ARGV[1])
  return 1
end
return 0
"""

_COUNT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
return redis.call('ZCARD', KEYS[1])
"""


class RedisSlots:
    """A Redis semaphore with expiring leases, shared by every process using ``key``."""

    def __init__(
        self,
        redis_url: str,
        *,
        cap: int = DEFAULT_CAP,
        key: str = DEFAULT_KEY,
        lease_s: float = DEFAULT_LEASE_S,
        poll_s: float = 0.1,
    ) -> None:
        import redis

        if cap < 1:
            raise ValueError("cap must be at least 1")
        self.cap = cap
        self.key = key
        self.lease_s = lease_s
        self.poll_s = poll_s
        self._leases_key = f"{key}:leases"
        self._wake_key = f"{key}:wake"
        self._redis = redis.Redis.from_url(redis_url)
        self._acquire = self._redis.register_script(_ACQUIRE)
        self._release = self._redis.register_script(_RELEASE)
        self._renew = self._redis.register_script(_RENEW)
        self._count = self._redis.register_script(_COUNT)

    def acquire(self, wait_s: float, *, lease_s: float | None = None) -> Lease | None:
        """Take a slot, waiting up to ``wait_s`` seconds; return None when none came free."""
        lease_s = lease_s or self.lease_s
        give_up = time.monotonic() + max(0.0, wait_s)
        token = secrets.token_hex(16)
        waited = False
        while True:
            started = time.monotonic()
            taken = self._acquire(
                keys=[self._leases_key], args=[self.cap, token, max(1, round(lease_s * 1000))]
            )
            if taken == 1:
                return Lease(token=token, expires_at=started + lease_s, waited=waited)
            remaining = give_up - time.monotonic()
            if remaining <= 0:
                return None
            # Wait for a release; re-check at least every poll_s for expired leases.
            self._redis.blpop([self._wake_key], timeout=max(0.01, min(remaining, self.poll_s)))
            waited = True

    def renew(self, lease: Lease, lease_s: float) -> bool:
        """Make ``lease`` last ``lease_s`` from now; False when it had expired already."""
        lease_ms = max(1, round(lease_s * 1000))
        return self._renew(keys=[self._leases_key], args=[lease.token, lease_ms]) == 1

    def release(self, lease: Lease) -> None:
        """Give the slot back and wake one waiter (nothing happens if it already expired)."""
        self._release(keys=[self._leases_key, self._wake_key], args=[self.cap, lease.token])

    def in_use(self) -> int:
        """Return the number of unexpired leases now."""
        return int(self._count(keys=[self._leases_key]))

    def clear(self) -> None:
        """Drop every lease and wake-up (tests and operators' reset only)."""
        self._redis.delete(self._leases_key, self._wake_key)


_lock = threading.Lock()
_instances: dict[tuple[int, str, str], Slots] = {}


def model_slots() -> Slots:
    """Return this process's slot manager, configured from the Django settings.

    ``MODEL_CALL_CAP`` (default 3), ``REDIS_URL`` (empty: in-process slots) and
    ``MODEL_SLOT_KEY`` (the Redis key prefix). One instance per configuration, so all
    threads of a process share the in-process semaphore.
    """
    from django.conf import settings

    cap = int(getattr(settings, "MODEL_CALL_CAP", DEFAULT_CAP) or DEFAULT_CAP)
    url = getattr(settings, "REDIS_URL", "") or ""
    key = getattr(settings, "MODEL_SLOT_KEY", "") or DEFAULT_KEY
    config = (cap, url, key)
    with _lock:
        slots = _instances.get(config)
        if slots is None:
            slots = RedisSlots(url, cap=cap, key=key) if url else LocalSlots(cap)
            _instances[config] = slots
        return slots
