"""Backtests: wall time against the ideal at the model-call cap, the cache, the embedded
default, and the portfolio simulation alone.

1. A 30-day window at 4h (180 debates of 3 participants over 2 rounds: 9 calls each) at
   ``book: aware`` against the fake model server, every call taking L (200 ms), on 2
   step worker processes of 3 and a call worker of threads: wall time from creation to
   completion, against the ideal for its dependency chain: the rounds side by side at
   one user's 3 calls in flight (``MODEL_CALLS_PER_USER``), the votes one step after
   another, so the larger of calls x L / 3 and the first step's rounds (an opening, then
   3 turns) plus a vote per step. Run with ``cache: refresh``, so every call is made
   whatever an earlier run stored. Beside it, the same window at ``book: blind`` (every
   step independent), against its ideal at the cap (calls x L / 3).
2. The aware backtest again with ``cache: use``: model calls (0) and wall time, against
   the first run's; beside it, what Celery alone takes for as many canvases of a
   cached debate's shape (a prepare step, 3 openings, 3 turns, 3 votes and the
   consensus, tasks that do nothing: ``bench.floor_tasks``), as many at once as a
   backtest runs, on the same workers: the least any step code could take.
3. The same 180 debates on the embedded default (``manage.py backtest`` on SQLite, the
   in-process worker, simulated models): wall time against the time its model answers
   took (the stored latencies); and a 3-step backtest there with kombu's own in-memory
   transport, which sleeps a second after every empty poll (``bench.stock_broker``),
   beside the same 3 steps with the project's (``arena.broker``), per debate.
4. The portfolio simulation alone (``backtests.engine``, no database), over 10,000 steps
   of 15 minutes on the bundled BTC candles with a decision at every step: time per
   step, beside the flat rule over the same steps (the walk without trading).

    python -m bench.backtest [--latency 0.2] [--days 30] [--skip-embedded]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sqlite3
import tempfile
import time
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from pathlib import Path

from bench.common import (
    embedded_backtest,
    machine,
    setup_django,
    user_calls,
    wait_until,
    worker_processes,
)

START = datetime(2024, 8, 5, tzinfo=UTC)
SEATS = ("bull", "bear", "analyst")


def _cpu_ticks(stat: str) -> tuple[int, int]:
    """Return (session id, CPU ticks used, its reaped children's included) of a
    ``/proc/<pid>/stat`` line."""
    fields = stat.rsplit(")", 1)[1].split()
    return int(fields[3]), sum(int(f) for f in fields[11:15])


def cpu_seconds(sessions: set[int], pids: set[int]) -> dict[int, float]:
    """Return the CPU seconds used so far by each process of ``sessions`` (a worker and
    its pool's children) and each of ``pids``."""
    used = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            session, ticks = _cpu_ticks((entry / "stat").read_text())
        except (OSError, ValueError, IndexError):
            continue  # ended meanwhile
        if session in sessions or int(entry.name) in pids:
            used[int(entry.name)] = ticks / os.sysconf("SC_CLK_TCK")
    return used


class CpuMeter:
    """The CPU time the worker processes and the PostgreSQL backends of the benchmark's
    database use between ``start()`` and ``stop()`` (a backend that ends meanwhile is
    missed: the workers keep their connections)."""

    def __init__(self, workers: list) -> None:
        self.sessions = {process.pid for process in workers}

    def _backends(self) -> set[int]:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("SELECT pid FROM pg_stat_activity WHERE datname = current_database()")
            return {pid for (pid,) in cursor.fetchall()}

    def _read(self) -> tuple[dict[int, float], set[int]]:
        backends = self._backends()
        return cpu_seconds(self.sessions, backends), backends

    def start(self) -> None:
        self.before, _ = self._read()

    def stop(self) -> dict[str, float]:
        after, backends = self._read()
        spent = {pid: used - self.before.get(pid, 0.0) for pid, used in after.items()}
        database = sum(used for pid, used in spent.items() if pid in backends)
        return {
            "workers_cpu_s": round(sum(spent.values()) - database, 2),
            "postgres_cpu_s": round(database, 2),
        }


def run_backtest(
    owner,
    strategy,
    models,
    *,
    days: int,
    cache: str,
    timeout: float,
    meter: CpuMeter,
    book: str = "aware",
    baseline: str = "off",
) -> tuple:
    """Create a backtest, wait for its end; return (seconds, backtest, CPU used)."""
    from backtests.models import Backtest
    from backtests.services import BacktestInput, backtest_create

    data = BacktestInput(
        name=f"bench {book} {cache} baseline {baseline}",
        strategy=strategy.pk,
        participants=[
            {"ai_model": m.pk, "personality": p} for m, p in zip(models, SEATS, strict=True)
        ],
        symbol="BTCUSDT",
        max_rounds=2,
        start=START,
        end=START + timedelta(days=days),
        interval_minutes=240,
        cache=cache,
        book=book,
        baseline=baseline,
    )
    meter.start()
    started = time.perf_counter()
    backtest = backtest_create(owner=owner, data=data)

    # Polled 20 times a second on the machine being measured: its status alone.
    status = Backtest.objects.filter(pk=backtest.pk).values_list("status", flat=True)

    def ended() -> bool:
        return status.get() in ("completed", "failed", "cancelled")

    wait_until(ended, timeout=timeout, every=0.05)
    seconds = time.perf_counter() - started
    return seconds, Backtest.objects.get(pk=backtest.pk), meter.stop()


def celery_alone(count: int, in_flight: int, timeout: float = 600.0) -> float:
    """Return the wall time of ``count`` canvases shaped as a cached 3x2 debate's run,
    tasks that do nothing, ``in_flight`` at once, as a backtest keeps its debates."""
    import uuid

    from celery import chain, group

    from bench.floor_tasks import FLOOR_CHANNEL, floor_end, floor_step
    from bench.orchestration import hearing

    def canvas(run: str):
        openings = group([floor_step.si(0) for _ in SEATS])
        turns = [floor_step.si(0).set(ignore_result=True) for _ in SEATS]
        votes = group([floor_step.si(0) for _ in SEATS])
        return chain(
            floor_step.si(0).set(ignore_result=True), openings, *turns, votes, floor_end.si(run)
        )

    runs = [uuid.uuid4().hex for _ in range(count)]
    with hearing(FLOOR_CHANNEL, lambda message: True) as wait:
        started = time.perf_counter()
        for run in runs[:in_flight]:
            canvas(run).apply_async()
        for run in runs[in_flight:]:
            wait(timeout)
            canvas(run).apply_async()
        for _ in range(min(in_flight, count)):
            wait(timeout)
        return time.perf_counter() - started


def full_stack(latency: float, days: int) -> dict:
    """Parts 1 and 2, on PostgreSQL, Redis and 2 worker processes."""
    setup_django()
    from django.conf import settings
    from django.contrib.auth import get_user_model

    from backtests.models import ACTIVE_STATUSES, Backtest
    from backtests.services import backtest_cancel
    from bench.orchestration import fake_models
    from strategies.models import Strategy
    from tests.fakes.llm_server import FakeLLMServer

    for backtest_id in Backtest.objects.filter(status__in=ACTIVE_STATUSES).values_list(
        "pk", flat=True
    ):
        backtest_cancel(backtest_id=backtest_id)
    cap = user_calls()
    owner, _ = get_user_model().objects.get_or_create(username="bench-backtest")
    # 1h and 4h candles shown, so a replay may start at 2024-08-05 00:00 (with 15m ones, 12
    # candles of them close at 03:00); the fills use the 15m candles all the same.
    strategy = Strategy.objects.create(owner=owner, name="bench backtest", timeframes=["1h", "4h"])
    with FakeLLMServer(latency_s=latency) as llm:
        models = fake_models(owner, llm, SEATS)
        with worker_processes(count=2, include=("bench.floor_tasks",)) as workers:
            meter = CpuMeter(workers)
            first_s, first, first_cpu = run_backtest(
                owner, strategy, models, days=days, cache="refresh", timeout=3600, meter=meter
            )
            calls = len(llm.requests)
            load_first = os.getloadavg()[0]
            again_s, again, again_cpu = run_backtest(
                owner, strategy, models, days=days, cache="use", timeout=3600, meter=meter
            )
            load_again = os.getloadavg()[0]
            calls_again = len(llm.requests) - calls
            blind_s, blind, _ = run_backtest(
                owner,
                strategy,
                models,
                days=days,
                cache="refresh",
                timeout=3600,
                meter=meter,
                book="blind",
            )
            floor_s = celery_alone(first.steps_total, settings.BACKTEST_DEBATES_IN_FLIGHT)
    steps = first.steps_total
    at_cap = calls * latency / cap
    # The votes of one step after another, behind the first step's opening and 3 turns.
    ideal = max(at_cap, (1 + len(SEATS) + steps) * latency)
    return {
        "debates": steps,
        "status": [first.status, again.status, blind.status],
        "model_calls": calls,
        "first_run_s": round(first_s, 3),
        "ideal_s": round(ideal, 3),
        "ratio_to_ideal": round(first_s / ideal, 3),
        "blind_run_s": round(blind_s, 3),
        "blind_ratio_to_ideal_at_cap": round(blind_s / at_cap, 3),
        "aware_over_blind": round(first_s / blind_s, 3),
        "cached_run_s": round(again_s, 3),
        "cached_run_model_calls": calls_again,
        "cached_run_share_of_first": round(again_s / first_s, 3),
        "celery_alone_s": round(floor_s, 3),
        "celery_alone_share_of_first": round(floor_s / first_s, 3),
        "first_run_cpu": first_cpu,
        "cached_run_cpu": again_cpu,
        "load_1min_at_end": [round(load_first, 2), round(load_again, 2)],
        "reports_equal": [r["metrics"] for r in first.report["rules"]]
        == [r["metrics"] for r in again.report["rules"]],
    }


def embedded(days: int, settings_module: str, var: Path) -> tuple[float, dict, float]:
    """Run ``manage.py backtest`` on the embedded default; return (wall s, report,
    the seconds its model answers took)."""
    end = START + timedelta(days=days)
    seconds, printed = embedded_backtest(
        var,
        [
            *("--from", START.isoformat(), "--to", end.isoformat(), "--every", "4h"),
            *("--participants", ",".join(SEATS), "--rounds", "2", "--cache", "off", "--json"),
        ],
        DJANGO_SETTINGS_MODULE=settings_module,
    )
    with sqlite3.connect(var / "arena.sqlite3") as db:
        answered_ms = sum(
            db.execute(f"SELECT COALESCE(SUM(latency_ms), 0) FROM {table}").fetchone()[0]  # noqa: S608
            for table in ("debates_message", "debates_ballot")
        )
    return seconds, json.loads(printed), answered_ms / 1000


def embedded_default(days: int) -> dict:
    """Part 3."""
    with tempfile.TemporaryDirectory() as big, tempfile.TemporaryDirectory() as small:
        wall, report, answered = embedded(days, "arena.settings.local", Path(big))
        with tempfile.TemporaryDirectory() as stock:
            hours = 12 / 24  # 3 steps of 4h
            ours_s, _, _ = embedded(hours, "arena.settings.local", Path(small))
            stock_s, _, _ = embedded(hours, "bench.stock_broker", Path(stock))
    return {
        "debates": report["steps"],
        "completed": report["completed_steps"],
        "wall_s": round(wall, 3),
        "model_answers_s": round(answered, 3),
        "per_debate_s": round(wall / report["steps"], 3),
        "three_steps_project_broker_s": round(ours_s, 3),
        "three_steps_stock_memory_broker_s": round(stock_s, 3),
    }


def simulation(steps: int = 10_000) -> dict:
    """Part 4: the engine alone over ``steps`` steps of 15 minutes."""
    from backtests.engine.portfolio import Intent
    from backtests.engine.rules import Account, run_rule
    from backtests.engine.tape import Tape
    from traders.risk import RiskLimits

    end = datetime(2024, 9, 4, tzinfo=UTC)
    start = end - timedelta(minutes=15 * steps)
    tapes = {"BTCUSDT": Tape.from_dataset("BTCUSDT", start, end)}
    pick = random.Random(7)
    actions = ("open_long", "open_short", "close_long", "close_short", "wait")
    plan = []
    for n in range(steps):
        action = pick.choice(actions)
        intents = () if action == "wait" else (Intent("BTCUSDT", action, 0.2, 3, 0.02, 0.04),)
        plan.append((int((start + timedelta(minutes=15 * n)).timestamp() * 1000), intents))
    flat_plan = [(at, ()) for at, _ in plan]
    account = Account(Decimal("1000"), Decimal("0.0004"), Decimal("0"), RiskLimits())
    common = {
        "tapes": tapes,
        "account": account,
        "end_ms": int(end.timestamp() * 1000),
        "step_minutes": 15,
        "horizon_ms": 15 * 60_000,
    }
    timings, flat_timings, trades = [], [], 0
    for _ in range(5):
        began = time.perf_counter()
        run = run_rule("debate", "debate", plan, **common)
        timings.append(time.perf_counter() - began)
        began = time.perf_counter()
        run_rule("flat", "flat", flat_plan, **common)
        flat_timings.append(time.perf_counter() - began)
        trades = len(run.trades)
    best, flat = min(timings), min(flat_timings)
    return {
        "steps": steps,
        "candles": len(tapes["BTCUSDT"].bars),
        "trades": trades,
        "seconds_best_of_5": round(best, 4),
        "us_per_step": round(best / steps * 1e6, 1),
        "flat_us_per_step": round(flat / steps * 1e6, 1),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--skip-embedded", action="store_true")
    args = parser.parse_args(argv)

    stack = full_stack(args.latency, args.days)
    print(
        f"Backtest, {stack['debates']} debates of 3 participants x 2 rounds, "
        f"latency {args.latency * 1000:.0f} ms, 2 step workers x 3 and a call worker, cap 3"
    )
    print(
        f"  first run, book aware: {stack['first_run_s']:.1f} s for {stack['model_calls']} "
        f"model calls; ideal {stack['ideal_s']:.1f} s, ratio {stack['ratio_to_ideal']:.3f}"
    )
    print(
        f"  the same window, book blind: {stack['blind_run_s']:.1f} s, "
        f"{stack['blind_ratio_to_ideal_at_cap']:.3f} of its ideal at the cap; aware / blind "
        f"{stack['aware_over_blind']:.3f}"
    )
    print(
        f"  again with the cache: {stack['cached_run_s']:.1f} s, "
        f"{stack['cached_run_model_calls']} model calls, "
        f"{stack['cached_run_share_of_first']:.3f} of the first run; same metrics: "
        f"{stack['reports_equal']}"
    )
    print(
        f"  Celery alone, {stack['debates']} canvases of a cached debate's shape (11 tasks that "
        f"do nothing): {stack['celery_alone_s']:.1f} s, "
        f"{stack['celery_alone_share_of_first']:.3f} of the first run"
    )
    for label, key in (("first run", "first_run_cpu"), ("cached run", "cached_run_cpu")):
        cpu = stack[key]
        per_debate_ms = (cpu["workers_cpu_s"] + cpu["postgres_cpu_s"]) / stack["debates"] * 1000
        print(
            f"  {label} CPU: workers {cpu['workers_cpu_s']:.1f} s, PostgreSQL "
            f"{cpu['postgres_cpu_s']:.1f} s ({per_debate_ms:.0f} ms a debate)"
        )
    print(f"  load average (1 min) at the end of each run: {stack['load_1min_at_end']}")
    result = {"full_stack": stack}
    if not args.skip_embedded:
        emb = embedded_default(args.days)
        result["embedded"] = emb
        print(
            f"  embedded default (SQLite, in-process worker, simulated models): "
            f"{emb['wall_s']:.1f} s for {emb['debates']} debates ({emb['per_debate_s']:.3f} s "
            f"each), of which the model answers took {emb['model_answers_s']:.2f} s"
        )
        print(
            f"  3 steps there: {emb['three_steps_project_broker_s']:.1f} s with the project's "
            f"in-memory broker, {emb['three_steps_stock_memory_broker_s']:.1f} s with kombu's "
            "(the command's start included)"
        )
    sim = simulation()
    result["simulation"] = sim
    print(
        f"  portfolio simulation alone: {sim['steps']} steps of 15m ({sim['candles']} candles, "
        f"{sim['trades']} trades) in {sim['seconds_best_of_5']:.3f} s, "
        f"{sim['us_per_step']:.1f} us per step; the flat rule {sim['flat_us_per_step']:.1f} us"
    )
    print(f"  {machine()}")
    return result


if __name__ == "__main__":
    main()
