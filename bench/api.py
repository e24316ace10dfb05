"""REST API latency under load: the detail of a finished 5x5 debate and the debate list.

A 5-participant, 5-round debate is run to completion (simulated models, the step
services in order), then 50 concurrent clients (asyncio + httpx, each its own
keep-alive connection, token auth) call GET /api/debates/{id} and GET /api/debates for
20 s each against uvicorn (2 processes, as in the Procfile). The database queries of
one request of each kind are counted in-process.

    python -m bench.api [--clients 50] [--seconds 20]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from bench.common import machine, percentile, setup_django, web_server


async def hammer(url: str, token: str, clients: int, seconds: float) -> dict:
    import httpx

    latencies: list[float] = []
    errors = 0
    stop_at = time.monotonic() + seconds

    async def client() -> None:
        nonlocal errors
        headers = {"Authorization": f"Token {token}"}
        async with httpx.AsyncClient(headers=headers, timeout=30) as http:
            while time.monotonic() < stop_at:
                started = time.perf_counter()
                response = await http.get(url)
                latencies.append(time.perf_counter() - started)
                errors += response.status_code != 200

    began = time.monotonic()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.monotonic() - began
    return {
        "requests": len(latencies),
        "errors": errors,
        "rps": round(len(latencies) / elapsed, 1),
        "p50_ms": round(percentile(latencies, 50) * 1000, 1),
        "p99_ms": round(percentile(latencies, 99) * 1000, 1),
    }


def finished_debate(owner) -> int:
    from bench.prompts import measure
    from debates.models import AIModel, Debate

    model, _ = AIModel.objects.get_or_create(
        owner=owner, name="bench simulated", provider="simulated", model_name="simulated-v1"
    )
    measure(owner, model, 5, 5)
    return Debate.objects.filter(owner=owner, status="completed").latest("pk").pk


def queries_per_request(token: str, path: str) -> int:
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    client = Client(HTTP_AUTHORIZATION=f"Token {token}")
    with CaptureQueriesContext(connection) as captured:
        assert client.get(path).status_code == 200
    return len(captured.captured_queries)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args(argv)

    setup_django()
    from django.contrib.auth import get_user_model
    from rest_framework.authtoken.models import Token

    owner, _ = get_user_model().objects.get_or_create(username="bench-api")
    token, _ = Token.objects.get_or_create(user=owner)
    debate_id = finished_debate(owner)
    paths = {"detail": f"/api/debates/{debate_id}", "list": "/api/debates"}
    results = {}
    with web_server(workers=2) as (base, _):
        for name, path in paths.items():
            asyncio.run(hammer(base + path, token.key, 5, 2.0))  # warm-up
            figures = asyncio.run(hammer(base + path, token.key, args.clients, args.seconds))
            figures["queries"] = queries_per_request(token.key, path)
            results[name] = figures

    print(f"REST API under {args.clients} concurrent clients, {args.seconds:.0f} s each")
    for name, figures in results.items():
        print(
            f"  GET {paths[name]} ({name}): p50 {figures['p50_ms']} ms, p99 {figures['p99_ms']} "
            f"ms, {figures['rps']} req/s, {figures['requests']} requests, "
            f"{figures['errors']} errors, {figures['queries']} queries per request"
        )
    print(f"  {machine()}")
    return results


if __name__ == "__main__":
    main()
