"""The in-memory broker of the embedded default wakes its consumer instead of polling.

kombu's virtual transports sleep ``polling_interval`` (1 s) after each empty poll; these
tests record every such sleep and require none: a consumer waiting for a message takes
it as it arrives, and a consumer at its prefetch limit takes the next queued message as
soon as it acknowledges one.
"""

from __future__ import annotations

import threading
import time

import pytest
from kombu import Connection, Consumer, Exchange, Producer, Queue

from arena.broker import InProcessTransport

PAUSE_S = 0.2  # lets the consumer reach its wait before the producer acts (order only)


@pytest.fixture
def sleeps(monkeypatch) -> list[float]:
    """Every sleep kombu's virtual transports take between polls."""
    taken: list[float] = []
    monkeypatch.setattr("kombu.transport.virtual.base.sleep", taken.append)
    return taken


def consume(connection: Connection, queue: Queue, wanted: int, prefetch: int, acks: list):
    """Return a thread draining ``connection`` until ``wanted`` messages came, and the
    list they are appended to; each message is appended to ``acks`` unacknowledged."""
    received: list = []

    def on_message(body, message) -> None:
        received.append(body)
        acks.append(message)

    def drain() -> None:
        channel = connection.channel()
        with Consumer(channel, [queue], callbacks=[on_message], prefetch_count=prefetch):
            while len(received) < wanted:
                connection.drain_events(timeout=30)

    thread = threading.Thread(target=drain, daemon=True)
    thread.start()
    return thread, received


def test_a_consumer_waiting_on_empty_queues_takes_a_message_as_it_arrives(sleeps):
    # given a consumer draining an empty queue of the in-process transport
    exchange = Exchange("broker-test", type="direct")
    queue = Queue("broker-test-arrival", exchange, routing_key="arrival")
    with Connection("memory://localhost/", transport=InProcessTransport) as connection:
        queue(connection.channel()).declare()
        thread, received = consume(connection, queue, wanted=1, prefetch=0, acks=[])
        time.sleep(PAUSE_S)
        # when a message is put on the queue
        Producer(connection.channel()).publish(
            {"n": 1}, exchange=exchange, routing_key="arrival", declare=[queue]
        )
        thread.join(timeout=30)
    # then the consumer took it, without a single poll's sleep
    assert received == [{"n": 1}]
    assert sleeps == []


def test_a_consumer_at_its_prefetch_limit_reads_on_as_soon_as_it_acknowledges(sleeps):
    # given two queued messages and a consumer allowed one unacknowledged message
    exchange = Exchange("broker-test", type="direct")
    queue = Queue("broker-test-prefetch", exchange, routing_key="prefetch")
    acks: list = []
    with Connection("memory://localhost/", transport=InProcessTransport) as connection:
        producer = Producer(connection.channel())
        for n in (1, 2):
            producer.publish({"n": n}, exchange=exchange, routing_key="prefetch", declare=[queue])
        thread, received = consume(connection, queue, wanted=2, prefetch=1, acks=acks)
        deadline = time.monotonic() + 30
        while not received and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(PAUSE_S)
        assert received == [{"n": 1}]
        # when it acknowledges the first, from another thread (as a pool thread does)
        acks[0].ack()
        thread.join(timeout=30)
    # then it read the second without a poll's sleep
    assert received == [{"n": 1}, {"n": 2}]
    assert sleeps == []
