"""The live stream end to end: uvicorn web processes, a Celery worker process, Redis and
the fake model server, read by real SSE clients (SPEC 7)."""

from __future__ import annotations

import threading
import time

import httpx
import pytest
from django.db import transaction

from arena.sse import debate_channel, publish_on_commit
from tests.debates.conftest import worker_processes
from tests.debates.events_helpers import TWO_BY_TWO_EVENTS, published
from tests.debates.factories import DebateFactory
from tests.streams.conftest import database_connections, publish_process
from tests.streams.schemas import STATE_FIELDS, validate_event
from tests.streams.sse import SSEClient, SSEEvent
from tests.threads import run_at_once

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def finished(client: SSEClient) -> bool:
    """Return whether the client heard the debate complete."""
    return any(e.type == "status" and e.json["status"] == "completed" for e in client.received())


def assert_contiguous(events: list[SSEEvent], first: int) -> None:
    """Assert event numbers ``first, first + 1, ...``: in order, none missing, none twice."""
    assert [event.number for event in events] == list(range(first, first + len(events)))


def publish(channel: str, count: int, *, threads: int = 1, pause: float = 0.0) -> None:
    """Publish ``count`` round_start events from this process (not a web process)."""
    numbers = iter(range(count))
    lock = threading.Lock()

    def run() -> None:
        while True:
            with lock:
                index = next(numbers, None)
            if index is None:
                return
            with transaction.atomic():
                publish_on_commit(channel, "round_start", {"round": index + 1})
            time.sleep(pause)

    run_at_once(run, threads)


@pytest.fixture
def worker_process(transactional_db):
    """A Celery worker process (prefork), as ``make serve`` runs it."""
    with worker_processes() as workers:
        yield workers.start("streams")


def test_a_whole_debate_reaches_the_client_in_order_with_the_rest_payloads(
    web, worker_process, llm, make_debate, api_token
):
    # given a 2x2 debate, a web process, a worker process and a client on the stream
    debate = make_debate(personalities=("bull", "bear"), rounds=2)
    server = web()
    auth = {"Authorization": f"Token {api_token}"}
    token = httpx.post(f"{server.url}/api/debates/{debate.pk}/stream-token", headers=auth)
    with SSEClient(server.stream_url(debate.pk), params={"token": token.json()["token"]}) as client:
        client.wait_for_type("initial")
        # when the debate is started through the API and runs on the worker
        started = httpx.post(f"{server.url}/api/debates/{debate.pk}/start", headers=auth)
        assert started.status_code == 200
        client.wait(finished, timeout=60, what="status completed")
        client.wait_for_type("consensus")
        detail = httpx.get(f"{server.url}/api/debates/{debate.pk}", headers=auth).json()
    events = client.received()
    # then the client heard every step, in order, each id once
    assert events[0].type == "initial"
    assert [e.type for e in events[1:] if e.type != "status"] == TWO_BY_TWO_EVENTS
    assert_contiguous(events, events[0].number)
    statuses = [e.json["status"] for e in events if e.type == "status"]
    assert statuses[0] == "running"
    assert statuses[-1] == "completed"
    # and every payload is what REST shows afterwards
    for event in events:
        validate_event(event.type, event.json)
    initial = events[0].json
    assert (initial["id"], initial["status"], initial["event_id"]) == (
        debate.pk,
        "pending",
        events[0].id,
    )
    by_id = lambda items: sorted(items, key=lambda item: item["id"])  # noqa: E731
    assert by_id(e.json for e in events if e.type == "message") == by_id(detail["messages"])
    assert by_id(e.json for e in events if e.type == "vote") == by_id(detail["votes"])
    [consensus] = [e.json for e in events if e.type == "consensus"]
    assert consensus == {"decisions": detail["decisions"]}
    last_status = [e.json for e in events if e.type == "status"][-1]
    assert {k: last_status[k] for k in STATE_FIELDS} == {k: detail[k] for k in STATE_FIELDS}


