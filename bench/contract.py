"""How often a real language model's answers parse: turns and votes on the local model.

The local model (``scripts/local-model``: llama.cpp's server with Qwen2.5-Coder-0.5B-Instruct,
one thread) answers the project's own prompts through the ``openai_compatible`` provider:
for each of N instants of the bundled dataset, an opening turn (round 1 of 2, the
personalities in turn) and a final vote that sees the positions of that turn. Every answer
goes through the project's parser; the table gives the share parsed fully, partly and not
at all, why each failure failed, and the time per call. A ballot is usable when it holds a
vote for the coin.

The prompts are kept small, as the CI debate's are: one coin, 1h candles, 6 rows.

    python -m bench.contract [--instants 10] [--output-mode tagged|json_schema]
                             [--temperature 0.3] [--max-tokens 400]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import subprocess
import time
from datetime import UTC, datetime, timedelta

from bench.common import ROOT

SYMBOL = "BTCUSDT"
PERSONALITIES = ("bull", "bear", "analyst", "contrarian", "risk_manager")
FIRST_INSTANT = datetime(2024, 8, 5, 12, tzinfo=UTC)
SPACING = timedelta(hours=61)  # ten instants spread over the 15m-candle month


def local_model_url() -> str:
    """Start the local model unless it answers already; return its base URL."""
    done = subprocess.run(
        [str(ROOT / "scripts" / "local-model"), "start"],
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip().splitlines()[-1]


def market_text(as_of: datetime) -> str:
    from strategies.market.builder import SnapshotSpec, build_snapshot
    from strategies.market.render import render_snapshot
    from strategies.market.sources import source_for

    spec = SnapshotSpec(coins=((SYMBOL, "static"),), timeframes=("1h",), rows=6, as_of=as_of)
    return render_snapshot(build_snapshot(spec, source_for("dataset")))


def ask(config, prompt, kind: str, personality: str) -> dict:
    from debates.engine.parsing import parse_output
    from debates.providers.base import ModelRequest, ProviderError
    from debates.providers.registry import complete

    request = ModelRequest(
        system=prompt.system,
        user=prompt.user,
        kind=kind,
        personality=personality,
        round=1,
        max_rounds=2,
        symbols=(SYMBOL,),
    )
    started = time.monotonic()
    try:
        response = complete(config, request)
    except ProviderError as exc:
        return {"status": "error", "why": exc.code, "seconds": time.monotonic() - started}
    parsed = parse_output(response.text, (SYMBOL,))
    why = "; ".join(sorted({d.reason for d in parsed.dropped})) if parsed.dropped else ""
    if parsed.status.value == "failed" and response.finish_reason == "length":
        why += " (cut at the token limit)"
    return {
        "status": parsed.status.value,
        "why": why,
        "seconds": time.monotonic() - started,
        "completion_tokens": response.completion_tokens,
        "parsed": parsed,
    }


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instants", type=int, default=10)
    parser.add_argument("--output-mode", default="tagged")
    parser.add_argument("--temperature", type=float, default=0.3)
    parser.add_argument("--max-tokens", type=int, default=400)
    args = parser.parse_args(argv)

    from debates.engine.digest import HistoryEntry
    from debates.engine.prompts import (
        TurnContext,
        VoteContext,
        build_turn_prompt,
        build_vote_prompt,
    )
    from debates.providers.base import ProviderConfig

    config = ProviderConfig(
        provider="openai_compatible",
        model_name="qwen2.5-coder-0.5b-instruct",
        base_url=local_model_url(),
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        timeout_s=180,
        output_mode=args.output_mode,
    )
    results: dict[str, list[dict]] = {"turn": [], "vote": []}
    for n in range(args.instants):
        as_of = FIRST_INSTANT + n * SPACING
        personality = PERSONALITIES[n % len(PERSONALITIES)]
        text = market_text(as_of)
        turn_ctx = TurnContext(
            round=1,
            max_rounds=2,
            personality=personality,
            variant="balanced",
            symbols=(SYMBOL,),
            market_text=text,
            participant="P1",
            output_mode=args.output_mode,
        )
        turn = ask(config, build_turn_prompt(turn_ctx), "turn", personality)
        results["turn"].append(turn)
        positions = ()
        if "parsed" in turn and turn["parsed"].decisions:
            positions = (
                HistoryEntry(
                    participant="P1",
                    personality=personality,
                    round=1,
                    decisions=turn["parsed"].decisions,
                    reasoning=turn["parsed"].reasoning,
                ),
            )
        voter = PERSONALITIES[(n + 2) % len(PERSONALITIES)]
        vote_ctx = VoteContext(
            personality=voter,
            variant="balanced",
            symbols=(SYMBOL,),
            market_summary=text,
            positions=positions,
            participant="P2",
            output_mode=args.output_mode,
        )
        vote = ask(config, build_vote_prompt(vote_ctx), "vote", voter)
        results["vote"].append(vote)
        for kind, row in (("turn", turn), ("vote", vote)):
            print(
                f"  {as_of:%Y-%m-%d %H:%M} {kind:4} {row['status']:7} {row['seconds']:5.1f} s"
                f" {row.get('completion_tokens', 0):4} tokens  {row['why']}",
                flush=True,
            )
    summary = summarise(results)
    print(
        f"Local model, output mode {args.output_mode}, temperature {args.temperature}, "
        f"{args.max_tokens} output tokens, {args.instants} instants"
    )
    for kind, figures in summary.items():
        print(
            f"  {kind}s: {figures['ok']} parsed fully, {figures['partial']} partly, "
            f"{figures['failed']} not at all, {figures['error']} call errors; usable "
            f"{figures['usable']}/{figures['count']}; median {figures['median_s']:.1f} s "
            f"per call (max {figures['max_s']:.1f} s)"
        )
        for why, count in figures["failures"].items():
            print(f"    {count} x {why}")
    return summary


def summarise(results: dict[str, list[dict]]) -> dict[str, dict]:
    summary = {}
    for kind, rows in results.items():
        statuses = collections.Counter(row["status"] for row in rows)
        seconds = [row["seconds"] for row in rows]
        summary[kind] = {
            "count": len(rows),
            **{status: statuses.get(status, 0) for status in ("ok", "partial", "failed", "error")},
            "usable": sum(row["status"] in ("ok", "partial") for row in rows),
            "median_s": statistics.median(seconds),
            "max_s": max(seconds),
            "failures": collections.Counter(
                row["why"] or row["status"] for row in rows if row["status"] in ("failed", "error")
            ),
        }
    return summary


if __name__ == "__main__":
    main()
