"""SSE delivery: latency and loss of a debate's live events under many clients.

N clients hold ``GET /api/debates/{id}/stream`` open on one debate, served by uvicorn
(the ``web`` process of the Procfile: 2 processes). A publisher process, as a Celery
worker would, publishes M events through ``arena.sse.publish_on_commit``, each carrying
its publish time: at a steady rate, then (``--burst``) back to back. The clients (raw
sockets on asyncio, in a few processes of their own) note when each event arrives.
N = 1 is the baseline: the cost of one delivery (store, Redis, relay, one stream).

Printed per round: delivery latency p50 / p99 / max (publish time to receive time, one
clock), the publisher's own time per event (``pub p50``: the INSERT in storage and the
Redis PUBLISH), events lost (N x M minus the distinct events received), duplicates,
clients that saw events out of order, the PostgreSQL connections of the benchmark
database before the N clients connected and with them open, the CPU used by the web
processes, the client processes and the publisher while publishing (% of one core), and
the machine's load average (other work on the machine shows there).

    python -m bench.sse [--clients 1 100 300 500] [--events 200] [--rate 20]
                        [--web-workers 2] [--client-processes 2] [--no-burst]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from bench.common import (
    DATABASE_URL,
    ROOT,
    bench_env,
    machine,
    percentile,
    setup_django,
    stop_process,
    web_server,
)

EVENT_TYPE = "bench"


# --- Clients (run in their own processes) --------------------------------------------------


@dataclass
class Reception:
    """What one client connection heard."""

    latencies: list[float]
    seqs: list[int]


async def _read_chunked(reader: asyncio.StreamReader):
    """Yield the body chunks of a chunked HTTP/1.1 response."""
    while True:
        size = int((await reader.readline()).split(b";")[0], 16)
        if size == 0:
            return
        data = await reader.readexactly(size + 2)
        yield data[:-2]


async def _client(
    host: str, port: int, path: str, token: str, events: int, ready: asyncio.Queue
) -> Reception:
    reception = Reception(latencies=[], seqs=[])
    reader, writer = await asyncio.open_connection(host, port, limit=1 << 20)
    request = (
        f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nAuthorization: Token {token}\r\n"
        "Accept: text/event-stream\r\n\r\n"
    )
    writer.write(request.encode())
    status = await reader.readline()
    if b" 200 " not in status:
        raise RuntimeError(f"stream refused: {status!r}")
    while (await reader.readline()) not in (b"\r\n", b""):
        pass
    buffer = b""
    announced = False
    try:
        async for chunk in _read_chunked(reader):
            received = time.time()
            buffer += chunk
            *blocks, buffer = buffer.split(b"\n\n")
            for block in blocks:
                if block.startswith(b"event: initial") and not announced:
                    announced = True
                    await ready.put(1)
                elif block.startswith(b"event: " + EVENT_TYPE.encode()):
                    data = json.loads(block.rsplit(b"\ndata: ", 1)[1])
                    reception.seqs.append(data["seq"])
                    reception.latencies.append(received - data["t"])
            if reception.seqs and reception.seqs[-1] == events - 1:
                return reception
    finally:
        writer.close()
    return reception


async def _clients_main(args: argparse.Namespace) -> None:
    # A measuring client must not pause on its own: no cyclic collection while it runs.
    gc.disable()
    ready: asyncio.Queue = asyncio.Queue()
    tasks = await _connect_all(args, ready)
    for _ in range(args.count):
        await asyncio.wait_for(ready.get(), timeout=120)
    print("READY", flush=True)
    done, pending = await asyncio.wait(tasks, timeout=args.timeout)
    for task in pending:
        task.cancel()
    receptions = [task.result() for task in done if task.exception() is None]
    failures = [repr(task.exception()) for task in done if task.exception() is not None]
    summary = {
        "latencies": [lat for r in receptions for lat in r.latencies],
        "seqs": [r.seqs for r in receptions],
        "unfinished": len(pending),
        "failures": failures[:5],
    }
    print(json.dumps(summary), flush=True)


async def _connect_all(args: argparse.Namespace, ready: asyncio.Queue) -> list[asyncio.Task]:
    """Start ``args.count`` clients, 50 at a time, as real browsers would arrive."""
    tasks = []
    for index in range(args.count):
        tasks.append(
            asyncio.create_task(
                _client(args.host, args.port, args.path, args.token, args.events, ready)
            )
        )
        if index % 50 == 49:
            await asyncio.sleep(0.05)  # a gentle ramp
    return tasks


def _raise_open_files_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    with contextlib.suppress(ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))


# --- Publisher (its own process, like a worker) --------------------------------------------


def _publisher_main(args: argparse.Namespace) -> None:
    import django

    django.setup()
    from arena.sse import debate_channel, publish_on_commit

    channel = debate_channel(args.debate)
    interval = 1.0 / args.rate if args.rate > 0 else 0.0
    durations = []
    print("START", flush=True)
    start = time.monotonic()
    for seq in range(args.events):
        delay = start + seq * interval - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        published = time.time()
        publish_on_commit(channel, EVENT_TYPE, {"seq": seq, "t": published})
        durations.append(time.time() - published)
    print(json.dumps({"durations": durations}), flush=True)


# --- Orchestration --------------------------------------------------------------------------


def _cpu_seconds(group: int) -> float:
    """Return the CPU seconds used so far by the live processes of process group ``group``."""
    total = 0.0
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == group:  # pgrp; utime and stime follow at 11 and 12
            total += (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    return total


def _database_connections() -> int:
    import psycopg

    server, name = DATABASE_URL.rsplit("/", 1)
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", [name]
        ).fetchone()
    return int(row[0])


def _fixture() -> tuple[int, str]:
    """Create a user with an API token and a debate; return the debate id and the token."""
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    from debates.models import Debate
    from strategies.models import Strategy

    user, _ = get_user_model().objects.get_or_create(username="bench-sse")
    token, _ = Token.objects.get_or_create(user=user)
    strategy = Strategy.objects.create(owner=user, name="bench sse")
    debate = Debate.objects.create(owner=user, name="bench sse", strategy=strategy)
    return debate.pk, token.key


@dataclass
class Round:
    """The figures of one round: N clients, M events at a rate (0: a burst)."""

    clients: int
    rate: float
    latencies_ms: list[float]
    publish_ms: list[float]
    lost: int
    duplicates: int
    out_of_order: int
    failed_clients: int
    pg_before: int
    pg_during: int
    cpu: dict[str, float]
    load: float

    @classmethod
    def of(
        cls, clients: int, rate: float, events: int, measured: Measured, pg: tuple[int, int]
    ) -> Round:
        """Return the figures of a round from what its processes measured; ``pg``: the
        database's connections before the clients connected and with them open."""
        results = measured.results
        per_client = [seqs for result in results for seqs in result["seqs"]]
        return cls(
            clients=clients,
            rate=rate,
            latencies_ms=[lat * 1000 for result in results for lat in result["latencies"]]
            or [float("nan")],
            publish_ms=measured.publish_ms,
            lost=clients * events - sum(len(set(seqs)) for seqs in per_client),
            duplicates=sum(len(seqs) - len(set(seqs)) for seqs in per_client),
            out_of_order=sum(seqs != sorted(seqs) for seqs in per_client),
            failed_clients=sum(len(r["failures"]) + r["unfinished"] for r in results),
            pg_before=pg[0],
            pg_during=pg[1],
            cpu=measured.cpu,
            load=measured.load,
        )

    def row(self) -> str:
        """Return the round as a line of the printed table."""
        lat, cpu = self.latencies_ms, self.cpu
        rate = f"{self.rate:g}/s" if self.rate else "burst"
        return (
            f"{self.clients:>7}  {rate:>6}  {percentile(lat, 50):>6.1f}"
            f"  {percentile(lat, 99):>6.1f}"
            f"  {max(lat):>7.1f}  {percentile(self.publish_ms, 50):>7.1f}"
            f"  {self.lost:>4}  {self.duplicates:>3}  {self.out_of_order:>8}"
            f"  {self.failed_clients:>6}  {self.pg_before:>3} -> {self.pg_during:<3}"
            f"  {cpu['web']:>4.0f} / {cpu['clients']:>4.0f} / {cpu['publisher']:>4.0f}"
            f"  {self.load:>4.1f}"
        )


