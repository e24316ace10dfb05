"""A test-only Celery task: one model call inside a shared slot (the Celery cap test).

Started with ``celery -A arena worker -I tests.fakes.cap_tasks -Q <queue>``. The slot key
and cap come in as arguments, so a test never shares slots with anything else.
"""

from __future__ import annotations

from celery import Task
from django.conf import settings

from arena.celery import app
from debates.providers import ModelRequest, ProviderConfig, complete
from debates.providers.slots import RedisSlots, SlotUnavailable, hold

_slots: dict[tuple[str, int], RedisSlots] = {}


@app.task(name="tests.cap_call", bind=True, max_retries=None)
def cap_call_task(self: Task, base_url: str, key: str, cap: int) -> str:
    """Make one fake model call inside a slot; retry later when no slot frees in 0.5 s."""
    slots = _slots.setdefault((key, cap), RedisSlots(settings.REDIS_URL, cap=cap, key=key))
    config = ProviderConfig("openai_compatible", "fake-model", base_url=base_url, timeout_s=10)
    request = ModelRequest(
        system="Cap test. Candidates: BTCUSDT.", user=f"worker {self.request.hostname}"
    )
    try:
        with hold(slots, 0.5, lease_s=15):
            return complete(config, request).request_id
    except SlotUnavailable as exc:
        raise self.retry(countdown=0) from exc
