"""Event storage: django-eventstream's database storage with a one-statement append.

The library's append takes about nine statements an event (the counter fetched, locked
and saved, the event saved, the log trimmed) in a transaction of its own. Here an append
is a single ``UPDATE ... RETURNING`` of the channel's counter feeding an ``INSERT`` of
the event (two statements on SQLite), run in the caller's transaction: the event is
stored, and numbered, exactly when the change it announces commits. The counter's row
lock orders a channel's publishers, so numbers commit in order, without gaps. The
day-old log is trimmed after every TRIM_EVERY-th event of a channel. Reads are the
library's, unchanged.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from django.core.serializers.json import DjangoJSONEncoder
from django.db import IntegrityError, connection, transaction
from django.utils import timezone
from django_eventstream.event import Event
from django_eventstream.models import Event as StoredEvent
from django_eventstream.models import EventCounter
from django_eventstream.storage import DjangoModelStorage

TRIM_EVERY = 256


@functools.cache
def _statements(vendor: str) -> tuple[str, ...]:
    """Return the statements appending an event (table names are the only formatting).

    On PostgreSQL, one: the counter's new value feeds the insert. SQLite (the embedded
    default) allows no UPDATE inside a WITH: the update, then the insert.
    """
    counters = connection.ops.quote_name(EventCounter._meta.db_table)
    events = connection.ops.quote_name(StoredEvent._meta.db_table)
    bump = f"UPDATE {counters} SET value = value + 1, updated = %s WHERE name = %s"  # noqa: S608
    insert = f"INSERT INTO {events} (channel, type, data, eid, created)"
    if vendor == "postgresql":
        return (
            f"WITH counter AS ({bump} RETURNING value) "  # noqa: S608
            f"{insert} SELECT %s, %s, %s, value, %s FROM counter RETURNING eid",
        )
    return (f"{bump} RETURNING value", f"{insert} VALUES (%s, %s, %s, %s, %s)")


def _append(channel: str, event_type: str, stored: str) -> int | None:
    """Number and insert one event; None when the channel has no counter yet."""
    now = timezone.now()
    statements = _statements(connection.vendor)
    with connection.cursor() as cursor:
        if len(statements) == 1:
            cursor.execute(statements[0], [now, channel, channel, event_type, stored, now])
            row = cursor.fetchone()
        else:
            cursor.execute(statements[0], [now, channel])
            row = cursor.fetchone()
            if row is not None:
                cursor.execute(statements[1], [channel, event_type, stored, row[0], now])
    return None if row is None else int(row[0])


class EventStorage(DjangoModelStorage):
    """Store events in the database, numbered per channel without gaps."""

    def append_event(self, channel: str, event_type: str, data: Any) -> Event:
        """Store one event of ``channel`` in the current transaction; return it numbered."""
        stored = json.dumps(data, cls=DjangoJSONEncoder)
        number = _append(channel, event_type, stored)
        if number is None:
            self._open_channel(channel)
            number = _append(channel, event_type, stored)
        if number % TRIM_EVERY == 0:
            transaction.on_commit(self.trim_event_log)
        return Event(channel, event_type, data, id=number)

    @staticmethod
    def _open_channel(channel: str) -> None:
        """Create a channel's counter and the library's placeholder event number 0, which
        lets a reader start from the very beginning; another publisher may do it first."""
        try:
            with transaction.atomic():
                EventCounter.objects.create(name=channel, value=0)
                StoredEvent.objects.bulk_create([StoredEvent(channel=channel, eid=0)])
        except IntegrityError:
            pass
