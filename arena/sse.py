"""The one door for live events: publishing them, and streaming a channel to a client.

Publishing: services never send an event directly; they call ``publish_on_commit``.
It stores the event in the surrounding transaction (``arena.sse_storage``: ids, replay;
the rows outlive a Redis restart), so the event exists exactly when the change it
announces does, and delivers it once that transaction commits: with ``EVENTSTREAM_REDIS``
set, to every web process through django-eventstream's Redis pub/sub channel; without
it, to this process's streams. A client never hears of a row that was rolled back.

Streaming: ``channel_stream`` serves one channel to one client from django-eventstream's
storage and its per-process listener registry. It replaces the library's stream loop,
which cannot send an ``initial`` event, trusts every live event it is given, and holds a
database connection for the life of each stream:

- storage is authoritative: a live event is passed on only if its id follows the last
  one sent; a gap (a burst past a stream's queue, two publishers crossing, a message lost
  while Redis restarted) makes the stream re-read storage from its last id, and an id
  already sent is dropped. Clients see every id once, in order.
- storage is read through a few shared threads (``SSE_DB_THREADS`` per process), each
  read treated like a request (connections are closed past ``CONN_MAX_AGE``): an open
  stream holds no connection of its own, and a web process uses at most
  ``SSE_DB_THREADS`` connections whatever the number of open streams. Streams needing
  the same read share it.
- the Redis subscriber (``_Relay``, replacing the library's, which stops for good at its
  first Redis error) reconnects for ever and, after each (re)subscription, makes every
  local stream re-read storage; a periodic sweep catches up a stream whose channel moved
  on without it hearing (a publisher killed between storing an event and publishing it).
  It queues up to ``QUEUE_LIMIT`` events per stream (the library, 10).
- one timer per event loop sends the keep-alives of all its streams.

Versions: each channel has a version in the shared cache (``channel_version``) that
changes when a publish to it commits, before the event is delivered, and when a change
its events do not announce commits (``channel_touch_on_commit``). What is stored under
a channel's version is current while that version is: reading it costs no query.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import secrets
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar
from urllib.parse import unquote

from asgiref.sync import sync_to_async
from django.conf import settings
from django.core.cache import cache
from django.core.serializers.json import DjangoJSONEncoder
from django.db import close_old_connections, transaction
from django_eventstream.event import Event
from django_eventstream.storage import EventDoesNotExist
from django_eventstream.utils import get_storage, make_id, parse_last_event_id, sse_encode_event
from django_eventstream.views import Listener, get_listener_manager

logger = logging.getLogger(__name__)

T = TypeVar("T")

# Events per storage read; a longer backlog is read in several passes.
READ_LIMIT = 100
# Events queued per stream by the Redis relay before it must re-read storage instead
# (django-eventstream's own queue holds 10: a burst would send every stream to storage).
QUEUE_LIMIT = 1000
# Seconds before a stream retries a storage read that failed (the database restarting).
READ_RETRY_SECONDS = 1.0
# The first chunk: 2 KB of padding (some proxies and old browsers hold back small bodies).
PADDING = ":" + " " * 2048 + "\n\n"
HEARTBEAT = b"event: keep-alive\ndata:\n\n"


def pubsub_channel() -> str:
    """Return the Redis pub/sub channel every event is delivered on (``SSE_PUBSUB_CHANNEL``)."""
    return settings.SSE_PUBSUB_CHANNEL


def debate_channel(debate_id: int) -> str:
    """Return the stream channel of a debate."""
    return f"debate-{debate_id}"


def owner_channel(owner_id: int) -> str:
    """Return the channel of what an owner's debates show of the owner's other rows (a
    strategy's name, a model's, a schedule or trader that is gone). No event is sent on
    it: its version (``channel_touch_on_commit``) changes when one of those is saved or
    deleted, so a stored rendering keyed by it shows them as they are."""
    return f"owner-{owner_id}"


def open_channel(channel: str) -> None:
    """Make ``channel`` ready for its events, in the current transaction.

    Optional: a channel's first publish opens it otherwise. Opening it with the object
    whose events it carries keeps that work off the first event's path.
    """
    get_storage().open_channel(channel)


def publish_on_commit(channel: str, event_type: str, data: dict[str, Any]) -> None:
    """Store ``event_type`` with ``data`` on ``channel`` now; deliver it on commit.

    Outside a transaction the event is stored and delivered at once. A failure to
    deliver is logged and does not undo the committed work: the event is stored, and
    streams catch up from storage (see the module docstring).
    """
    publish_all_on_commit(channel, [(event_type, data)])


def publish_all_on_commit(channel: str, items: list[tuple[str, dict[str, Any]]]) -> None:
    """Do what ``publish_on_commit`` does for several events (type, data) of one channel,
    in order, stored with one statement."""
    # Encoded as django-eventstream's send_event does: the stream sends this text as is.
    encoded = [(kind, json.dumps(data, cls=DjangoJSONEncoder)) for kind, data in items]
    events = get_storage().append_events(channel, encoded)
    transaction.on_commit(functools.partial(_deliver, events))


def _deliver(events: list[Event]) -> None:
    try:
        _touch(events[0].channel)
        config = getattr(settings, "EVENTSTREAM_REDIS", None)
        if config is None:
            for event in events:
                queue_to_streams(event)
            return
        with _redis_client(**config).pipeline(transaction=False) as pipe:
            for event in events:
                message = {
                    "channel": event.channel,
                    "event_type": event.type,
                    "data": event.data,
                    "pub_id": str(event.id),
                }
                pipe.publish(pubsub_channel(), json.dumps(message))
            pipe.execute()
    except Exception:
        logger.exception(
            "could not deliver %s on %s", ", ".join(e.type for e in events), events[0].channel
        )


@functools.cache
def _redis_client(**config: Any) -> Any:
    import redis

    return redis.Redis(**config)


def queue_to_streams(event: Event) -> None:
    """Queue ``event`` to this process's streams of its channel and wake them.

    As django-eventstream's ``add_to_queues`` does, with room for a burst
    (``QUEUE_LIMIT``); past it, a stream re-reads storage instead.
    """
    manager = get_listener_manager()
    with manager.lock:
        listeners = list(manager.listeners_by_channel.get(event.channel, ()))
        for listener in listeners:
            items = listener.channel_items.setdefault(event.channel, [])
            if len(items) < QUEUE_LIMIT:
                items.append(event)
            else:
                listener.overflow = True
    for listener in listeners:
        listener.wake_threadsafe()


# --- Channel versions ---------------------------------------------------------------------

# How long a channel's version is kept after it was first given (then a new one starts).
VERSION_TTL_S = 30 * 24 * 3600


def _version_key(channel: str) -> str:
    return f"sse-version:{channel}"


def channel_version(channel: str) -> int | None:
    """Return the current version of ``channel``: a number that changes once each change
    announced on it (or touched) has committed; ``None`` without a shared cache
    (``CACHE_SHARED``), where versions are not kept.

    A channel without a version (new, or evicted) starts at a random one: a number, once
    given, is never given again to a later state of the channel.
    """
    return channel_versions([channel])[channel]


def channel_versions(channels: list[str]) -> dict[str, int | None]:
    """Return the current version of each of ``channels`` (``channel_version``), read
    together."""
    if not settings.CACHE_SHARED:
        return dict.fromkeys(channels)
    keys = {_version_key(channel): channel for channel in channels}
    found = cache.get_many(keys)
    if missing := [key for key in keys if key not in found]:
        for key in missing:
            cache.add(key, secrets.randbits(62), VERSION_TTL_S)
        found.update(cache.get_many(missing))
    return {channel: found.get(key) for key, channel in keys.items()}


def channel_touch_on_commit(channel: str) -> None:
    """Change ``channel``'s version when the current transaction commits (at once outside
    one), for a change its events do not announce (what it belongs to was deleted)."""
    transaction.on_commit(functools.partial(_touch, channel))


def _touch(channel: str) -> None:
    if settings.CACHE_SHARED:
        with contextlib.suppress(ValueError):  # no version yet: the next reader starts one
            cache.incr(_version_key(channel))


# --- Event ids ----------------------------------------------------------------------------


def event_id(channel: str, number: int) -> str:
    """Return the SSE id of event ``number`` of ``channel`` (``debate-7:12``)."""
    return make_id({channel: number})


def parse_event_id(value: str, channel: str) -> int | None:
    """Return the number ``value`` (a ``Last-Event-ID``) gives for ``channel``.

    ``None`` when the id names other channels only; ``ValueError`` when it is malformed.
    """
    try:
        parsed = {unquote(name): number for name, number in parse_last_event_id(value).items()}
        number = parsed.get(channel)
        return None if number is None else _non_negative(int(number))
    except ValueError:
        raise
    except Exception as exc:
        raise ValueError(f"malformed event id {value!r}") from exc


def _non_negative(number: int) -> int:
    if number < 0:
        raise ValueError("negative event number")
    return number


def current_event_number(channel: str) -> int:
    """Return the number of the latest stored event of ``channel`` (0 when none)."""
    return int(get_storage().get_current_id(channel))


def stored_event_known(channel: str, number: int) -> bool:
    """Return whether a stream may resume after event ``number`` of ``channel``."""
    try:
        get_storage().get_events(channel, number, limit=0)
    except EventDoesNotExist:
        return False
    return number <= current_event_number(channel)


def encode(event_type: str, data: str, channel: str, number: int) -> str:
    """Return one SSE event: ``data`` is JSON text, the id is ``channel:number``."""
    return sse_encode_event(event_type, data, event_id=event_id(channel, number))


# --- Database access from streams ---------------------------------------------------------

_executor: ThreadPoolExecutor | None = None


def _db_executor() -> ThreadPoolExecutor:
    global _executor
    if _executor is None:
        _executor = ThreadPoolExecutor(
            max_workers=settings.SSE_DB_THREADS, thread_name_prefix="sse-db"
        )
    return _executor


async def run_db(function: Callable[..., T], *args: Any) -> T:
    """Run ``function(*args)`` on a stream database thread; return its result.

    Each call is treated like a request: connections past ``CONN_MAX_AGE`` are closed
    before and after it. At most ``SSE_DB_THREADS`` connections per process serve every
    open stream (none between reads with ``CONN_MAX_AGE = 0``).
    """

    def call() -> T:
        close_old_connections()
        try:
            return function(*args)
        finally:
            close_old_connections()

    return await sync_to_async(call, thread_sensitive=False, executor=_db_executor())()


def _read(channel: str, after: int) -> list[Event] | None:
    """Return up to ``READ_LIMIT`` stored events after ``after``; ``None`` if unknown."""
    try:
        return get_storage().get_events(channel, after, limit=READ_LIMIT)
    except EventDoesNotExist:
        return None


_reads: dict[tuple[str, int], tuple[asyncio.Future, list[bool]]] = {}


async def _read_shared(channel: str, after: int) -> list[Event] | None:
    """Return ``_read(channel, after)``, sharing a read with streams at the same point.

    A stream joins a read of the same ``(channel, after)`` only while that read has not
    started: a read that began earlier might miss what this stream was woken for.
    After a burst or a Redis reconnection, hundreds of streams need the same read.
    """
    key = (channel, after)
    loop = asyncio.get_running_loop()
    pending = _reads.get(key)
    if pending is None or pending[1][0] or pending[0].get_loop() is not loop:
        started = [False]

        def read() -> list[Event] | None:
            started[0] = True
            return _read(channel, after)

        pending = (asyncio.ensure_future(run_db(read)), started)
        _reads[key] = pending
        pending[0].add_done_callback(
            lambda _, key=key, pending=pending: (
                _reads.pop(key) if _reads.get(key) is pending else None
            )
        )
    # Shielded: a client leaving does not cancel the read for the others.
    return await asyncio.shield(pending[0])


def _current_numbers(channels: Iterable[str]) -> dict[str, int]:
    return {channel: current_event_number(channel) for channel in channels}


# --- One client's stream ------------------------------------------------------------------


class StreamListener(Listener):
    """A django-eventstream listener that remembers what its stream sent, and when."""

    def __init__(self, channel: str, last_id: int, user_id: Any) -> None:
        super().__init__()
        self.channel = channel
        self.channels = {channel}
        self.user_id = user_id
        self.last_id = last_id
        self.last_sent = time.monotonic()
        self.heartbeat_due = False
        self._loop_thread: int | None = None

    def assign_loop(self) -> None:
        """Bind the listener to the running event loop (and its thread)."""
        super().assign_loop()
        self._loop_thread = threading.get_ident()

    def wake_threadsafe(self) -> None:
        """Wake the stream; directly when called on its own loop (the Redis relay)."""
        if threading.get_ident() == self._loop_thread:
            self.aevent.set()
        else:
            super().wake_threadsafe()

    def drain(self, lock: threading.Lock) -> tuple[list[Event], bool]:
        """Return the events queued for the stream and whether the queue overflowed (the
        stream must re-read storage); empty both, and clear the wake-up, under ``lock``."""
        with lock:
            items = self.channel_items.pop(self.channel, [])
            overflowed = self.overflow
            self.overflow = False
            self.aevent.clear()
        return items, overflowed

    def take_stored(self, events: list[Event]) -> bytes:
        """Return the SSE text of the stored ``events`` after the last one sent."""
        body = b""
        for event in events:
            if event.id > self.last_id:
                self.last_id = event.id
                body += _encoded(event.type, event.data, self.channel, self.last_id)
        return body

    def outgoing(self, body: bytes) -> bytes:
        """Return what the stream sends now: ``body``, else a keep-alive when one is due,
        else nothing (``b""``); what goes out resets the keep-alive's clock."""
        if not body and self.heartbeat_due:
            body = HEARTBEAT
        if body:
            self.heartbeat_due = False
            self.last_sent = time.monotonic()
        return body

    def take_queued(self, items: list[Event]) -> tuple[bytes, bool]:
        """Return the SSE text of the queued ``items`` that follow the last one sent, in
        order, and whether a gap stopped it (storage has what came in between)."""
        body = b""
        for item in items:
            number = None if item.id is None else int(item.id)
            if number is not None and number <= self.last_id:
                continue  # already sent (read from storage, or delivered twice)
            if number != self.last_id + 1:
                return body, True
            self.last_id = number
            body += _encoded(item.type, item.data, self.channel, self.last_id)
        return body, False


