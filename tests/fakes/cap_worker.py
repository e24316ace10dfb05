"""A separate OS process making model calls through the shared Redis slots (cap tests).

``python -m tests.fakes.cap_worker run --redis-url URL --key K --cap 3 --base-url URL
--calls 10 --threads 3`` makes ``calls`` calls from ``threads`` threads, each one inside a
slot, and prints a JSON summary. ``python -m tests.fakes.cap_worker hold --redis-url URL
--key K --cap 1 --lease 1.5`` takes one slot, prints ``held <epoch seconds>`` and sleeps
until killed, never releasing it.
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from collections import Counter

from debates.providers import ModelRequest, ProviderConfig, ProviderError, complete
from debates.providers.slots import RedisSlots

# Far longer than a call here: these callers hold their slot without renewing it.
LEASE_S = 30.0


def run(slots: RedisSlots, base_url: str, calls: int, threads: int) -> dict[str, object]:
    """Make ``calls`` model calls from ``threads`` threads, each inside one slot."""
    config = ProviderConfig("openai_compatible", "fake-model", base_url=base_url, timeout_s=10)
    request = ModelRequest(system="Cap test. Candidates: BTCUSDT.", user="Round 1 of 1.")
    remaining = [calls]
    lock = threading.Lock()
    counts: Counter[str] = Counter()
    errors: list[str] = []

    def worker() -> None:
        while True:
            with lock:
                if remaining[0] == 0:
                    return
                remaining[0] -= 1
            lease = slots.acquire(wait_s=30, lease_s=LEASE_S)
            if lease is None:
                with lock:
                    counts["not_acquired"] += 1
                continue
            try:
                complete(config, request)
                with lock:
                    counts["ok"] += 1
            except ProviderError as error:
                with lock:
                    errors.append(error.code)
            finally:
                slots.release(lease)

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    return {"ok": counts["ok"], "not_acquired": counts["not_acquired"], "errors": errors}


def main(argv: list[str] | None = None) -> None:
    """Parse the command line and run ``run`` or ``hold``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["run", "hold"])
    parser.add_argument("--redis-url", required=True)
    parser.add_argument("--key", required=True)
    parser.add_argument("--cap", type=int, default=3)
    parser.add_argument("--base-url", default="")
    parser.add_argument("--calls", type=int, default=10)
    parser.add_argument("--threads", type=int, default=3)
    parser.add_argument("--lease", type=float, default=30.0)
    args = parser.parse_args(argv)
    slots = RedisSlots(args.redis_url, cap=args.cap, key=args.key)
    if args.mode == "run":
        print(json.dumps(run(slots, args.base_url, args.calls, args.threads)), flush=True)
        return
    lease = slots.acquire(wait_s=10, lease_s=args.lease)
    if lease is None:
        print("not acquired", flush=True)
        return
    print(f"held {time.time():.6f}", flush=True)
    while True:
        time.sleep(60)


if __name__ == "__main__":
    main()
