"""The in-memory Celery broker of the embedded default, which wakes its worker on arrival.

kombu's in-memory transport is one of its "virtual" transports, which poll: when every
queue is empty, ``drain_events`` sleeps ``polling_interval`` (1 s) before it looks again.
Over Redis a worker blocks on the queue and wakes the moment a message lands; in memory
the in-process worker found each step of a debate run, sent by the step before it, up
to a second late, so a 3x3 debate took about 9 s for twelve answers of 1-3 ms each.

``InProcessTransport`` keeps kombu's in-memory queues and waits on a condition instead,
notified whenever a consumer may read something new: a message was put, or one was
acknowledged or rejected (a worker at its prefetch limit reads the next queued message
only once one of its own is acknowledged). A consumer with nothing it may read sleeps
until then (or until its timeout passes), and reads at once.
"""

from __future__ import annotations

import threading
import time
from queue import Empty

from kombu.transport import memory

# Notified whenever a consumer may read something new; ``_arrivals`` counts the
# notifications, so a consumer can tell whether one came since it last looked.
_arrived = threading.Condition()
_arrivals = 0


def _notify_arrival() -> None:
    global _arrivals
    with _arrived:
        _arrivals += 1
        _arrived.notify_all()


class InProcessChannel(memory.Channel):
    """kombu's in-memory channel, announcing each message it queues, and each one its
    consumer acknowledges or rejects."""

    def _put(self, queue, message, **kwargs) -> None:
        super()._put(queue, message, **kwargs)
        _notify_arrival()

    def _put_fanout(self, exchange, message, routing_key=None, **kwargs) -> None:
        super()._put_fanout(exchange, message, routing_key, **kwargs)
        _notify_arrival()

    def basic_ack(self, delivery_tag, multiple=False) -> None:
        super().basic_ack(delivery_tag, multiple=multiple)
        _notify_arrival()

    def basic_reject(self, delivery_tag, requeue=False) -> None:
        super().basic_reject(delivery_tag, requeue=requeue)
        _notify_arrival()


class InProcessTransport(memory.Transport):
    """kombu's in-memory transport, whose consumer waits for news, not for a poll."""

    Channel = InProcessChannel

    def drain_events(self, connection, timeout: float | None = None) -> None:
        """Deliver one message, waiting until one may be read; raise ``TimeoutError``
        (``socket.timeout``) after ``timeout`` seconds with none, as kombu's transports do."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            with _arrived:
                seen = _arrivals
            try:
                self.cycle.get(self._deliver, timeout=timeout)
                return
            except Empty:
                pass
            remaining = None if deadline is None else deadline - time.monotonic()
            if remaining is not None and remaining <= 0:
                raise TimeoutError()
            with _arrived:
                _arrived.wait_for(lambda seen=seen: _arrivals != seen, timeout=remaining)