def test_a_client_reconnecting_with_last_event_id_receives_exactly_what_it_missed(
    web, worker_process, llm, make_debate, stream_token
):
    # given a debate with slow model calls and a client on its stream
    llm.set_latency(0.3)
    debate = make_debate(personalities=("bull", "bear"), rounds=2)
    server = web()
    url, params = server.stream_url(debate.pk), {"token": stream_token(debate.pk)}
    from debates.services import debate_start

    with SSEClient(url, params=params) as first:
        first.wait_for_type("initial")
        debate_start(debate_id=debate.pk)
        # when it disconnects after the second message
        first.wait_for_type("message", 2)
    seen = first.received()
    last = seen[-1]
    assert last.number < len(published(debate.pk)) + 1, "the debate should still be running"
    # and reconnects with the id of the last event it got, as an EventSource does
    with SSEClient(url, params=params, headers={"Last-Event-ID": last.id}) as second:
        second.wait(finished, timeout=60, what="status completed")
        second.wait_for_type("consensus")
    missed = second.received()
    # then it receives exactly the events after that id: no initial, no repeat, no gap
    stored = published(debate.pk)
    assert [(e.type, e.json) for e in missed] == stored[last.number :]
    assert_contiguous(missed, last.number + 1)
    assert [e.type for e in seen + missed if e.type != "status"] == ["initial", *TWO_BY_TWO_EVENTS]


def test_clients_of_two_web_processes_receive_the_same_events(web, user):
    # given a debate and a client on each of two web processes
    debate = DebateFactory(owner=user)
    from debates.streams import stream_token_issue

    token = stream_token_issue(user=user, debate_id=debate.pk).token
    first, second = web(), web()
    with (
        SSEClient(first.stream_url(debate.pk), params={"token": token}) as a,
        SSEClient(second.stream_url(debate.pk), params={"token": token}) as b,
    ):
        a.wait_for_type("initial")
        b.wait_for_type("initial")
        # when another process publishes 30 events
        publish(debate_channel(debate.pk), 30)
        a.wait_for_type("round_start", 30)
        b.wait_for_type("round_start", 30)
    # then both heard the same events, with the same ids, in the same order
    heard_a = [(e.id, e.type, e.data) for e in a.received()[1:]]
    heard_b = [(e.id, e.type, e.data) for e in b.received()[1:]]
    assert heard_a == heard_b
    assert [e.json["round"] for e in a.received()[1:]] == list(range(1, 31))
    assert_contiguous(a.received(), 0)


def test_a_burst_from_concurrent_publishers_arrives_whole_and_in_order(web, user, stream_token):
    # given two clients on a debate's stream
    debate = DebateFactory(owner=user)
    server = web()
    url, params = server.stream_url(debate.pk), {"token": stream_token(debate.pk)}
    with SSEClient(url, params=params) as a, SSEClient(url, params=params) as b:
        a.wait_for_type("initial")
        b.wait_for_type("initial")
        # when 4 threads of another process publish 300 events as fast as they can
        # (far more than a listener's 10-event queue; their pub/sub order may cross)
        started = time.monotonic()
        publish(debate_channel(debate.pk), 300, threads=4)
        burst = time.monotonic() - started
        a.wait_for_type("round_start", 300, timeout=30)
        b.wait_for_type("round_start", 300, timeout=30)
    # then each client got all of them once, in id order, as stored
    stored = published(debate.pk)
    for client in (a, b):
        events = client.received()[1:]
        assert_contiguous(events, 1)
        assert [(e.type, e.json) for e in events] == stored
    assert burst < 10