def _local_listeners() -> list[StreamListener]:
    """Return the streams of this process that run on the running event loop."""
    loop = asyncio.get_running_loop()
    manager = get_listener_manager()
    with manager.lock:
        return [
            listener
            for listeners in manager.listeners_by_channel.values()
            for listener in listeners
            if isinstance(listener, StreamListener) and listener.loop is loop
        ]


def _wake_to_reread(listeners: Iterable[Listener]) -> None:
    """Make ``listeners`` re-read storage (the library's overflow flag means just that)."""
    manager = get_listener_manager()
    woken = []
    with manager.lock:
        for listener in listeners:
            listener.overflow = True
            woken.append(listener)
    for listener in woken:
        listener.wake_threadsafe()


@functools.lru_cache(maxsize=4096)
def _encoded(event_type: str, data: str, channel: str, number: int) -> bytes:
    # Every stream of a channel sends the same bytes for an event: encode it once.
    return encode(event_type, data, channel, number).encode()


class _Heartbeats:
    """One timer per event loop for the keep-alives of every stream.

    A timeout around each wait would cost more than the event it waits for, with
    hundreds of streams; instead, twice per ``SSE_HEARTBEAT_SECONDS`` this marks the
    streams silent for that long and wakes them.
    """

    def __init__(self) -> None:
        self._task: asyncio.Task | None = None

    def ensure_running(self) -> None:
        """Start the timer on the running loop, unless it runs there."""
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._task.get_loop() is not loop:
            self._task = loop.create_task(self._tick())

    async def _tick(self) -> None:
        while True:
            interval = settings.SSE_HEARTBEAT_SECONDS
            await asyncio.sleep(interval / 2)
            now = time.monotonic()
            for listener in _local_listeners():
                if now - listener.last_sent >= interval:
                    listener.heartbeat_due = True
                    listener.wake_threadsafe()


