"""REST API under load: the detail of a finished 5x5 debate and the debate list, each
against a floor in the same run.

The owner has 20 finished 5-participant, 5-round debates (a page of the list; simulated
models, the step services in order), made once and kept from run to run; the detail is
the latest one's. Against uvicorn (2 processes, as in the Procfile):

- throughput: 50 concurrent clients (asyncio + httpx, each its own keep-alive
  connection, token auth) call GET /api/debates/{id}, the same with its ETag
  (If-None-Match: a 304), and GET /api/debates, for 20 s each; and, as the floor of
  each, a plain Django view returning the same stored bytes (``bench.floor_web``: no
  authentication, no query, no serialiser) through the same server and middleware;
- latency: an open loop sends 50 requests/s on a fixed schedule, whatever the answers,
  for 20 s (at most 32 in flight); a latency runs from the instant a request was due, so
  a slow answer delays none of the later measurements;
- the database queries of one request of each kind, counted in-process (the first
  request of each, with the token read from the database, then the same again).

    python -m bench.api [--clients 50] [--seconds 20] [--rate 50]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from bench.common import machine, percentile, setup_django, web_server


def figures(latencies: list[float], errors: int, elapsed: float) -> dict:
    return {
        "requests": len(latencies),
        "errors": errors,
        "rps": round(len(latencies) / elapsed, 1),
        "p50_ms": round(percentile(latencies, 50) * 1000, 1),
        "p99_ms": round(percentile(latencies, 99) * 1000, 1),
    }


async def hammer(url: str, headers: dict, clients: int, seconds: float, expect: int = 200) -> dict:
    """Closed loop: ``clients`` clients, each sending its next request on an answer."""
    import httpx

    latencies: list[float] = []
    errors = 0
    stop_at = time.monotonic() + seconds

    async def client() -> None:
        nonlocal errors
        async with httpx.AsyncClient(headers=headers, timeout=30) as http:
            while time.monotonic() < stop_at:
                started = time.perf_counter()
                response = await http.get(url)
                latencies.append(time.perf_counter() - started)
                errors += response.status_code != expect

    began = time.monotonic()
    await asyncio.gather(*(client() for _ in range(clients)))
    return figures(latencies, errors, time.monotonic() - began)


async def open_loop(url: str, headers: dict, rate: float, seconds: float) -> dict:
    """Open loop: a request every 1/``rate`` s on a fixed schedule; each latency runs
    from the instant its request was due."""
    import httpx

    latencies: list[float] = []
    errors = 0
    # At most 32 requests in flight (each holds a database connection in the server); a
    # request waiting for one of them still counts its latency from when it was due.
    limits = httpx.Limits(max_connections=32, max_keepalive_connections=32)

    async with httpx.AsyncClient(headers=headers, timeout=30, limits=limits) as http:

        async def one(due: float) -> None:
            nonlocal errors
            try:
                response = await http.get(url)
                errors += response.status_code != 200
            except httpx.HTTPError:
                errors += 1
            latencies.append(time.perf_counter() - due)

        began = time.perf_counter()
        pending = []
        for i in range(int(rate * seconds)):
            due = began + i / rate
            await asyncio.sleep(max(0.0, due - time.perf_counter()))
            pending.append(asyncio.create_task(one(due)))
        await asyncio.gather(*pending)
        return figures(latencies, errors, time.perf_counter() - began)


def finished_debates(owner, count: int) -> int:
    """Make ``owner`` have at least ``count`` finished 5x5 debates (a full page of the
    list; kept from run to run); return the latest one's id."""
    from bench.prompts import measure
    from debates.models import AIModel, Debate

    model, _ = AIModel.objects.get_or_create(
        owner=owner, name="bench simulated", provider="simulated", model_name="simulated-v1"
    )
    finished = Debate.objects.filter(owner=owner, status="completed")
    for _ in range(count - finished.count()):
        measure(owner, model, 5, 5, judge=False)
    return finished.latest("pk").pk


def queries_per_request(token: str, path: str) -> int:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_AUTHORIZATION=f"Token {token}")
    connection.queries_log.clear()  # a full log (DEBUG) would count nothing
    with CaptureQueriesContext(connection) as captured:
        assert client.get(path).status_code == 200
    return len(captured.captured_queries)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--rate", type=float, default=50.0)
    args = parser.parse_args(argv)

    setup_django()
    import httpx
    from django.conf import settings
    from django.contrib.auth import get_user_model
    from django.core.cache import cache
    from rest_framework.authtoken.models import Token

    owner, _ = get_user_model().objects.get_or_create(username="bench-api")
    token, _ = Token.objects.get_or_create(user=owner)
    auth = {"Authorization": f"Token {token.key}"}
    debate_id = finished_debates(owner, settings.REST_FRAMEWORK["PAGE_SIZE"])
    detail, listing = f"/api/debates/{debate_id}", "/api/debates"
    queries = {
        "detail (first rendering)": queries_per_request(token.key, detail),
        "detail (again)": queries_per_request(token.key, detail),
        "list (first)": queries_per_request(token.key, listing),
        "list (again)": queries_per_request(token.key, listing),
    }
    closed, opened = {}, {}
    with web_server(workers=2, settings_module="bench.floor_settings") as (base, _):
        # The floors answer the very bytes the API answers.
        bodies = {}
        for name, path in (("detail", detail), ("list", listing)):
            answer = httpx.get(base + path, headers=auth, timeout=30)
            bodies[name] = answer.content
            cache.set(f"bench-floor:{name}", answer.content, 3600)
        etag = httpx.get(base + detail, headers=auth, timeout=30).headers["ETag"]
        runs = {
            "detail": (detail, auth, 200),
            "detail floor": ("/bench/floor/detail", {}, 200),
            "detail 304": (detail, {**auth, "If-None-Match": etag}, 304),
            "list": (listing, auth, 200),
            "list floor": ("/bench/floor/list", {}, 200),
        }
        for name, (path, headers, expect) in runs.items():
            asyncio.run(hammer(base + path, headers, 5, 2.0, expect))  # warm-up
            closed[name] = asyncio.run(
                hammer(base + path, headers, args.clients, args.seconds, expect)
            )
        for name in ("detail", "detail floor", "list", "list floor"):
            path, headers, _ = runs[name]
            opened[name] = asyncio.run(open_loop(base + path, headers, args.rate, args.seconds))

    print(
        f"REST API, {args.clients} concurrent clients for {args.seconds:.0f} s each "
        f"(detail {len(bodies['detail'])} bytes, list {len(bodies['list'])} bytes)"
    )
    for name, f in closed.items():
        print(
            f"  {name:12} {f['rps']:7} req/s, p50 {f['p50_ms']} ms, p99 {f['p99_ms']} ms, "
            f"{f['requests']} requests, {f['errors']} errors"
        )
    for name in ("detail", "list"):
        ratio = closed[name]["rps"] / closed[f"{name} floor"]["rps"]
        print(f"  {name} / its floor: {ratio:.2f} of the floor's throughput (target >= 0.5)")
    print(f"Open loop at {args.rate:.0f} requests/s for {args.seconds:.0f} s (target p99 <= 50 ms)")
    for name, f in opened.items():
        print(
            f"  {name:12} p50 {f['p50_ms']} ms, p99 {f['p99_ms']} ms, {f['requests']} requests, "
            f"{f['errors']} errors"
        )
    print("Queries per request: " + ", ".join(f"{k} {v}" for k, v in queries.items()))
    print(f"  {machine()}")
    return {"closed": closed, "open": opened, "queries": queries}


if __name__ == "__main__":
    main()
