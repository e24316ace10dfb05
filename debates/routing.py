"""Which step messages the workers take first: a light user's before a heavy user's.

The model-call slots are shared fairly (``debates.providers.slots``), but a step must
first be taken off the queue by a worker, and the queue is first in, first out: a second
user's opening would wait behind every step of the first user's hundred debates. So each
step message goes out with a priority from its owner's load when it is sent, the number
of the owner's debates running or voting: one debate is priority 0, the first served,
then 3, 6 and 9 (Redis serves its priority lists lowest number first). A user's own
steps stay in order among themselves; users with the same load share the queue in turn.

The steps that call a model (``runs.CALL_STEPS``) also go to a queue of their own,
``MODEL_CALL_QUEUE``, which the call workers serve with a pool of threads: a call
waiting on its provider, or for a model slot, holds a thread there, never one of the
step workers' processes, which take the other steps from Celery's default queue.

This is Celery's router (``CELERY_TASK_ROUTES``), so every step sent, by a service, a
chord's callback or a retry, is routed the same way. A debate's steps follow one another
a few hundred milliseconds apart, and each would count its owner's debates again: the
load is kept in the cache (shared by the processes, with Redis) for ``LOAD_TTL_S``, so a
priority is at most that old, and a step is sent without a query most of the time.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.cache import cache

from debates.models import ACTIVE_STATUSES, Debate

# (most active debates, priority): the first that holds the owner's load applies.
LOAD_PRIORITIES = ((1, 0), (3, 3), (9, 6))
HEAVIEST = 9
# How long a debate's owner's load, once counted, routes its steps.
LOAD_TTL_S = 1


def load_priority(active_debates: int) -> int:
    """Return the message priority of a step whose owner has ``active_debates`` running."""
    return next((pri for most, pri in LOAD_PRIORITIES if active_debates <= most), HEAVIEST)


def owner_load(debate_id: int) -> int:
    """Return how many debates the owner of ``debate_id`` has running or voting, as
    counted at most ``LOAD_TTL_S`` ago."""
    key = f"owner-load:{debate_id}"
    load = cache.get(key)
    if load is None:
        owner = Debate.objects.filter(pk=debate_id).values("owner_id")
        load = Debate.objects.filter(owner_id__in=owner, status__in=ACTIVE_STATUSES).count()
        cache.set(key, load, LOAD_TTL_S)
    return load


def step_task_names() -> frozenset[str]:
    """Return the names of the tasks that run the steps of a debate's plan."""
    from debates.services.runs import STEP_TASKS

    return frozenset(name for name, _ in STEP_TASKS.values())


def call_task_names() -> frozenset[str]:
    """Return the names of the tasks that run the steps calling a model."""
    from debates.services.runs import CALL_STEPS, STEP_TASKS

    return frozenset(STEP_TASKS[kind][0] for kind in CALL_STEPS)


def route_step(
    name: str, args: Any, kwargs: Any, options: dict[str, Any], task: Any = None, **kw: Any
) -> dict[str, Any] | None:
    """Return the routing options of a task message: a priority for a debate's steps,
    and the call workers' queue for those calling a model."""
    if name not in step_task_names():
        return None
    route: dict[str, Any] = {}
    if name in call_task_names():
        route["queue"] = settings.MODEL_CALL_QUEUE
    debate_id = (kwargs or {}).get("debate_id", args[0] if args else None)
    if isinstance(debate_id, int):
        route["priority"] = load_priority(owner_load(debate_id))
    return route or None
