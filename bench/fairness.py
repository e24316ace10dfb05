"""Fairness: a second user's debate while another user has 100 debates queued, and while
another user's model hangs.

User "light" runs a 3-participant, 3-round debate against the fake model server (every
call takes a fixed latency L) on the Procfile's workers (a step worker of 3 processes, a
call worker of MODEL_CALL_THREADS threads; the model-call cap is MODEL_CALL_CAP, a
user's share of it MODEL_CALLS_PER_USER), three ways in each run, in one process:

- idle: nothing else runs (the baseline);
- backlog: right after user "heavy" (staff, so its quotas allow it) has started 100
  debates of its own (2 participants x 2 rounds, 600 model calls queued);
- hanging: while user "hanging" has 5 debates of 3 participants (15 openings, more than
  the call worker's threads) on a model that answers after ``--hang`` seconds, its calls
  in flight and its waiting steps settled; its model server stops after the run, which
  ends the hanging calls.

The figures are the backlog's and the hanging runs' wall times against the idle ones'
(target: at most 2x). During those runs, the model slots are sampled every 10 ms: how
many the light user held, and during the hanging runs how many the hanging user held and
had waiting, and how many calls its model had in flight.

    python -m bench.fairness [--latency 0.2] [--runs 2] [--backlog 100] [--hang 120]
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import threading
import time
from collections.abc import Callable, Iterator

from bench.common import machine, setup_django, user_calls, wait_until, worker_processes

# The Procfile's step worker's processes.
STEP_PROCESSES = 3
HANGING_DEBATES = 5


def _cancel_active(owner) -> None:
    from debates.models import ACTIVE_STATUSES, Debate
    from debates.services import debate_cancel

    for debate_id in Debate.objects.filter(owner=owner, status__in=ACTIVE_STATUSES).values_list(
        "pk", flat=True
    ):
        debate_cancel(debate_id=debate_id)


@contextlib.contextmanager
def sampled(probe: Callable[[], tuple]) -> Iterator[list[tuple]]:
    """Call ``probe`` every 10 ms in a thread for the block; yield the list of its
    answers, complete once the block ends."""
    samples: list[tuple] = []
    stop = threading.Event()

    def sample() -> None:
        while not stop.is_set():
            samples.append(probe())
            time.sleep(0.01)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        yield samples
    finally:
        stop.set()
        sampler.join()


def mean(values: list[float]) -> float:
    return sum(values) / max(1, len(values))


def backlog_run(light, light_models, heavy, heavy_models, backlog: int) -> tuple[float, float]:
    """Run the light user's debate right after the heavy user started ``backlog`` debates;
    return its wall time and the slots it held on average."""
    from bench.orchestration import make_debate, run_on_workers
    from debates.providers.slots import model_slots
    from debates.services import debate_start

    for _ in range(backlog):
        debate_start(debate_id=make_debate(heavy, heavy_models, ["bull", "bear"], 2).pk)
    light_owner, slots = f"user:{light.pk}", model_slots()
    try:
        with sampled(lambda: (slots.holders().get(light_owner, 0),)) as samples:
            elapsed = run_on_workers(light, light_models, ["bull", "bear", "analyst"], 3)
    finally:
        _cancel_active(heavy)
    return elapsed, mean([s[0] for s in samples])


def hanging_run(light, light_models, hanging, hang_s: float) -> tuple[float, dict]:
    """Run the light user's debate while the hanging user's calls hang and its waiting
    steps have settled; return its wall time and the means of what was sampled."""
    from bench.orchestration import fake_models, make_debate, run_on_workers
    from debates.models import AIModel
    from debates.providers.slots import model_slots
    from debates.services import debate_start
    from tests.fakes.llm_server import FakeLLMServer

    slots, owner, share = model_slots(), f"user:{hanging.pk}", user_calls()
    with FakeLLMServer(latency_s=hang_s) as server:
        models = fake_models(hanging, server, 3)
        # The longest deadline a model may have: its calls wait for the whole hang.
        AIModel.objects.filter(pk__in=[m.pk for m in models]).update(timeout_seconds=180)
        for _ in range(HANGING_DEBATES):
            debate = make_debate(hanging, models, ["bull", "bear", "analyst"], 2)
            debate_start(debate_id=debate.pk)
        # Its calls go out, its steps waiting for a slot pile up while they move, then
        # all but its share give up once they are still.
        wait_until(lambda: server.stats()["in_flight"] == share, 60)
        wait_until(lambda: slots.waiting().get(owner, 0) > share, 60)
        wait_until(lambda: slots.waiting().get(owner, 0) <= share, 60)

        def probe() -> tuple:
            holders, waiting = slots.holders(), slots.waiting()
            light_held = holders.get(f"user:{light.pk}", 0)
            return light_held, holders.get(owner, 0), waiting.get(owner, 0)

        with sampled(probe) as samples:
            elapsed = run_on_workers(light, light_models, ["bull", "bear", "analyst"], 3)
        in_flight = server.stats()["in_flight"]
    _cancel_active(hanging)  # its calls ended when its server stopped
    wait_until(lambda: slots.holders().get(owner, 0) == 0, 60)
    columns = list(zip(*samples, strict=True)) or [(), (), ()]
    return elapsed, {
        "light_held": mean(list(columns[0])),
        "hanging_held_max": max(columns[1], default=0),
        "hanging_waiting_max": max(columns[2], default=0),
        "hanging_in_flight": in_flight,
    }


def measure(args: argparse.Namespace) -> dict:
    """Run the idle, backlog and hanging debates ``args.runs`` times each; return the
    wall times and the samples."""
    from django.contrib.auth import get_user_model

    from bench.orchestration import fake_models, run_on_workers
    from tests.fakes.llm_server import FakeLLMServer

    users = get_user_model().objects
    heavy, _ = users.update_or_create(username="bench-heavy", defaults={"is_staff": True})
    light, _ = users.update_or_create(username="bench-light", defaults={"is_staff": False})
    hanging, _ = users.update_or_create(username="bench-hanging", defaults={"is_staff": False})
    found: dict = {"idle": [], "backlog": [], "backlog_held": [], "hanging": [], "hung": []}
    with FakeLLMServer(latency_s=args.latency) as llm:
        heavy_models = fake_models(heavy, llm, 2)
        light_models = fake_models(light, llm, 3)
        seats = ["bull", "bear", "analyst"]
        with worker_processes(count=1, concurrency=STEP_PROCESSES):
            run_on_workers(light, light_models, seats, 3)  # warm-up
            for _ in range(args.runs):
                found["idle"].append(run_on_workers(light, light_models, seats, 3))
                elapsed, held = backlog_run(light, light_models, heavy, heavy_models, args.backlog)
                found["backlog"].append(elapsed)
                found["backlog_held"].append(held)
                elapsed, hung = hanging_run(light, light_models, hanging, args.hang)
                found["hanging"].append(elapsed)
                found["hung"].append(hung)
    return found


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--backlog", type=int, default=100)
    parser.add_argument("--hang", type=float, default=120.0, help="at most 170 s")
    args = parser.parse_args(argv)

    setup_django()
    from django.conf import settings

    found = measure(args)
    idle = statistics.median(found["idle"])
    result = {
        "latency_s": args.latency,
        "backlog_debates": args.backlog,
        "hang_s": args.hang,
        "idle_runs_s": [round(x, 3) for x in found["idle"]],
        "backlog_runs_s": [round(x, 3) for x in found["backlog"]],
        "backlog_ratio": round(statistics.median(found["backlog"]) / idle, 3),
        "light_slots_held_mean": [round(x, 2) for x in found["backlog_held"]],
        "hanging_runs_s": [round(x, 3) for x in found["hanging"]],
        "hanging_ratio": round(statistics.median(found["hanging"]) / idle, 3),
        "hanging_samples": [{k: round(v, 2) for k, v in h.items()} for h in found["hung"]],
        "machine": machine(),
    }
    report(result, cap=settings.MODEL_CALL_CAP, threads=settings.MODEL_CALL_THREADS)
    return result


def report(result: dict, *, cap: int, threads: int) -> None:
    """Print the figures of ``result``."""
    latency, backlog = result["latency_s"], result["backlog_debates"]
    print(
        f"Fairness, a 3x3 debate of a second user, latency {latency * 1000:.0f} ms, "
        f"a step worker of {STEP_PROCESSES} processes, a call worker of {threads} threads, "
        f"cap {cap}"
    )
    print(f"  idle stack: {result['idle_runs_s']} s")
    print(
        f"  with another user's {backlog} debates ({backlog * 6} calls) queued: "
        f"{result['backlog_runs_s']} s, ratio of the medians {result['backlog_ratio']:.2f} "
        "(target at most 2)"
    )
    print(
        "    model slots the second user held on average: "
        f"{result['light_slots_held_mean']} of {cap}"
    )
    print(
        f"  while another user's model hangs ({result['hang_s']:.0f} s, "
        f"{HANGING_DEBATES} debates of 3 seats): {result['hanging_runs_s']} s, ratio of the "
        f"medians {result['hanging_ratio']:.2f} (target at most 2)"
    )
    for hung in result["hanging_samples"]:
        print(
            f"    second user's slots {hung['light_held']} on average; the hanging user's "
            f"slots at most {hung['hanging_held_max']:.0f}, waiting at most "
            f"{hung['hanging_waiting_max']:.0f}, calls in flight {hung['hanging_in_flight']:.0f}"
        )
    print(f"  {result['machine']}")


if __name__ == "__main__":
    main()
