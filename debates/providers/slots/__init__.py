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

Waiters are served in the order they came: Redis hands each release's wake-up to the
client that has blocked longest, and ``LocalSlots`` lets an acquire take a slot only
while no waiter ahead of it may take one. So a step that waited is not overtaken by the
steps that came after it.

A waiter never holds a slot while waiting, and waits at most ``wait_s``: when
``acquire`` returns None the caller (a Celery task) retries later instead of blocking.

Fair shares: each lease belongs to an ``owner`` (the user whose debate makes the call).
While another owner waits for a slot, an owner may hold at most its share of the cap,
``ceil(cap / owners)`` over the owners holding or waiting; with nobody else waiting, an
owner may take every slot it may hold. So a user with a hundred debates queued cannot
keep the slots from a second user: the next slot freed goes to the second user's
waiter. Waiters record themselves with a short expiry (``WAITER_TTL_S``), renewed at
each try, so a waiter that gave up or died stops counting within it.

Shares only hand out the slots that free up; a call that hangs frees none until its
deadline. So an owner may also be limited to ``per_owner`` slots whoever waits (the
Django settings make it ``MODEL_CALLS_PER_USER``, below the cap): whatever its calls do,
the other owners keep ``cap - per_owner``. Each waiting acquire holds its caller's
thread, and while an owner's calls move (one started or ended within
``STILL_AFTER_S``), its waiters get slots soon and may be as many as its steps. Once
its calls are still (a model that hangs), the same number bounds the owner's acquires
waiting: a further one, or a waiting one beyond it at its next try, is refused with
``TooManyWaiting``, so one owner with hanging calls holds at most ``2 * per_owner``
threads of the workers that make the calls.
"""

import threading

from debates.providers.slots.leases import (
    ANONYMOUS,
    DEFAULT_CAP,
    DEFAULT_KEY,
    STILL_AFTER_S,
    Lease,
    Slots,
    SlotUnavailable,
    TooManyWaiting,
    fair_share,
    hold,
)
from debates.providers.slots.local import LocalSlots
from debates.providers.slots.shared import RedisSlots

__all__ = [
    "ANONYMOUS",
    "STILL_AFTER_S",
    "Lease",
    "LocalSlots",
    "RedisSlots",
    "SlotUnavailable",
    "Slots",
    "TooManyWaiting",
    "fair_share",
    "hold",
    "model_slots",
]

_lock = threading.Lock()
_instances: dict[tuple[int, int, str, str], Slots] = {}


def model_slots() -> Slots:
    """Return this process's slot manager, configured from the Django settings.

    ``MODEL_CALL_CAP`` (the cap), ``MODEL_CALLS_PER_USER`` (``per_owner``, at most the
    cap), ``REDIS_URL`` (empty: in-process slots) and ``MODEL_SLOT_KEY`` (the Redis key
    prefix). One instance per configuration, so all threads of a process share the
    in-process semaphore.
    """
    from django.conf import settings

    cap = int(getattr(settings, "MODEL_CALL_CAP", DEFAULT_CAP) or DEFAULT_CAP)
    per_owner = min(cap, int(getattr(settings, "MODEL_CALLS_PER_USER", cap) or cap))
    url = getattr(settings, "REDIS_URL", "") or ""
    key = getattr(settings, "MODEL_SLOT_KEY", "") or DEFAULT_KEY
    config = (cap, per_owner, url, key)
    with _lock:
        slots = _instances.get(config)
        if slots is None:
            slots = (
                RedisSlots(url, cap=cap, key=key, per_owner=per_owner)
                if url
                else LocalSlots(cap, per_owner=per_owner)
            )
            _instances[config] = slots
        return slots