def test_no_event_is_lost_while_clients_connect(web, user, api_token, stream_token):
    # given a debate whose stream another process keeps publishing to
    debate = DebateFactory(owner=user)
    server = web()
    url, params = server.stream_url(debate.pk), {"token": stream_token(debate.pk)}
    auth = {"Authorization": f"Token {api_token}"}
    publisher = threading.Thread(
        target=publish, args=(debate_channel(debate.pk), 200), kwargs={"pause": 0.005}
    )
    publisher.start()
    clients = []
    try:
        # when clients connect meanwhile: fresh ones (initial), and ones starting from
        # the event_id of the REST detail they just fetched
        for index in range(12):
            if index % 2:
                detail = httpx.get(f"{server.url}/api/debates/{debate.pk}", headers=auth).json()
                clients.append(SSEClient(url, params={**params, "lastEventId": detail["event_id"]}))
                clients[-1].start_after = int(detail["event_id"].rsplit(":", 1)[1])
            else:
                clients.append(SSEClient(url, params=params))
            time.sleep(0.07)
        publisher.join()
        # then every client hears every event after its starting point, once, in order
        for client in clients:
            client.wait(lambda c: c.received() and c.received()[-1].number == 200, what="event 200")
            events = client.received()
            if events[0].type == "initial":
                assert_contiguous(events, events[0].number)
            else:
                assert_contiguous(events, client.start_after + 1)
    finally:
        publisher.join()
        for client in clients:
            client.close()


def test_no_event_is_lost_across_a_redis_restart(web, user, stream_token, private_redis):
    # given a web process and a client, on a Redis of this test's own
    debate = DebateFactory(owner=user)
    channel = debate_channel(debate.pk)
    server = web(REDIS_URL=private_redis.url)
    url, params = server.stream_url(debate.pk), {"token": stream_token(debate.pk)}
    with SSEClient(url, params=params) as client:
        client.wait_for_type("initial")
        publish_process(channel=channel, count=2, redis_url=private_redis.url)
        client.wait_for_type("round_start", 2)
        # when Redis dies (losing everything in it), an event is published meanwhile
        # (stored, but nobody hears it), and Redis starts again, empty
        private_redis.stop()
        publish_process(channel=channel, count=1, start=2, redis_url=private_redis.url)
        private_redis.start()
        # then the client gets that event, though nothing was published after it
        client.wait_for_type("round_start", 3, timeout=20)
        # and hears what is published next
        publish_process(channel=channel, count=2, start=3, redis_url=private_redis.url)
        client.wait_for_type("round_start", 5, timeout=20)
        time.sleep(0.5)
    events = client.received()[1:]
    assert [e.json["round"] for e in events] == [0, 1, 2, 3, 4]
    assert_contiguous(events, 1)


def test_open_streams_hold_no_database_connection(web, user, stream_token, settings):
    # given a web process, and its connections to this test run's database now
    debate = DebateFactory(owner=user)
    server = web()
    url, params = server.stream_url(debate.pk), {"token": stream_token(debate.pk)}
    baseline = database_connections(server.process.pid)
    # when 120 clients (more than PostgreSQL's default 100 connections) hold streams open
    # (they connect all at once from one event loop, which a loaded machine can take
    # longer than the usual 10 s to get through: the streams are what is measured)
    clients = [SSEClient(url, params=params, connect_timeout=60) for _ in range(120)]
    try:
        for client in clients:
            client.wait_for_type("initial", timeout=60)
        # then the web process uses at most its SSE_DB_THREADS connections
        time.sleep(1.0)
        during = database_connections(server.process.pid)
        print(f"\nPostgreSQL connections: {baseline} before, {during} with 120 open streams")
        assert during - baseline <= settings.SSE_DB_THREADS
        # and every stream is alive
        publish(debate_channel(debate.pk), 1)
        for client in clients:
            client.wait_for_type("round_start", timeout=30)
    finally:
        for client in clients:
            client.close()


def test_idle_streams_get_heartbeats_and_no_proxy_buffering(web, user, stream_token):
    # given a web process with a 0.3 s heartbeat
    debate = DebateFactory(owner=user)
    server = web(SSE_HEARTBEAT_SECONDS="0.3")
    # when a client holds an idle stream for a second
    with SSEClient(server.stream_url(debate.pk), params={"token": stream_token(debate.pk)}) as c:
        c.wait_for_type("initial")
        c.wait(lambda c: sum(e.type == "keep-alive" for e in c.events) >= 2, timeout=5)
    # then it got keep-alive events, and headers that stop proxies from buffering
    assert c.headers["content-type"].startswith("text/event-stream")
    assert c.headers["cache-control"] == "no-cache"
    assert c.headers["x-accel-buffering"] == "no"