HEADER = (
    "clients    rate  p50 ms  p99 ms   max ms  pub p50  lost  dup  disorder  failed"
    "  PG conns    CPU % web/clients/pub  load"
)


@dataclass
class Measured:
    """What a round's processes measured while the events were published."""

    publish_ms: list[float]
    results: list[dict]
    cpu: dict[str, float]
    load: float


def run(clients: int, rate: float, args: argparse.Namespace, web: subprocess.Popen) -> Round:
    """Connect ``clients`` streams, publish ``args.events`` events at ``rate``; measure."""
    processes = max(1, min(args.client_processes, clients))
    shares = [clients // processes + (i < clients % processes) for i in range(processes)]
    pg_before = _database_connections()
    command = [sys.executable, "-m", "bench.sse", "--events", str(args.events)]
    readers = [
        _spawn(
            *command,
            *("--role", "clients", "--count", str(share), "--port", str(args.port)),
            *("--path", f"/api/debates/{args.debate}/stream", "--token", args.token),
            *("--timeout", str(args.timeout)),
        )
        for share in shares
    ]
    publisher = None
    try:
        for reader in readers:
            line = reader.stdout.readline()
            if line.strip() != "READY":
                raise RuntimeError(f"clients did not connect: {line!r}")
        time.sleep(1.0)
        pg_during = _database_connections()
        publisher = _spawn(
            *command, "--role", "publisher", "--debate", str(args.debate), "--rate", str(rate)
        )
        if publisher.stdout.readline().strip() != "START":
            raise RuntimeError("the publisher did not start")
        measured = _measure(web, readers, publisher)
    finally:
        for process in [*readers, *([publisher] if publisher else [])]:
            stop_process(process)
    return Round.of(clients, rate, args.events, measured, (pg_before, pg_during))


def _spawn(*command: str) -> subprocess.Popen:
    """Start one of the benchmark's own processes, in a process group of its own, its
    output read line by line."""
    return subprocess.Popen(
        command,
        cwd=ROOT,
        env=bench_env(),
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _measure(
    web: subprocess.Popen, readers: list[subprocess.Popen], publisher: subprocess.Popen
) -> Measured:
    """Read what the publisher and the clients report of a round, and the CPU each
    group of processes used meanwhile (% of one core)."""
    groups = {
        "web": [web.pid],
        "clients": [reader.pid for reader in readers],
        "publisher": [publisher.pid],
    }
    cpu_start = {name: sum(map(_cpu_seconds, pids)) for name, pids in groups.items()}
    started = time.monotonic()
    publish_ms = [d * 1000 for d in json.loads(publisher.stdout.readline())["durations"]]
    results = [json.loads(reader.stdout.readline()) for reader in readers]
    wall = time.monotonic() - started
    cpu = {
        name: (sum(map(_cpu_seconds, pids)) - cpu_start[name]) / wall * 100
        for name, pids in groups.items()
    }
    return Measured(publish_ms, results, cpu, os.getloadavg()[0])


def main() -> None:
    """Run the benchmark, or one of its processes (``--role``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[1, 100, 300, 500])
    parser.add_argument("--events", type=int, default=200, help="events per round (M)")
    parser.add_argument("--rate", type=float, default=20.0, help="events per second")
    parser.add_argument(
        "--burst",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also publish each round's events back to back",
    )
    parser.add_argument(
        "--web-workers", type=int, default=2, help="uvicorn processes (the Procfile runs 2)"
    )
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120.0)
    parser.add_argument("--role", choices=["main", "clients", "publisher"], default="main")
    parser.add_argument("--count", type=int, default=0)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--path", default="")
    parser.add_argument("--token", default="")
    parser.add_argument("--debate", type=int, default=0)
    args = parser.parse_args()
    _raise_open_files_limit()
    if args.role == "clients":
        asyncio.run(_clients_main(args))
        return
    if args.role == "publisher":
        _publisher_main(args)
        return

    setup_django()
    args.debate, args.token = _fixture()
    with web_server(workers=args.web_workers) as (base, web):
        args.port = int(base.rsplit(":", 1)[1])
        run_rounds(args, web)


def run_rounds(args: argparse.Namespace, web: subprocess.Popen) -> None:
    """Print the header, then one row per round of clients."""
    print(f"SSE delivery on {machine()}; load average {os.getloadavg()[0]:.1f} at the start")
    print(
        f"uvicorn x{args.web_workers}; "
        f"{args.events} events per round; clients in "
        f"{args.client_processes} processes; PostgreSQL max_connections 100"
    )
    print(HEADER)
    for clients in args.clients:
        print(run(clients, args.rate, args, web).row(), flush=True)
        if args.burst:
            print(run(clients, 0.0, args, web).row(), flush=True)


if __name__ == "__main__":
    main()
