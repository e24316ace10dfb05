"""Run every benchmark and write their reports to bench/RESULTS.md (``make bench``).

Each benchmark runs in a process of its own and prints its figures; this runner keeps
what they print, with the command that reproduces it, the machine and the date.

    python -m bench                    # all of them
    python -m bench orchestration sse  # some of them
"""

from __future__ import annotations

import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path

from bench.common import ROOT, machine

BENCHMARKS = {
    "orchestration": "Orchestration overhead against the ideal critical path",
    "prompts": "Prompt characters per debate",
    "slots": "Model-slot utilisation under 30 concurrent debates",
    "fairness": "A second user's debate beside another's 100 debates or hanging model",
    "api": "REST API latency under 50 concurrent clients",
    "sse": "SSE delivery latency and loss under many clients",
    "backtest": "Backtests: the ideal at the cap, the cache, the embedded default, the simulation",
    "baseline": "A backtest with the budget-matched baseline against the same without it",
    "contract": "How often the local language model's answers parse",
    "prefix": "The share of a 3x3 debate's input in a prefix an earlier call sent",
    "evaluation": "The ledger and calibration over 10,000 reviews",
}
RESULTS = Path(__file__).resolve().parent / "RESULTS.md"


def run(name: str) -> tuple[str, float, int]:
    """Run one benchmark; return what it printed, its duration and its exit code."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", f"bench.{name}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=3600,
    )
    output = done.stdout.strip()
    if done.returncode != 0:
        output += "\n" + done.stderr.strip()[-3000:]
    return output, time.monotonic() - started, done.returncode


def main(argv: list[str]) -> int:
    names = argv or list(BENCHMARKS)
    unknown = [name for name in names if name not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmarks {unknown}; choose from {list(BENCHMARKS)}")
        return 2
    sections = []
    failures = 0
    for name in names:
        print(f"running bench.{name} ...", flush=True)
        output, seconds, code = run(name)
        print(output, flush=True)
        failures += code != 0
        status = "" if code == 0 else f" (FAILED, exit {code})"
        sections.append(
            f"## {BENCHMARKS[name]}{status}\n\n"
            f"`python -m bench.{name}` ({seconds:.0f} s)\n\n```\n{output}\n```\n"
        )
    header = (
        "# Benchmark results\n\n"
        f"Measured {datetime.now(UTC):%Y-%m-%d %H:%M} UTC on {machine()}, by "
        f"`make bench` (`python -m bench {' '.join(names)}`). Every figure below is what "
        "the benchmark printed in that run; see bench/README.md for what each measures.\n\n"
    )
    RESULTS.write_text(header + "\n".join(sections))
    print(f"wrote {RESULTS.relative_to(ROOT)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
