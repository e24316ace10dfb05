"""Event storage: django-eventstream's database storage with a one-statement append.

The library's append takes about nine statements an event (the counter fetched, locked
and saved, the event saved, the log trimmed) in a transaction of its own. Here an append
of one or several events of a channel is a single ``UPDATE ... RETURNING`` of the
channel's counter feeding an ``INSERT`` (two statements on SQLite), run in the caller's
transaction: events are stored, and numbered, exactly when the change they announce
commits. The counter's row lock orders a channel's publishers, so numbers commit in
order, without gaps. The day-old log is trimmed each time a channel's numbers pass a
multiple of TRIM_EVERY. Reads are the library's, unchanged.
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
def _statements(vendor: str, count: int) -> tuple[str, ...]:
    """Return the statements appending ``count`` events of one channel (table names are
    the only formatting).

    On PostgreSQL, one: the counter moves by ``count`` and its new value numbers the
    inserted rows. SQLite (the embedded default) allows no UPDATE inside a WITH: the
    update, then one insert per event.
    """
    counters = connection.ops.quote_name(EventCounter._meta.db_table)
    events = connection.ops.quote_name(StoredEvent._meta.db_table)
    bump = f"UPDATE {counters} SET value = value + %s, updated = %s WHERE name = %s"  # noqa: S608
    insert = f"INSERT INTO {events} (channel, type, data, eid, created)"
    if vendor == "postgresql":
        rows = ", ".join(["(%s, %s, %s)"] * count)
        return (
            f"WITH counter AS ({bump} RETURNING value) "  # noqa: S608
            f"{insert} SELECT %s, e.type, e.data, counter.value - %s + e.n, %s "
            f"FROM counter, (VALUES {rows}) AS e(type, data, n) RETURNING eid",
        )
    return (f"{bump} RETURNING value", f"{insert} VALUES (%s, %s, %s, %s, %s)")


def _append(channel: str, items: list[tuple[str, str]]) -> int | None:
    """Number and insert the events ``items`` (type, stored data) of ``channel``; return
    the number of the first, or None when the channel has no counter yet."""
    now = timezone.now()
    count = len(items)
    statements = _statements(connection.vendor, count)
    with connection.cursor() as cursor:
        if len(statements) == 1:
            rows = [value for n, item in enumerate(items, 1) for value in (*item, n)]
            cursor.execute(statements[0], [count, now, channel, channel, count, now, *rows])
            numbers = [row[0] for row in cursor.fetchall()]
            return min(numbers) if numbers else None
        cursor.execute(statements[0], [count, now, channel])
        row = cursor.fetchone()
        if row is None:
            return None
        first = int(row[0]) - count + 1
        cursor.executemany(
            statements[1],
            [(channel, kind, data, first + i, now) for i, (kind, data) in enumerate(items)],
        )
        return first


class EventStorage(DjangoModelStorage):
    """Store events in the database, numbered per channel without gaps."""

    def append_event(self, channel: str, event_type: str, data: Any) -> Event:
        """Store one event of ``channel`` in the current transaction; return it numbered."""
        return self.append_events(channel, [(event_type, data)])[0]

    def append_events(self, channel: str, items: list[tuple[str, Any]]) -> list[Event]:
        """Store events (type, data) of ``channel``, in order, with one statement in the
        current transaction; return them numbered."""
        stored = [(kind, json.dumps(data, cls=DjangoJSONEncoder)) for kind, data in items]
        first = _append(channel, stored)
        if first is None:
            self.open_channel(channel)
            first = _append(channel, stored)
        last = first + len(items) - 1
        if last // TRIM_EVERY > (first - 1) // TRIM_EVERY:
            transaction.on_commit(self.trim_event_log)
        return [Event(channel, kind, data, id=first + i) for i, (kind, data) in enumerate(items)]

    @staticmethod
    def open_channel(channel: str) -> None:
        """Create a channel's counter and the library's placeholder event number 0, which
        lets a reader start from the very beginning; another publisher may do it first.

        A channel opened ahead of its first event (``arena.sse.open_channel``) saves
        that event's append the statements of opening it (a failed append, the opening
        in a savepoint, the append again); otherwise its first append opens it.
        """
        try:
            with transaction.atomic():
                EventCounter.objects.create(name=channel, value=0)
                StoredEvent.objects.bulk_create([StoredEvent(channel=channel, eid=0)])
        except IntegrityError:
            pass
