"""The budget-matched baseline's cost: a backtest with it against the same backtest
without it, at a fixed fake latency, in one run.

A window of 7 days at 4h (42 debates of 3 participants over 2 rounds: 9 calls each) at
``book: aware`` against the fake model server, every call taking L (200 ms), on 2
step workers of 3 processes and the call worker, one user's calls in flight at once
(``MODEL_CALLS_PER_USER``, 3) the cap; ``cache: refresh``, so
every call is made whatever an earlier run stored. First without the baseline (the
baseline of the comparison), then with ``baseline: rotate``: each step's seat model in
turn answers its round-1 prompt again and again until its tokens match the debate's.
The fake server bills a quarter of the characters as tokens, in and out.

Printed for each run: wall time, model calls and tokens, and its ideal: the larger of
calls x L / the cap and its dependency chain (the first step's rounds, a vote a
step after another, then the last step's answers one after another); then the ratios
with / without of wall time, calls and tokens, and how the baseline's tokens matched the
debates'.

    python -m bench.baseline [--latency 0.2] [--days 7]
"""

from __future__ import annotations

import argparse
import os

from bench.backtest import SEATS, CpuMeter, run_backtest
from bench.common import machine, setup_django, user_calls, worker_processes


def _ideal(calls: int, steps: int, tail: int, latency: float, cap: int) -> float:
    """Return the least a run of ``calls`` calls can take at the cap, or along its chain:
    the first step's opening and 3 turns, a vote a step, then ``tail`` answers."""
    return max(calls * latency / cap, (1 + len(SEATS) + steps + tail) * latency)


def _run(owner, strategy, models, llm, meter, days: int, baseline: str) -> dict:
    """Run one backtest with ``baseline``; return its figures."""
    before = len(llm.requests)
    seconds, backtest, cpu = run_backtest(
        owner,
        strategy,
        models,
        days=days,
        cache="refresh",
        timeout=3600,
        meter=meter,
        baseline=baseline,
    )
    usage = backtest.report["usage"]
    match = backtest.report.get("budget_match")
    return {
        "status": backtest.status,
        "steps": backtest.steps_total,
        "seconds": round(seconds, 3),
        "model_calls": len(llm.requests) - before,
        "tokens": usage["prompt_tokens"] + usage["completion_tokens"],
        "cpu": cpu,
        "load_1min": round(os.getloadavg()[0], 2),
        "match": match,
        "tail": match["steps"][-1]["answers"] if match and match["steps"] else 0,
    }


def measure(latency: float, days: int) -> dict:
    """Run the backtest without the baseline, then with it; return both runs' figures."""
    setup_django()
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
    owner, _ = get_user_model().objects.get_or_create(username="bench-baseline")
    strategy, _ = Strategy.objects.get_or_create(
        owner=owner, name="bench baseline", defaults={"timeframes": ["1h", "4h"]}
    )
    with FakeLLMServer(latency_s=latency) as llm:
        models = fake_models(owner, llm, SEATS)
        with worker_processes(count=2) as workers:
            meter = CpuMeter(workers)
            runs = {
                name: _run(owner, strategy, models, llm, meter, days, name)
                for name in ("off", "rotate")
            }
    for found in runs.values():
        found["ideal_s"] = round(
            _ideal(found["model_calls"], found["steps"], found["tail"], latency, cap), 3
        )
        found["ratio_to_ideal"] = round(found["seconds"] / found["ideal_s"], 3)
    off, on = runs["off"], runs["rotate"]
    return {
        "runs": runs,
        "wall_ratio": round(on["seconds"] / off["seconds"], 3),
        "calls_ratio": round(on["model_calls"] / off["model_calls"], 3),
        "tokens_ratio": round(on["tokens"] / off["tokens"], 3),
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--days", type=int, default=7)
    args = parser.parse_args(argv)
    result = measure(args.latency, args.days)
    off, on = result["runs"]["off"], result["runs"]["rotate"]
    print(
        f"Budget-matched baseline, {off['steps']} debates of 3 participants x 2 rounds, "
        f"latency {args.latency * 1000:.0f} ms, 2 step workers x 3 and a call worker, "
        f"cap {user_calls()}"
    )
    for label, found in (("without the baseline", off), ("with baseline: rotate", on)):
        cpu = found["cpu"]
        print(
            f"  {label}: {found['seconds']:.1f} s for {found['model_calls']} model calls, "
            f"{found['tokens']:,} tokens; ideal {found['ideal_s']:.1f} s, ratio "
            f"{found['ratio_to_ideal']:.3f}; CPU workers {cpu['workers_cpu_s']:.1f} s, "
            f"PostgreSQL {cpu['postgres_cpu_s']:.1f} s; load {found['load_1min']} "
            f"({found['status']})"
        )
    match = on["match"]
    answers = sum(step["answers"] for step in match["steps"])
    print(
        f"  with / without: wall {result['wall_ratio']:.3f}, model calls "
        f"{result['calls_ratio']:.3f}, tokens {result['tokens_ratio']:.3f}; the baseline "
        f"asked {answers} answers ({answers / len(match['steps']):.1f} a step), "
        f"{match['tokens']:,} tokens against the debates' {match['target']:,}, every step "
        f"within one answer's: {match['within_one_answer']}"
    )
    print(f"  {machine()}")
    return result


if __name__ == "__main__":
    main()
