"""Reading the messages waiting in a queue of the test broker (Redis), as a worker would."""

from __future__ import annotations

import base64
import json

import redis
from django.conf import settings


def queued(queue: str = "celery") -> list[tuple[dict, str]]:
    """Return the messages waiting in ``queue``, oldest last, as (headers, decoded body)."""
    client = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    messages = []
    for raw in client.lrange(queue, 0, -1):
        message = json.loads(raw)
        messages.append((message["headers"], base64.b64decode(message["body"]).decode()))
    return messages
