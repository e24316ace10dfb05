"""The event storage numbers each channel's events from 1, without gaps, and replays them."""

from __future__ import annotations

import threading

import pytest
from django.db import connection

from arena.sse_storage import EventStorage

pytestmark = pytest.mark.django_db(transaction=True)


def test_events_are_numbered_per_channel_and_replayed_from_the_start():
    storage = EventStorage()
    numbers = [storage.append_event("test-a", "status", {"n": n}).id for n in range(3)]
    other = storage.append_event("test-b", "status", {"n": 0}).id
    assert numbers == [1, 2, 3]
    assert other == 1
    replay = storage.get_events("test-a", 0)
    assert [(e.id, e.type, e.data) for e in replay] == [
        (1, "status", {"n": 0}),
        (2, "status", {"n": 1}),
        (3, "status", {"n": 2}),
    ]
    assert storage.get_current_id("test-a") == 3


def test_concurrent_publishers_leave_no_gap_and_no_duplicate():
    storage = EventStorage()
    got: list[int] = []

    def publish() -> None:
        try:
            for _ in range(10):
                got.append(storage.append_event("test-c", "status", {}).id)
        finally:
            connection.close()

    threads = [threading.Thread(target=publish) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(got) == list(range(1, 81))
    assert [e.id for e in storage.get_events("test-c", 0, limit=100)] == list(range(1, 81))
