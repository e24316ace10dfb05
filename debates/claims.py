"""Step claims: at most one live copy of a debate step calls the model.

A copy of a step (a turn or a vote) claims it before calling the model and gives the
claim back once the result is stored. While it holds the claim, a heartbeat renews it
and marks the debate as alive (``Debate.progressed_at``), so a claim outlives its
holder by at most CLAIM_TTL_S and the stale-debate watchdog leaves live debates alone.
A redelivered message carries the task id of the copy that died with it, so it takes
the claim over at once; any other copy (a resumed plan) waits until the holder stores
its result or dies. Claims live in the cache: Redis with the full stack, process
memory in the embedded default.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

from django.core.cache import cache
from django.utils import timezone

from arena.heartbeat import heartbeat
from debates.models import Debate

CLAIM_TTL_S = 15
HEARTBEAT_S = 5.0


class StepBusy(Exception):
    """Another live copy holds the step."""


def _key(step: str) -> str:
    return f"arena:claim:{step}"


def step_claim(*, step: str, holder: str, ttl_s: float = CLAIM_TTL_S) -> bool:
    """Claim ``step`` for ``holder``; return False while another holder has it."""
    if cache.add(_key(step), holder, timeout=ttl_s):
        return True
    if cache.get(_key(step)) == holder:
        cache.touch(_key(step), ttl_s)
        return True
    return False


def step_release(*, step: str, holder: str) -> None:
    """Give the claim back if ``holder`` still has it."""
    if cache.get(_key(step)) == holder:
        cache.delete(_key(step))


@contextlib.contextmanager
def step_held(*, step: str, holder: str, debate_id: int) -> Iterator[None]:
    """Hold ``step`` for the ``with`` block, with a heartbeat; raise ``StepBusy`` if taken.

    The claim is released when the block ends normally; when it raises, the claim is
    left to expire, so a retry of the same task (same ``holder``) finds it again.
    """
    if not step_claim(step=step, holder=holder):
        raise StepBusy(step)

    def beat() -> None:
        if cache.get(_key(step)) == holder:
            cache.touch(_key(step), CLAIM_TTL_S)
        Debate.objects.filter(pk=debate_id).update(progressed_at=timezone.now())

    with heartbeat(beat, every_s=HEARTBEAT_S, name=step):
        yield
    step_release(step=step, holder=holder)
