"""Fairness: a second user's debate while another user has 100 debates queued.

User "light" runs a 3-participant, 3-round debate against the fake model server (every
call takes a fixed latency L) on one Celery worker process (prefork, 3 processes; the
model-call cap is 3), first on an idle stack, then right after user "heavy" (staff, so
its quotas allow it) has started 100 debates of its own (2 participants x 2 rounds, 600
model calls queued, about 40 s of the cap at L = 0.2 s). Runs alternate idle and loaded,
in one process. The figure is the loaded run's wall time against the idle one's (target:
at most 2x). While the loaded run goes on, the model slots are sampled every 10 ms:
how many the light user held while it had calls to make.

    python -m bench.fairness [--latency 0.2] [--runs 2] [--backlog 100]
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time

from bench.common import machine, setup_django, worker_processes


def _cancel_active(owner) -> None:
    from debates.models import ACTIVE_STATUSES, Debate
    from debates.services import debate_cancel

    for debate_id in Debate.objects.filter(owner=owner, status__in=ACTIVE_STATUSES).values_list(
        "pk", flat=True
    ):
        debate_cancel(debate_id=debate_id)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--backlog", type=int, default=100)
    args = parser.parse_args(argv)

    setup_django()
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from bench.orchestration import fake_models, make_debate, run_on_workers
    from debates.providers.slots import model_slots
    from debates.services import debate_start
    from tests.fakes.llm_server import FakeLLMServer

    cap = settings.MODEL_CALL_CAP
    users = get_user_model().objects
    heavy, _ = users.update_or_create(username="bench-heavy", defaults={"is_staff": True})
    light, _ = users.update_or_create(username="bench-light", defaults={"is_staff": False})
    light_owner = f"user:{light.pk}"
    idle: list[float] = []
    loaded: list[float] = []
    shares: list[float] = []
    with FakeLLMServer(latency_s=args.latency) as llm:
        heavy_models = fake_models(heavy, llm, 2)
        light_models = fake_models(light, llm, 3)
        seats = ["bull", "bear", "analyst"]
        with worker_processes(count=1, concurrency=cap):
            run_on_workers(light, light_models, seats, 3)  # warm-up
            for _ in range(args.runs):
                idle.append(run_on_workers(light, light_models, seats, 3))
                backlog = [
                    make_debate(heavy, heavy_models, ["bull", "bear"], 2)
                    for _ in range(args.backlog)
                ]
                for debate in backlog:
                    debate_start(debate_id=debate.pk)
                samples: list[int] = []
                stop = threading.Event()

                def sample(samples: list[int] = samples, stop: threading.Event = stop) -> None:
                    slots = model_slots()
                    while not stop.is_set():
                        samples.append(slots.holders().get(light_owner, 0))
                        time.sleep(0.01)

                sampler = threading.Thread(target=sample, daemon=True)
                sampler.start()
                try:
                    loaded.append(run_on_workers(light, light_models, seats, 3))
                finally:
                    stop.set()
                    sampler.join()
                    _cancel_active(heavy)
                shares.append(sum(samples) / max(1, len(samples)))

    ratio = statistics.median(loaded) / statistics.median(idle)
    result = {
        "latency_s": args.latency,
        "backlog_debates": args.backlog,
        "idle_runs_s": [round(x, 3) for x in idle],
        "loaded_runs_s": [round(x, 3) for x in loaded],
        "ratio": round(ratio, 3),
        "light_slots_held_mean": [round(x, 2) for x in shares],
        "machine": machine(),
    }
    print(
        f"Fairness, a 3x3 debate of a second user, latency {args.latency * 1000:.0f} ms, "
        f"1 worker x {cap}"
    )
    print(f"  idle stack: {result['idle_runs_s']} s")
    print(
        f"  with another user's {args.backlog} debates ({args.backlog * 6} calls) queued: "
        f"{result['loaded_runs_s']} s"
    )
    print(f"  ratio of the medians: {ratio:.2f} (target at most 2)")
    print(
        "  model slots the second user held on average during its loaded runs: "
        f"{result['light_slots_held_mean']} of {cap}"
    )
    print(f"  {machine()}")
    return result


if __name__ == "__main__":
    main()
