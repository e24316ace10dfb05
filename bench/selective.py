"""Selective debate over a 30-day replay: tokens at ``level: auto`` against every debate
at L2, how often the two reach the same primary decision, and both backtests' metrics.

Two backtests of the same window, 2024-08-05 to 2024-09-04 at 1h (720 debates of 3
participants, bull, bear and analyst, over 2 rounds), run on the embedded default
(``manage.py backtest``: SQLite, the in-process worker, the simulated model, the cache
off), one at ``--level auto``, one at ``--level L2``, in the same run. The tokens are
those every stored call recorded; the primary decisions are compared step by step.

    python -m bench.selective [--days 30] [--every 1h] [--seats bull,bear,analyst] [--rounds 2]
        [--side-by-side]
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import sqlite3
import tempfile
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

from bench.common import embedded_backtest, machine

START = datetime(2024, 8, 5, tzinfo=UTC)
SEATS = ("bull", "bear", "analyst")


def run(level: str, days: int, every: str, var: Path, seats: str, rounds: int) -> dict:
    """Run one backtest at ``level``; return its report, tokens, decisions and levels."""
    end = START + timedelta(days=days)
    seconds, printed = embedded_backtest(
        var,
        [
            *("--from", START.isoformat(), "--to", end.isoformat(), "--every", every),
            *("--participants", seats, "--rounds", str(rounds), "--cache", "off"),
            *("--level", level, "--json"),
        ],
        DJANGO_SETTINGS_MODULE="arena.settings.local",
        # 720 debates start within minutes: lift the per-user starts-per-hour quota.
        QUOTA_STARTS_PER_HOUR="100000",
    )
    with sqlite3.connect(var / "arena.sqlite3") as db:
        tokens = sum(
            db.execute(
                f"SELECT COALESCE(SUM(prompt_tokens + completion_tokens), 0) FROM {table}"  # noqa: S608
            ).fetchone()[0]
            for table in ("debates_message", "debates_ballot")
        )
        calls = sum(
            db.execute(f"SELECT COUNT(*) FROM {table} WHERE prompt_tokens > 0").fetchone()[0]  # noqa: S608
            for table in ("debates_message", "debates_ballot")
        )
        decisions = dict(
            db.execute(
                'SELECT step."index", decision.action FROM backtests_backteststep AS step '
                "JOIN debates_decision AS decision ON decision.debate_id = step.debate_id "
                "WHERE decision.is_primary"
            ).fetchall()
        )
        levels = collections.Counter(
            row[0] for row in db.execute("SELECT level_used FROM debates_debate").fetchall()
        )
        # Each reason's kind (its words before a colon or a figure): why the gate chose a level.
        reasons = collections.Counter(
            f"{level}: {re.split(r':| at mean confidence', reason, maxsplit=1)[0]}"
            for level, found in db.execute("SELECT level_used, level_reasons FROM debates_debate")
            for reason in json.loads(found or "[]")
        )
        stopped = db.execute(
            "SELECT COUNT(*) FROM debates_debate WHERE stopped_early IS NOT NULL "
            "AND stopped_early != 'null'"
        ).fetchone()[0]
    report = json.loads(printed)
    skipped = report.get("skipped", {"count": 0, "by_reason": {}})
    reasons.update({f"L0: {code}": n for code, n in skipped["by_reason"].items()})
    return {
        "seconds": round(seconds, 1),
        "report": report,
        "tokens": tokens,
        "calls": calls,
        "decisions": decisions,
        # The report's count: the skipped steps (L0) have no debate row.
        "levels": report.get("levels", dict(levels)),
        "skipped_steps": sorted(step["index"] for step in skipped.get("steps", [])),
        "reasons": dict(sorted(reasons.items())),
        "stopped_early": stopped,
    }


@dataclass(frozen=True)
class Agreement:
    """How often the two runs reached the same primary decision, step by step.

    A step skipped at L0 decides nothing new (an open position stays open): it counts as
    a different decision in ``same``; what always-L2 decided at those steps is counted
    apart.
    """

    steps: int
    same: int
    debated: int
    same_debated: int
    quiet: int
    always_l2_at_quiet: dict[str, int]

    @classmethod
    def of(cls, auto: dict, full: dict) -> Agreement:
        """Return the agreement of the runs ``auto`` and ``full`` (``run``'s results)."""
        steps = sorted(set(auto["decisions"]) | set(full["decisions"]))
        quiet = auto["skipped_steps"]
        debated = [i for i in steps if i not in set(quiet)]

        def agreeing(indices: list[int]) -> int:
            return sum(auto["decisions"].get(i) == full["decisions"].get(i) for i in indices)

        at_quiet = collections.Counter(full["decisions"].get(i, "none") for i in quiet)
        return cls(
            steps=len(steps),
            same=agreeing(steps),
            debated=len(debated),
            same_debated=agreeing(debated),
            quiet=len(quiet),
            always_l2_at_quiet=dict(at_quiet.most_common()),
        )


def main() -> dict:
    """Run both backtests, print the comparison and return its figures."""
    args = _arguments()
    with tempfile.TemporaryDirectory() as auto_dir, tempfile.TemporaryDirectory() as full_dir:
        jobs = (("auto", auto_dir), ("L2", full_dir))
        with ThreadPoolExecutor(max_workers=2 if args.side_by_side else 1) as pool:
            shape = (args.seats, args.rounds)
            runs = [
                pool.submit(run, level, args.days, args.every, Path(var), *shape)
                for level, var in jobs
            ]
            auto, full = (job.result() for job in runs)
    agreement = Agreement.of(auto, full)
    result = {
        "steps": agreement.steps,
        "auto": _figures(auto),
        "always_l2": _figures(full),
        "token_ratio": round(auto["tokens"] / full["tokens"], 3),
        "same_primary_decision": (
            round(agreement.same / agreement.steps, 3) if agreement.steps else None
        ),
        "same_at_debated_steps": f"{agreement.same_debated} of {agreement.debated}",
        "always_l2_at_l0_steps": agreement.always_l2_at_quiet,
    }
    _print(args, auto, full, agreement, result)
    return result


def _arguments() -> argparse.Namespace:
    """Return the command line's arguments."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--days", type=int, default=30)
    parser.add_argument("--every", default="1h")
    parser.add_argument("--seats", default=",".join(SEATS), help="personalities, in order")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--side-by-side",
        action="store_true",
        help="run the two backtests at once (the tokens are the same; each one's seconds "
        "then include the other's load)",
    )
    return parser.parse_args()


def _figures(found: dict) -> dict:
    """Return a run's figures without its report, decisions and skipped steps."""
    return {k: v for k, v in found.items() if k not in ("report", "decisions", "skipped_steps")}


def _print(
    args: argparse.Namespace, auto: dict, full: dict, agreement: Agreement, result: dict
) -> None:
    """Print both runs' figures, how far they agree, and each rule's metrics."""
    print(
        f"Selective debate, {agreement.steps} steps at {args.every} over {args.days} days, "
        f"seats {args.seats}, {args.rounds} rounds"
        + (", the two runs side by side" if args.side_by_side else "")
    )
    for name, figures in (("auto", auto), ("always L2", full)):
        print(
            f"  {name}: {figures['tokens']:,} tokens in {figures['calls']:,} calls, "
            f"levels {figures['levels']}, stopped early {figures['stopped_early']}, "
            f"{figures['seconds']} s"
        )
        if name == "auto":
            print(f"    gate reasons: {figures['reasons']}")
    print(
        f"  tokens auto / always L2: {result['token_ratio']} (target <= 0.4); same primary "
        f"decision at {agreement.same} of {agreement.steps} steps "
        f"({result['same_primary_decision']})"
    )
    if agreement.quiet:
        print(
            f"  of those, at the {agreement.debated} steps auto debated: "
            f"{agreement.same_debated}; at its {agreement.quiet} L0 steps (no new decision) "
            f"always L2 decided {result['always_l2_at_l0_steps']}"
        )
    for rule_auto, rule_full in zip(auto["report"]["rules"], full["report"]["rules"], strict=True):
        print(f"  {rule_auto['key']}: auto {rule_auto['metrics']}")
        print(f"  {' ' * len(rule_auto['key'])}  L2   {rule_full['metrics']}")
    print(f"  {machine()}")


if __name__ == "__main__":
    main()
