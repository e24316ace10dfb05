"""The model-call cap across processes and machines: a Redis semaphore with expiring
leases, fair shares and a per-owner limit, each decision one atomic Lua script."""

from __future__ import annotations

import secrets
import time
from collections import Counter

from debates.providers.slots.leases import (
    ANONYMOUS,
    DEFAULT_CAP,
    DEFAULT_KEY,
    DEFAULT_LEASE_S,
    STILL_AFTER_S,
    WAITER_TTL_S,
    Lease,
    TooManyWaiting,
    checked_per_owner,
)

# KEYS[1] leases zset, KEYS[2] waiters zset, KEYS[3] hash: owner -> when a call of its
# last began or ended; ARGV: cap, member, lease_ms, owner, waiter_ttl_ms, per_owner (0:
# no limit but the cap), still_ms. Members are "<owner>|<token>" in both sets, scored by
# their expiry. Returns 1 when the slot was taken; -1 when it was not, the owner's calls
# are still (none began or ended within still_ms) and it has per_owner other acquires
# waiting (the caller waits no more); otherwise 0, the caller recorded as waiting.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cap, member, owner = tonumber(ARGV[1]), ARGV[2], ARGV[4]
local limited = tonumber(ARGV[6]) > 0
local most = limited and tonumber(ARGV[6]) or cap
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
local function owner_of(m) return string.match(m, '^(.*)|[^|]*$') end
local leases = redis.call('ZRANGE', KEYS[1], 0, -1)
local waiters = redis.call('ZRANGE', KEYS[2], 0, -1)
local held = 0
for _, m in ipairs(leases) do
  if owner_of(m) == owner then held = held + 1 end
end
local take = #leases < cap and held < most
if take then
  local owners, count, others_wait = {}, 0, false
  for _, m in ipairs(waiters) do
    local who = owner_of(m)
    if who ~= owner then others_wait = true end
    if not owners[who] then owners[who] = true; count = count + 1 end
  end
  if others_wait then
    for _, m in ipairs(leases) do
      local who = owner_of(m)
      if not owners[who] then owners[who] = true; count = count + 1 end
    end
    if not owners[owner] then count = count + 1 end
    take = held < math.min(most, math.max(1, math.ceil(cap / count)))
  end
end
if take then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), member)
  redis.call('ZREM', KEYS[2], member)
  redis.call('HSET', KEYS[3], owner, now)
  redis.call('PEXPIRE', KEYS[3], 86400000)
  return 1
end
local moved = tonumber(redis.call('HGET', KEYS[3], owner) or '0')
if limited and now - moved >= tonumber(ARGV[7]) then
  local waiting = 0
  for _, m in ipairs(waiters) do
    if m ~= member and owner_of(m) == owner then waiting = waiting + 1 end
  end
  if waiting >= most then
    redis.call('ZREM', KEYS[2], member)
    return -1
  end
end
redis.call('ZADD', KEYS[2], now + tonumber(ARGV[5]), member)
return 0
"""

# KEYS[1] leases zset, KEYS[2] wake-up list, KEYS[3] the owners' last moves; ARGV: cap,
# member. Wakes one waiter per freed slot; the list is trimmed and expires, so wake-ups
# nobody waited for do not pile up.
_RELEASE = """
local removed = redis.call('ZREM', KEYS[1], ARGV[2])
if removed == 1 then
  local t = redis.call('TIME')
  local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  redis.call('HSET', KEYS[3], string.match(ARGV[2], '^(.*)|[^|]*$'), now)
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
        per_owner: int | None = None,
        still_after_s: float = STILL_AFTER_S,
    ) -> None:
        import redis

        self.cap = cap
        self.per_owner = checked_per_owner(cap, per_owner)
        self.still_after_s = still_after_s
        self.key = key
        self.lease_s = lease_s
        self.poll_s = poll_s
        self._leases_key = f"{key}:leases"
        self._waiters_key = f"{key}:waiters"
        self._wake_key = f"{key}:wake"
        self._moved_key = f"{key}:moved"
        self._redis = redis.Redis.from_url(redis_url)
        self._acquire = self._redis.register_script(_ACQUIRE)
        self._release = self._redis.register_script(_RELEASE)
        self._renew = self._redis.register_script(_RENEW)
        self._count = self._redis.register_script(_COUNT)

    def acquire(
        self, wait_s: float, *, lease_s: float | None = None, owner: str = ANONYMOUS
    ) -> Lease | None:
        """Take a slot for ``owner``, waiting up to ``wait_s`` seconds; return None when
        none came free for it; raise ``TooManyWaiting`` when its calls are still and its
        waiting room is full."""
        lease_s = lease_s or self.lease_s
        give_up = time.monotonic() + max(0.0, wait_s)
        # The token names its owner: the scripts count leases and waiters per owner.
        token = f"{owner.replace('|', '_')}|{secrets.token_hex(16)}"
        waited = False
        args = [self.cap, token, max(1, round(lease_s * 1000)), token.rpartition("|")[0]]
        args += [max(1, round(WAITER_TTL_S * 1000)), self.per_owner or 0]
        args.append(round(self.still_after_s * 1000))
        keys = [self._leases_key, self._waiters_key, self._moved_key]
        while True:
            started = time.monotonic()
            taken = self._acquire(keys=keys, args=args)
            if taken == 1:
                return Lease(token, started + lease_s, waited=waited, owner=owner)
            if taken == -1:
                raise TooManyWaiting(f"{owner} has {self.per_owner} calls waiting")
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
        keys = [self._leases_key, self._wake_key, self._moved_key]
        self._release(keys=keys, args=[self.cap, lease.token])

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
        """Drop every lease, waiter, wake-up and move (tests and operators' reset only)."""
        self._redis.delete(self._leases_key, self._waiters_key, self._wake_key, self._moved_key)
