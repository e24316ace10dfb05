"""Orchestration overhead: a debate's wall time against the ideal critical path.

A 3-participant, 3-round debate runs against the fake model server, every call taking a
fixed latency L, on the Procfile's workers (a step worker of 3 processes, a call worker
of threads); one user's debate has at most 3 model calls in flight
(``MODEL_CALLS_PER_USER``), its cap here. The ideal critical path of the canvas is: the
round-1 openings in parallel within the cap, rounds 2..N one turn after another, the
votes in parallel within the cap. The same debate run fully sequentially, one call after
another (as the original service did), is measured too, by calling the same step
services in order in one thread. So is Celery's own share: the same canvas, sent to the
same worker, of tasks that only wait L (``bench.floor_tasks``), run in turn with the
debates.

    python -m bench.orchestration [--latency 0.2] [--runs 5] [--participants 3] [--rounds 3]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import statistics
import time
import uuid
from collections.abc import Callable, Iterable, Iterator

from bench.common import machine, setup_django, user_calls, worker_processes


def ideal_critical_path(participants: int, rounds: int, cap: int, latency: float) -> float:
    """Return the shortest possible wall time of the canvas with a perfect scheduler."""
    parallel_stage = math.ceil(participants / cap) * latency
    return parallel_stage + (rounds - 1) * participants * latency + parallel_stage


def fake_models(owner, llm, count: int | Iterable[str]) -> list:
    """Return AI models of ``owner`` calling the fake model server ``llm``: ``count`` of
    them (``fake 0``, ``fake 1``, ...), or one named after each label of ``count``."""
    from debates.models import AIModel

    labels = range(count) if isinstance(count, int) else count
    return [
        AIModel.objects.create(
            owner=owner,
            name=f"fake {label}",
            provider="openai_compatible",
            model_name="fake-model",
            base_url=f"{llm.url}/v1",
        )
        for label in labels
    ]


def make_debate(owner, models, personalities, rounds, **fields):
    from debates.services import DebateInput, debate_create
    from strategies.models import Strategy

    # Every round runs (no early stop), as the ideal critical path counts them.
    strategy = Strategy.objects.create(
        owner=owner, name=f"bench {uuid.uuid4().hex[:6]}", early_stop=False
    )
    data = DebateInput(
        name="bench",
        strategy=strategy.pk,
        symbol="BTCUSDT",
        max_rounds=rounds,
        participants=[
            {"ai_model": m.pk, "personality": p} for m, p in zip(models, personalities, strict=True)
        ],
        **fields,
    )
    return debate_create(owner=owner, data=data)


@contextlib.contextmanager
def hearing(channel: str, heard: Callable[[dict], bool]) -> Iterator[Callable[[float], float]]:
    """Listen to Redis pub/sub ``channel``; yield a function waiting for a message that
    ``heard`` accepts, which returns the instant it arrived (``time.perf_counter``).

    An end is taken when a listener hears it: no polling load on the machine, no polling
    delay.
    """
    import redis
    from django.conf import settings

    client = redis.Redis(**settings.EVENTSTREAM_REDIS)
    pubsub = client.pubsub()
    pubsub.subscribe(channel)
    pubsub.get_message(timeout=1.0)  # the subscription's confirmation

    def wait(timeout: float) -> float:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = pubsub.get_message(timeout=1.0)
            arrived = time.perf_counter()
            if message is not None and message["type"] == "message" and heard(message):
                return arrived
        raise TimeoutError(f"nothing heard on {channel} within {timeout}s")

    try:
        yield wait
    finally:
        pubsub.close()
        client.close()


def finish_listener(debate_id: int) -> contextlib.AbstractContextManager:
    """Listen to a debate's live events until its final ``status`` event is delivered,
    as a client of its stream hears it; the stored status is checked then, since pub/sub
    is shared by every Redis database."""
    from arena.sse import debate_channel, pubsub_channel
    from debates.models import TERMINAL_STATUSES, Debate

    channel = debate_channel(debate_id)

    def finished(message: dict) -> bool:
        event = json.loads(message["data"])
        if event["channel"] != channel or event["event_type"] != "status":
            return False
        if json.loads(event["data"])["status"] not in TERMINAL_STATUSES:
            return False
        return Debate.objects.filter(pk=debate_id, status__in=TERMINAL_STATUSES).exists()

    return hearing(pubsub_channel(), finished)


def run_on_workers(owner, models, personalities, rounds) -> float:
    from debates.models import Debate
    from debates.services import debate_start

    debate = make_debate(owner, models, personalities, rounds)
    with finish_listener(debate.pk) as wait_finished:
        started = time.perf_counter()
        debate_start(debate_id=debate.pk)
        elapsed = wait_finished(120) - started
    status = Debate.objects.get(pk=debate.pk).status
    if status != "completed":
        raise RuntimeError(f"debate {debate.pk} ended {status}")
    return elapsed


def run_floor(participants: int, rounds: int, latency: float) -> float:
    """Return the wall time of a debate run's canvas whose steps only wait ``latency``.

    Sent and heard as a debate's run is (``bench.floor_tasks``), it measures what Celery
    alone adds to the ideal critical path on this machine.
    """
    from celery import chain, group

    from bench.floor_tasks import FLOOR_CHANNEL, floor_end, floor_step

    run = uuid.uuid4().hex
    steps = [group([floor_step.si(latency) for _ in range(participants)])]
    steps += [
        floor_step.si(latency).set(ignore_result=True) for _ in range(participants * (rounds - 1))
    ]
    steps += [group([floor_step.si(latency) for _ in range(participants)])]
    steps += [floor_end.si(run).set(ignore_result=True)]
    with hearing(FLOOR_CHANNEL, lambda message: message["data"] == run.encode()) as wait:
        started = time.perf_counter()
        chain(*steps).apply_async()
        return wait(120) - started


def run_steps_in_order(debate) -> None:
    """Run every step of a pending debate one after another in this thread, no Celery;
    with a judge, its summary after each round but the last and its scores after the
    votes, as the debate's plan runs them."""
    from django.db import transaction

    from debates.models import Debate, Pace
    from debates.services import (
        consensus_finalize,
        debate_prepare,
        judge_final_run,
        judge_round_run,
        transitions,
        turn_run,
        vote_run,
    )

    with transaction.atomic():
        transitions.start(debate_id=debate.pk, pace=Pace.AUTO)
    debate_prepare(debate_id=debate.pk)
    seats = list(debate.participants.order_by("speak_order"))
    judged = debate.judge_model_id is not None
    for round_number in range(1, debate.max_rounds + 1):
        for seat in seats:
            turn_run(
                debate_id=debate.pk,
                round_number=round_number,
                participant_id=seat.pk,
                holder="in-order",
            )
        if judged and round_number < debate.max_rounds:
            judge_round_run(debate_id=debate.pk, round_number=round_number, holder="in-order")
    for seat in seats:
        vote_run(debate_id=debate.pk, participant_id=seat.pk, holder="in-order")
    if judged:
        judge_final_run(debate_id=debate.pk, holder="in-order")
    consensus_finalize(debate_id=debate.pk)
    if Debate.objects.get(pk=debate.pk).status != "completed":
        raise RuntimeError(f"the in-order run of debate {debate.pk} did not complete")


