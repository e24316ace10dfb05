"""The event storage numbers each channel's events from 1, without gaps, and replays them;
an event is stored with the change it announces and delivered when that commits."""

from __future__ import annotations

import json
import uuid

import pytest
import redis
from django.db import transaction

from arena.sse import publish_on_commit, pubsub_channel
from arena.sse_storage import EventStorage
from debates import events
from tests.debates.events_helpers import published_types
from tests.threads import run_at_once

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


@pytest.mark.parametrize("size", [1, 3], ids=["one at a time", "three together"])
def test_concurrent_publishers_leave_no_gap_and_no_duplicate(size):
    storage = EventStorage()
    channel = f"test-{uuid.uuid4().hex}"
    got: list[int] = []

    def publish() -> None:
        for _ in range(30 // size):
            got.extend(e.id for e in storage.append_events(channel, [("status", {})] * size))

    run_at_once(publish, 8)
    assert sorted(got) == list(range(1, 241))
    assert [e.id for e in storage.get_events(channel, 0, limit=300)] == list(range(1, 241))


def _delivered(pubsub, channel: str = "") -> list[dict]:
    """Return the deliveries of ``channel`` heard so far (Redis pub/sub spans databases)."""
    messages = []
    while (message := pubsub.get_message(timeout=0.2)) is not None:
        if message["type"] == "message":
            messages.append(json.loads(message["data"]))
    return [m for m in messages if m["channel"] == channel]


@pytest.fixture
def pubsub(settings):
    client = redis.Redis(**settings.EVENTSTREAM_REDIS)
    subscription = client.pubsub()
    subscription.subscribe(pubsub_channel())
    _delivered(subscription)  # the subscription's confirmation
    yield subscription
    subscription.close()
    client.close()


def test_an_event_is_stored_with_its_transaction_and_delivered_when_it_commits(pubsub):
    channel = f"test-{uuid.uuid4().hex}"
    with transaction.atomic():
        publish_on_commit(channel, "status", {"n": 1})
        # stored (and numbered) inside the transaction, not delivered yet
        assert [e.id for e in EventStorage().get_events(channel, 0)] == [1]
        assert _delivered(pubsub, channel) == []
    [message] = _delivered(pubsub, channel)
    assert (message["channel"], message["event_type"], message["pub_id"]) == (
        channel,
        "status",
        "1",
    )
    assert json.loads(message["data"]) == {"n": 1}


def test_a_rolled_back_change_leaves_no_event(pubsub):
    channel = f"test-{uuid.uuid4().hex}"
    publish_on_commit(channel, "status", {"n": 1})
    with pytest.raises(RuntimeError), transaction.atomic():
        publish_on_commit(channel, "status", {"n": 2})
        raise RuntimeError("the change fails")
    publish_on_commit(channel, "status", {"n": 3})
    events = EventStorage().get_events(channel, 0)
    assert [(e.id, json.loads(e.data)) for e in events] == [(1, {"n": 1}), (2, {"n": 3})]
    assert [json.loads(m["data"]) for m in _delivered(pubsub, channel)] == [{"n": 1}, {"n": 3}]


def test_events_appended_together_are_numbered_in_order():
    storage = EventStorage()
    channel = f"test-{uuid.uuid4().hex}"
    first = storage.append_event(channel, "status", {"n": 0})
    batch = storage.append_events(channel, [("round_start", {"n": 1}), ("round_end", {"n": 2})])
    assert [first.id, *(e.id for e in batch)] == [1, 2, 3]
    assert [(e.id, e.type, e.data) for e in storage.get_events(channel, 0)] == [
        (1, "status", {"n": 0}),
        (2, "round_start", {"n": 1}),
        (3, "round_end", {"n": 2}),
    ]


def test_a_debates_events_announced_together_take_one_statement_in_order(
    django_assert_num_queries,
):
    debate_id = uuid.uuid4().int % 10**9
    events.round_started(debate_id, 1)  # the channel exists
    with transaction.atomic(), django_assert_num_queries(1), events.together(debate_id):
        events.round_ended(debate_id, 1)
        with events.together(debate_id):  # a block inside joins it
            events.round_started(debate_id, 2)
        events.step_failed(debate_id, step="round 2 turn", code="server_error", message="x")
    assert published_types(debate_id) == ["round_start", "round_end", "round_start", "error"]


def test_a_together_block_that_raises_publishes_nothing():
    debate_id = uuid.uuid4().int % 10**9
    with pytest.raises(RuntimeError), events.together(debate_id):
        events.round_started(debate_id, 1)
        raise RuntimeError("the change fails")
    assert published_types(debate_id) == []
