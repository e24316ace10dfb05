"""The one door for publishing live events.

Services never send an event directly: they call ``publish_on_commit``, which hands the
event to django-eventstream once the surrounding transaction commits, so a client never
hears of a row that was rolled back. django-eventstream stores the event (ids, replay)
and, with ``EVENTSTREAM_REDIS`` set, fans it out to every web process through Redis
pub/sub; without it, delivery is in-process.
"""

from __future__ import annotations

import logging
from typing import Any

from django.db import transaction
from django_eventstream import send_event

logger = logging.getLogger(__name__)


def debate_channel(debate_id: int) -> str:
    """Return the stream channel of a debate."""
    return f"debate-{debate_id}"


def publish_on_commit(channel: str, event_type: str, data: dict[str, Any]) -> None:
    """Publish ``event_type`` with ``data`` on ``channel`` once the transaction commits.

    Outside a transaction the event is published at once. A failure to publish is
    logged and does not undo the committed work: clients catch up from storage.
    """

    def send() -> None:
        try:
            send_event(channel, event_type, data)
        except Exception:
            logger.exception("could not publish %s on %s", event_type, channel)

    transaction.on_commit(send)