heartbeats = _Heartbeats()


async def channel_stream(
    channel: str, *, after: int, head: str = "", user_id: Any = "anonymous"
) -> AsyncIterator[bytes]:
    """Yield the SSE text of every event of ``channel`` after number ``after``, for ever.

    ``head`` (already encoded events, such as ``initial``) goes out first, after the
    padding. A keep-alive event goes out after ``SSE_HEARTBEAT_SECONDS`` (to 1.5 times
    that) of silence. The stream ends when ``after`` is no longer in storage (trimmed):
    the client reconnects with its last id and is told to start over.
    """
    manager = get_listener_manager()
    listener = StreamListener(channel, after, user_id)
    listener.assign_loop()
    relay.ensure_running()
    heartbeats.ensure_running()
    manager.add_listener(listener)
    try:
        yield (PADDING + head).encode()
        reread = True
        while True:
            body, more = b"", False
            if reread:
                events = await _read_retrying(channel, listener.last_id)
                if events is None:
                    return
                body = listener.take_stored(events)
                more = len(events) == READ_LIMIT
            items, overflowed = listener.drain(manager.lock)
            queued, gap = listener.take_queued(items)
            body += queued
            reread = overflowed or more or gap
            body = listener.outgoing(body)
            if body:
                yield body
            if not (reread or items):
                await listener.aevent.wait()
    finally:
        manager.remove_listener(listener)


