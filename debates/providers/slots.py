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

Fair shares: each lease belongs to an ``owner`` (the user whose debate makes the call).
While another owner waits for a slot, an owner may hold at most its share of the cap,
``ceil(cap / owners)`` over the owners holding or waiting; with nobody else waiting, an
owner may take every slot. So a user with a hundred debates queued cannot keep the
slots from a second user: the next slot freed goes to the second user's waiter. Waiters
record themselves with a short expiry (``WAITER_TTL_S``), renewed at each try, so a
waiter that gave up or died stops counting within it.
"""

from __future__ import annotations

import contextlib
import logging
import math
import secrets
import threading
import time
from collections import Counter
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


def fair_share(cap: int, owners: int) -> int:
    """Return how many of ``cap`` slots one of ``owners`` contending owners may hold."""
    return max(1, math.ceil(cap / max(1, owners)))


class SlotUnavailable(Exception):
    """No model-call slot became free within the time the caller was willing to wait."""


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
        free (or every free one belongs to another owner's share)."""

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
    most, however long its call may take.
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


class LocalSlots:
    """An in-process semaphore with expiring leases (threads of one process)."""

    def __init__(self, cap: int = DEFAULT_CAP, *, lease_s: float = DEFAULT_LEASE_S) -> None:
        if cap < 1:
            raise ValueError("cap must be at least 1")
        self.cap = cap
        self.lease_s = lease_s
        self._leases: dict[str, tuple[str, float]] = {}  # token -> (owner, expiry)
        self._waiting: dict[str, str] = {}  # token of a waiting acquire -> its owner
        self._changed = threading.Condition()

    def acquire(
        self, wait_s: float, *, lease_s: float | None = None, owner: str = ANONYMOUS
    ) -> Lease | None:
        """Take a slot for ``owner``, waiting up to ``wait_s`` seconds; return None when
        none came free for it."""
        give_up = time.monotonic() + max(0.0, wait_s)
        token = secrets.token_hex(16)
        waited = False
        with self._changed:
            try:
                while True:
                    now = time.monotonic()
                    self._drop_expired(now)
                    if self._may_take(owner):
                        expires_at = now + (lease_s or self.lease_s)
                        self._leases[token] = (owner, expires_at)
                        return Lease(token, expires_at, waited=waited, owner=owner)
                    if now >= give_up:
                        return None
                    self._waiting[token] = owner
                    soonest = min(expiry for _, expiry in self._leases.values())
                    self._changed.wait(timeout=max(0.0, min(give_up, soonest) - now))
                    waited = True
            finally:
                self._waiting.pop(token, None)

    def _may_take(self, owner: str) -> bool:
        if len(self._leases) >= self.cap:
            return False
        others = {who for who in self._waiting.values() if who != owner}
        if not others:
            return True
        held = [who for who, _ in self._leases.values()]
        share = fair_share(self.cap, len(others | set(held) | {owner}))
        return held.count(owner) < share

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


# KEYS[1] leases zset, KEYS[2] waiters zset; ARGV: cap, member, lease_ms, owner,
# waiter_ttl_ms. Members are "<owner>|<token>" in both sets, scored by their expiry.
# Returns 1 when the slot was taken; otherwise the caller is recorded as waiting.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cap, member, owner = tonumber(ARGV[1]), ARGV[2], ARGV[4]
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local function owner_of(m) return string.match(m, '^(.*)|[^|]*$') end
local leases = redis.call('ZRANGE', KEYS[1], 0, -1)
local take = #leases < cap
if take then
  local owners, count, others_wait, held = {}, 0, false, 0
  for _, m in ipairs(redis.call('ZRANGE', KEYS[2], 0, -1)) do
    local who = owner_of(m)
    if who ~= owner then others_wait = true end
    if not owners[who] then owners[who] = true; count = count + 1 end
  end
  if others_wait then
    for _, m in ipairs(leases) do
      local who = owner_of(m)
      if who == owner then held = held + 1 end
      if not owners[who] then owners[who] = true; count = count + 1 end
    end
    if not owners[owner] then count = count + 1 end
    take = held < math.max(1, math.ceil(cap / count))
  end
end
if take then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), member)
  redis.call('ZREM', KEYS[2], member)
  return 1
end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[5]), member)
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
        self._waiters_key = f"{key}:waiters"
        self._wake_key = f"{key}:wake"
        self._redis = redis.Redis.from_url(redis_url)
        self._acquire = self._redis.register_script(_ACQUIRE)
        self._release = self._redis.register_script(_RELEASE)
        self._renew = self._redis.register_script(_RENEW)
        self._count = self._redis.register_script(_COUNT)

    def acquire(
        self, wait_s: float, *, lease_s: float | None = None, owner: str = ANONYMOUS
    ) -> Lease | None:
        """Take a slot for ``owner``, waiting up to ``wait_s`` seconds; return None when
        none came free for it."""
        lease_s = lease_s or self.lease_s
        give_up = time.monotonic() + max(0.0, wait_s)
        # The token names its owner: the scripts count leases and waiters per owner.
        token = f"{owner.replace('|', '_')}|{secrets.token_hex(16)}"
        waited = False
        args = [self.cap, token, max(1, round(lease_s * 1000)), token.rpartition("|")[0]]
        args.append(max(1, round(WAITER_TTL_S * 1000)))
        while True:
            started = time.monotonic()
            taken = self._acquire(keys=[self._leases_key, self._waiters_key], args=args)
            if taken == 1:
                return Lease(token, started + lease_s, waited=waited, owner=owner)
            remaining = give_up - time.monotonic()
            if remaining <= 0:
                self._redis.zrem(self._waiters_key, token)
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

    def holders(self) -> dict[str, int]:
        """Return how many unexpired leases each owner holds now."""
        self._count(keys=[self._leases_key])  # drops the expired leases first
        return self._owners(self._leases_key)

    def waiting(self) -> dict[str, int]:
        """Return how many acquires of each owner are waiting for a slot now."""
        seconds, micros = self._redis.time()  # the scores are Redis server time
        self._redis.zremrangebyscore(self._waiters_key, "-inf", seconds * 1000 + micros // 1000)
        return self._owners(self._waiters_key)

    def _owners(self, key: str) -> dict[str, int]:
        members = self._redis.zrange(key, 0, -1)
        return dict(Counter(m.decode().rpartition("|")[0] for m in members))

    def clear(self) -> None:
        """Drop every lease, waiter and wake-up (tests and operators' reset only)."""
        self._redis.delete(self._leases_key, self._waiters_key, self._wake_key)


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
