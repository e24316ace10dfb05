"""Step claims: at most one live copy of a debate step calls the model.

A copy of a step (a turn or a vote) claims it before calling the model and gives the
claim back once the result is stored. While it holds the claim, a heartbeat renews it
and marks the debate as alive (``Debate.progressed_at``), so a claim outlives its
holder by at most ``claim_ttl_s()`` and the stale-debate watchdog leaves live debates
alone. A redelivered message carries the task id of the copy that died with it, so it
takes the claim over at once; any other copy (a resumed plan) waits until the holder
stores its result or dies.

Claims live in Redis with the full stack (each operation one round trip, through one
client per process), in process memory in the embedded default.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable, Iterator
from typing import Protocol

from django.conf import settings

from arena.heartbeat import heartbeat


def claim_ttl_s() -> float:
    """Return how long a claim, and the model slot of its step, outlive their holder
    (``STEP_CLAIM_TTL_S``, 15 by default)."""
    return float(settings.STEP_CLAIM_TTL_S)


class StepDeferred(Exception):
    """The step cannot run now (no free model slot, or another copy holds it): its task
    tries again ``retry_after`` seconds later."""

    def __init__(self, reason: str, retry_after: float) -> None:
        super().__init__(reason)
        self.retry_after = retry_after


class StepBusy(StepDeferred):
    """Another live copy holds the step."""

    def __init__(self, step: str) -> None:
        super().__init__(f"another copy of {step} is running", retry_after=2.0)


class StepHandedOver(Exception):
    """Raised in a held step that has done nothing and leaves the step to another task
    (``debates.services.calls.NotCached``): its claim is given back at once."""


class Claims(Protocol):
    """What every claim store offers."""

    def take(self, key: str, holder: str, ttl_s: float) -> bool:
        """Claim ``key`` for ``holder`` for ``ttl_s``, or renew it if ``holder`` has it
        already; return False while another holder has it."""

    def give_back(self, key: str, holder: str) -> None:
        """Drop the claim of ``key`` if ``holder`` still has it."""


# KEYS[1] the claim, ARGV holder, ttl in milliseconds.
_TAKE = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
"""
# KEYS[1] the claim, ARGV holder.
_GIVE_BACK = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


class RedisClaims:
    """Claims as Redis keys holding their holder, expiring unless renewed."""

    def __init__(self, url: str) -> None:
        import redis

        client = redis.Redis.from_url(url)
        self._take = client.register_script(_TAKE)
        self._give_back = client.register_script(_GIVE_BACK)

    def take(self, key: str, holder: str, ttl_s: float) -> bool:
        return self._take(keys=[key], args=[holder, max(1, round(ttl_s * 1000))]) == 1

    def give_back(self, key: str, holder: str) -> None:
        self._give_back(keys=[key], args=[holder])


class LocalClaims:
    """Claims in process memory (the embedded default: one process runs every step)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._claims: dict[str, tuple[str, float]] = {}

    def take(self, key: str, holder: str, ttl_s: float) -> bool:
        now = time.monotonic()
        with self._lock:
            # Claims left to lapse (their step raised) are forgotten, as Redis forgets them.
            for lapsed in [k for k, (_, expires) in self._claims.items() if expires <= now]:
                del self._claims[lapsed]
            current = self._claims.get(key)
            if current is not None and current[0] != holder:
                return False
            self._claims[key] = (holder, now + ttl_s)
            return True

    def give_back(self, key: str, holder: str) -> None:
        with self._lock:
            current = self._claims.get(key)
            if current is not None and current[0] == holder:
                del self._claims[key]


_lock = threading.Lock()
_stores: dict[str, Claims] = {}


def claim_store() -> Claims:
    """Return this process's claim store for the configured ``REDIS_URL``."""
    url = settings.REDIS_URL
    with _lock:
        store = _stores.get(url)
        if store is None:
            store = _stores[url] = RedisClaims(url) if url else LocalClaims()
        return store


def _key(step: str) -> str:
    return f"arena:claim:{step}"


def step_claim(*, step: str, holder: str) -> bool:
    """Claim ``step`` for ``holder`` for ``claim_ttl_s()``; return False while another
    holder has it."""
    return claim_store().take(_key(step), holder, claim_ttl_s())


def step_release(*, step: str, holder: str) -> None:
    """Give the claim back if ``holder`` still has it."""
    claim_store().give_back(_key(step), holder)


@contextlib.contextmanager
def step_held(*, step: str, holder: str, on_beat: Callable[[], None]) -> Iterator[None]:
    """Hold ``step`` for the ``with`` block, with a heartbeat that renews the claim and
    calls ``on_beat`` (which marks the debate alive); raise ``StepBusy`` if taken.

    The claim is released when the block ends normally, or raises ``StepHandedOver``
    (the task sent for the step takes it at once); when it raises anything else, the
    claim is left to expire, so a retry of the same task (same ``holder``) finds it
    again.
    """
    if not step_claim(step=step, holder=holder):
        raise StepBusy(step)

    def beat() -> None:
        # Renewed only while this holder has it (or nobody took it since it lapsed).
        step_claim(step=step, holder=holder)
        on_beat()

    try:
        with heartbeat(beat, every_s=claim_ttl_s() / 3, name=step):
            yield
    except StepHandedOver:
        step_release(step=step, holder=holder)
        raise
    step_release(step=step, holder=holder)