def run_sequentially(owner, models, personalities, rounds) -> float:
    """Return the wall time of a debate whose calls run one after another, no Celery."""
    debate = make_debate(owner, models, personalities, rounds)
    started = time.perf_counter()
    run_steps_in_order(debate)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--participants", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)

    setup_django()
    from django.contrib.auth import get_user_model

    from tests.fakes.llm_server import FakeLLMServer

    personalities = ["bull", "bear", "analyst", "contrarian", "risk_manager", "analyst"][
        : args.participants
    ]
    cap = user_calls()
    with FakeLLMServer(latency_s=args.latency) as llm:
        # Staff, so the per-user quotas (debates.quotas) do not cap the load measured.
        owner, _ = get_user_model().objects.update_or_create(
            username="bench", defaults={"is_staff": True}
        )
        models = fake_models(owner, llm, args.participants)
        sequential = [
            run_sequentially(owner, models, personalities, args.rounds) for _ in range(args.runs)
        ]
        with worker_processes(count=1, include=("bench.floor_tasks",)):
            run_on_workers(owner, models, personalities, args.rounds)  # warm-up
            run_floor(args.participants, args.rounds, args.latency)
            canvas, floor = [], []
            for _ in range(args.runs):  # in turn, so that both meet the same moments
                canvas.append(run_on_workers(owner, models, personalities, args.rounds))
                floor.append(run_floor(args.participants, args.rounds, args.latency))
        calls = args.participants * (args.rounds + 1)
        prompt_chars = sum(len(r.prompt) for r in llm.requests[-calls:])

    ideal = ideal_critical_path(args.participants, args.rounds, cap, args.latency)
    measured = statistics.median(canvas)
    seq = statistics.median(sequential)
    celery = statistics.median(floor)
    result = {
        "debate": f"{args.participants} participants x {args.rounds} rounds",
        "latency_s": args.latency,
        "runs": args.runs,
        "canvas_median_s": round(measured, 3),
        "canvas_runs_s": [round(x, 3) for x in canvas],
        "ideal_critical_path_s": round(ideal, 3),
        "ratio_to_ideal": round(measured / ideal, 3),
        "celery_floor_median_s": round(celery, 3),
        "celery_floor_runs_s": [round(x, 3) for x in floor],
        "celery_floor_ratio": round(celery / ideal, 3),
        "sequential_median_s": round(seq, 3),
        "speedup_vs_sequential": round(seq / measured, 3),
        "model_calls": calls,
        "prompt_chars_last_debate": prompt_chars,
        "machine": machine(),
    }
    print(f"Orchestration, {result['debate']}, latency {args.latency * 1000:.0f} ms")
    print(f"  canvas, cap {cap}: median {measured:.3f} s {result['canvas_runs_s']}")
    print(f"  ideal critical path: {ideal:.3f} s, ratio {measured / ideal:.3f}")
    print(
        f"  Celery alone (the same canvas, steps that only wait): median {celery:.3f} s"
        f" {result['celery_floor_runs_s']}, ratio {celery / ideal:.3f}; the steps add"
        f" {(measured - celery) * 1000:.0f} ms"
    )
    print(f"  fully sequential: median {seq:.3f} s, canvas {seq / measured:.2f}x faster")
    print(f"  {machine()}")
    return result


if __name__ == "__main__":
    main()
