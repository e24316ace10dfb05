"""Model-slot utilisation: how full the cap of model calls in flight is kept.

Thirty 3x3 debates start at once on the Procfile's workers (two step workers of 3
processes, a call worker of threads) against the fake model server (fixed latency),
shared among as many users as it takes to reach the cap (one user's debates have at most
``MODEL_CALLS_PER_USER`` calls in flight). The server's count of requests in flight is
sampled every 10 ms; utilisation is the mean of in-flight / cap over the busy period
(from the first model request to the end of the last one). The target is at least 0.9.
The highest count seen must never pass the cap.

    python -m bench.slots [--debates 30] [--latency 0.5]
"""

from __future__ import annotations

import argparse
import math
import threading
import time

from bench.common import machine, setup_django, wait_until, worker_processes


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--debates", type=int, default=30)
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)

    setup_django()
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from bench.orchestration import fake_models, make_debate
    from debates.models import Debate
    from debates.services import debate_start
    from tests.fakes.llm_server import FakeLLMServer

    cap = settings.MODEL_CALL_CAP
    personalities = ["bull", "bear", "analyst"]
    samples: list[tuple[float, int]] = []
    stop = threading.Event()
    users = math.ceil(cap / settings.MODEL_CALLS_PER_USER)
    with FakeLLMServer(latency_s=args.latency) as llm:
        # Staff, so the per-user quotas (debates.quotas) do not cap the load measured.
        owners = [
            get_user_model().objects.update_or_create(
                username="bench" if n == 0 else f"bench-{n}", defaults={"is_staff": True}
            )[0]
            for n in range(users)
        ]
        models = [fake_models(owner, llm, 3) for owner in owners]
        debates = [
            make_debate(owners[n % users], models[n % users], personalities, 3)
            for n in range(args.debates)
        ]

        def sample() -> None:
            while not stop.is_set():
                samples.append((time.monotonic(), llm.stats()["in_flight"]))
                time.sleep(0.01)

        with worker_processes(count=args.workers):
            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            started = time.monotonic()
            for debate in debates:
                debate_start(debate_id=debate.pk)
            ids = [d.pk for d in debates]
            wait_until(
                lambda: (
                    not Debate.objects.filter(pk__in=ids)
                    .exclude(status__in=("completed", "failed"))
                    .exists()
                ),
                timeout=900,
                every=0.2,
            )
            elapsed = time.monotonic() - started
            stop.set()
            sampler.join()
        stats = llm.stats()
        statuses = list(Debate.objects.filter(pk__in=ids).values_list("status", flat=True))

    busy = [n for _, n in samples]
    first = next(i for i, n in enumerate(busy) if n > 0)
    last = len(busy) - next(i for i, n in enumerate(reversed(busy)) if n > 0)
    window = busy[first:last]
    utilisation = sum(window) / (len(window) * cap)
    calls = stats["requests"]
    result = {
        "debates": args.debates,
        "completed": statuses.count("completed"),
        "latency_s": args.latency,
        "workers": f"{args.workers} x 3 processes and {settings.MODEL_CALL_THREADS} threads",
        "users": users,
        "model_calls": calls,
        "wall_time_s": round(elapsed, 2),
        "lower_bound_s": round(calls * args.latency / cap, 2),
        "utilisation": round(utilisation, 3),
        "max_in_flight": stats["max_in_flight"],
        "cap": cap,
        "machine": machine(),
    }
    print(
        f"Model-slot utilisation, {args.debates} concurrent 3x3 debates of {users} users, "
        f"latency {args.latency} s"
    )
    print(
        f"  {result['completed']}/{args.debates} completed, {calls} calls in {elapsed:.1f} s "
        f"(lower bound at the cap {result['lower_bound_s']} s)"
    )
    print(
        f"  utilisation {utilisation:.3f} (target >= 0.9), "
        f"max in flight {stats['max_in_flight']}/{cap}"
    )
    print(f"  {machine()}")
    return result


if __name__ == "__main__":
    main()