async def _read_retrying(channel: str, after: int) -> list[Event] | None:
    """Return ``_read_shared(channel, after)``, retried every ``READ_RETRY_SECONDS``
    while storage cannot be read (the database restarting)."""
    while True:
        try:
            return await _read_shared(channel, after)
        except Exception as exc:
            logger.warning("stream of %s could not read storage (%s)", channel, exc)
            await asyncio.sleep(READ_RETRY_SECONDS)


# --- Events from other processes ----------------------------------------------------------


class _Relay:
    """This process's subscriber to django-eventstream's Redis channel.

    It replaces the library's subscriber task, which ends for good at its first Redis
    error. This one reconnects with a growing pause (up to 5 s); every subscription
    (the first one too) is followed by a re-read of storage by every local stream, which
    recovers the events published while nobody in this process was subscribed. A sweep
    every ``SSE_HEARTBEAT_SECONDS`` does the same for streams behind their channel.
    """

    def __init__(self) -> None:
        self._tasks: list[asyncio.Task] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    def ensure_running(self) -> None:
        """Start the subscriber and the sweep on the running loop, unless they run."""
        config = getattr(settings, "EVENTSTREAM_REDIS", None)
        if config is None:
            return  # in-process delivery: publish_on_commit queues to this process's listeners
        get_listener_manager().redis_listener = None  # never start the library's task
        loop = asyncio.get_running_loop()
        if self._loop is loop and all(not task.done() for task in self._tasks):
            return
        self._loop = loop
        self._tasks = [
            loop.create_task(self._subscribe(dict(config))),
            loop.create_task(self._sweep()),
        ]

    async def _subscribe(self, config: dict[str, Any]) -> None:
        from redis.asyncio import Redis

        pause = 0.1
        while True:
            client = Redis(
                **config, health_check_interval=10, socket_keepalive=True, socket_timeout=15
            )
            pubsub = client.pubsub()
            try:
                await pubsub.subscribe(pubsub_channel())
                while True:
                    message = await pubsub.get_message(timeout=5.0)
                    if message is None:
                        continue
                    if message["type"] == "message":
                        self._deliver(message["data"])
                    elif message["type"] == "subscribe":
                        # (Re)subscribed, perhaps after a Redis restart inside redis-py's
                        # own retries: whatever was published meanwhile is in storage.
                        pause = 0.1
                        _wake_to_reread(_local_listeners())
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                logger.warning("SSE relay lost Redis (%s); reconnecting in %.1fs", exc, pause)
            finally:
                with contextlib.suppress(Exception):
                    await pubsub.aclose()
                with contextlib.suppress(Exception):
                    await client.aclose()
            await asyncio.sleep(pause)
            pause = min(pause * 2, 5.0)

    @staticmethod
    def _deliver(raw: bytes | str) -> None:
        message = json.loads(raw)
        queue_to_streams(
            Event(message["channel"], message["event_type"], message["data"], id=message["pub_id"])
        )

    async def _sweep(self) -> None:
        while True:
            await asyncio.sleep(settings.SSE_HEARTBEAT_SECONDS)
            try:
                listeners = _local_listeners()
                if not listeners:
                    continue
                current = await run_db(_current_numbers, {lsn.channel for lsn in listeners})
                _wake_to_reread(lsn for lsn in listeners if lsn.last_id < current[lsn.channel])
            except Exception:
                logger.exception("SSE catch-up sweep failed")


relay = _Relay()
