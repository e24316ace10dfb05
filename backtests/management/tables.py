"""The tables ``manage.py backtest`` prints from a backtest's report: every rule's
metrics, what the rules that read model answers spent per unit of edge, the usage, then
the outcome reviews (the ledger, each voter's accuracy and calibration) and whether the
debate earned its tokens, on the backtest and on its strategy."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from backtests.models import Backtest
from evaluations import selectors
from traders.management.console import print_whole

# The rules' names in the table (participants alone keep theirs: "P1 bull").
SHORT_LABELS = {
    "debate": "debate",
    "buy_and_hold": "buy & hold",
    "flat": "flat",
    "round1_majority": "round-1 majority",
    "weighting:confidence": "votes by confidence",
    "weighting:calibrated": "votes calibrated",
    "budget_matched": "budget-matched",
}


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2%}"


def number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def drawdown(value: float | None) -> str:
    """Return a maximum drawdown as the API gives it: the fall from a peak as a positive
    share (``0.2044``: "20.44%")."""
    return "-" if value is None else f"{value:.2%}"


def share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def profit_factor(metrics: dict) -> str:
    """Return a rule's profit factor; with no losing trade there is none: "∞" when a
    trade won, "-" when none did."""
    if metrics["profit_factor"] is None and (metrics["win_rate"] or 0) > 0:
        return "∞"
    return number(metrics["profit_factor"])


def rule_name(run: dict) -> str:
    """Return a rule's name in the tables (a participant alone keeps its own: "P1 bull")."""
    return SHORT_LABELS.get(run["key"], run["label"].removesuffix(" alone"))


def print_report(console: Console, backtest: Backtest) -> None:
    """Print every rule's metrics in one table, what the rules that read model answers
    spent, the run's usage, then the outcome reviews."""
    report = backtest.report
    print_whole(console, _metrics_table(report, f"Backtest {backtest.pk}: {backtest.name}"))
    print_whole(console, _spend_table(report))
    usage = report["usage"]
    skipped = report.get("skipped", {}).get("count", 0)
    stretches = ", ".join(f"{s['timeframe']} from {s['from'][:16]}" for s in report["stretches"])
    console.print(
        f"{report['completed_steps']}/{report['steps']} debates completed"
        + (f" ({skipped} steps skipped at L0: no debate needed)" if skipped else "")
        + "; "
        f"{usage['model_calls']} model calls, {usage['cached_calls']} answered from the "
        f"cache, {_tokens(usage)}, "
        f"{usage['seconds']:.1f} s. Candles: {stretches}."
    )
    match = report.get("budget_match")
    if match:
        console.print(budget_match_line(match))
    _print_ledger(console, report)
    _print_verdict(console, backtest)


def _tokens(usage: dict) -> str:
    """Return a run's tokens, saying which the simulated model estimated."""
    tokens = usage["prompt_tokens"] + usage["completion_tokens"]
    estimated = usage.get("estimated_tokens", 0)
    if not estimated:
        return f"{tokens} tokens"
    return f"{tokens} tokens ({'estimated' if estimated == tokens else f'{estimated} estimated'})"


def budget_match_line(match: dict) -> str:
    """Return in one line how the baseline's tokens matched the debate's."""
    steps = match["steps"]
    answers = sum(step["answers"] for step in steps)
    short = sum(bool(step["note"]) for step in steps)
    within = "every step" if match["within_one_answer"] else "not every step"
    return (
        f"Budget-matched baseline: {answers} answers over {len(steps)} steps "
        f"({answers / len(steps) if steps else 0:.1f} a step), {match['tokens']:,} tokens "
        f"against the debate's {match['target']:,}; {within} within one answer's tokens"
        + (f", {short} stopped short (see the report)" if short else "")
        + "."
    )


METRIC_COLUMNS = (
    "rule",
    "equity",
    "return",
    "max DD",
    "Sharpe",
    "Sortino",
    "win",
    "PF",
    "trades",
    "exp.",
    "fees",
    "hit",
)


def _metrics_table(report: dict, title: str) -> Table:
    """Return the table of every rule's metrics."""
    table = Table(title=escape(title))
    for column in METRIC_COLUMNS:
        table.add_column(column, justify="left" if column == "rule" else "right", no_wrap=True)
    for run in report["rules"]:
        m = run["metrics"]
        table.add_row(
            escape(rule_name(run)),
            number(m["final_equity"]),
            percent(m["total_return"]),
            drawdown(m["max_drawdown"]),
            number(m["sharpe"]),
            number(m["sortino"]),
            share(m["win_rate"]),
            profit_factor(m),
            str(m["trades"]),
            f"{m['exposure']:.0%}",
            number(m["fees"]),
            share(m["hit_rate"]),
        )
    return table


def tokens(value: float | None) -> str:
    return "-" if value is None else f"{value:,.0f}"


def usd(value: float | str | None) -> str:
    """Return a cost in USD to four significant figures ("-" for none)."""
    return "-" if value is None else f"{float(value):.4g}"


def _spend_table(report: dict) -> Table:
    """Return the table of what each rule that reads model answers spent: tokens and
    USD, in all and per trade, per point of return over buy-and-hold ("no edge" when it
    did not beat it) and per correct decision."""
    table = Table(title="What the tokens bought (tokens / USD)")
    for column in ("rule", "tokens", "USD", "per trade", "per point over B&H", "per correct"):
        table.add_column(column, justify="left" if column == "rule" else "right", no_wrap=True)
    for run in report["rules"]:
        spend = run.get("spend")
        if spend is None:
            continue
        per = {
            unit: f"{tokens(spend[f'tokens_per_{unit}'])} / {usd(spend[f'usd_per_{unit}'])}"
            for unit in ("trade", "point", "correct")
        }
        table.add_row(
            escape(rule_name(run)),
            tokens(spend["tokens"]),
            usd(spend["cost_usd"]),
            per["trade"],
            per["point"] if spend["tokens_per_point"] is not None else "no edge",
            per["correct"],
        )
    return table


def _print_ledger(console: Console, report: dict) -> None:
    """Print the debate-effect ledger, each voter's accuracy and calibration, the
    monitors' warnings and the leakage flag."""
    ledger = report.get("ledger")
    if not ledger:
        return
    console.print(
        f"Did the debate help? {ledger['decisions']} decisions reviewed, "
        f"{ledger['flips']} flipped from the round-1 majority "
        f"({share(ledger['flip_rate'])}), {share(ledger['flip_accuracy'])} of the flips "
        f"right ({ledger['useful_flips']} useful, {ledger['harmful_flips']} harmful); "
        f"accuracy {share(ledger['final_accuracy'])} after the debate against "
        f"{share(ledger['round1_accuracy'])} for the round-1 majority; "
        f"{tokens(ledger['tokens_per_useful_flip'])} tokens of rounds 2..N per "
        "useful flip."
    )
    _print_voters(console, ledger["participants"], report.get("calibration", []))
    for warning in report.get("monitors", {}).get("warnings", []):
        console.print(f"[yellow]warning:[/] {escape(warning)}")
    leakage = report.get("leakage") or {}
    if leakage.get("contaminated"):
        names = ", ".join(f"{m['name']} ({m['training_cutoff']})" for m in leakage["models"])
        console.print(
            f"[red]contaminated:[/] the window starts before the training cutoff of {names}"
        )


def _print_voters(console: Console, seats: dict, calibration: list[dict]) -> None:
    """Print each voter's accuracy alone beside its calibration."""
    voters = Table(title="Voters")
    for column in ("voter", "votes", "alone", "judged", "hit", "base", "Brier"):
        voters.add_column(column, justify="left" if column == "voter" else "right")
    calibrated = {v["voter"]: v for v in calibration}
    for key, seat in seats.items():
        found = calibrated.get(key, {})
        voters.add_row(
            escape(f"{seat['ai_model_name']} as {seat['personality']}"),
            str(seat["votes"]),
            share(seat["accuracy"]),
            str(found.get("samples", 0)),
            share(found.get("hit_rate")),
            share(found.get("base_rate")),
            number(found.get("brier"), 3),
        )
    print_whole(console, voters)


def _signed(value: float | None, scale: float = 1, digits: int = 2) -> str:
    return "-" if value is None else f"{value * scale:+.{digits}f}"


def _both(pair: list, scale: float = 1, digits: int = 2) -> str:
    return " / ".join("-" if v is None else f"{v * scale:.{digits}f}" for v in pair)


def _bounds(interval: list | None, scale: float = 1, digits: int = 2) -> str:
    if interval is None:
        return "-"
    return f"{_signed(interval[0], scale, digits)} to {_signed(interval[1], scale, digits)}"


def _print_verdict(console: Console, backtest: Backtest) -> None:
    """Print the debate against each rule it pairs with, step by step, and whether it
    earned its tokens on this backtest, then on its strategy (its backtests and live
    debates) when that holds more steps."""
    verdict = (backtest.report.get("ledger") or {}).get("verdict")
    if not verdict:
        return
    table = Table(title="Did the debate earn its tokens? (paired bootstrap over steps)")
    for column in ("debate against", "steps", "hit %", "Δ hit, 95 %", "return %", "Δ, 95 %"):
        table.add_column(column, justify="left" if column == "debate against" else "right")
    table.add_column("ahead", justify="right")
    compared = [verdict["comparisons"].get(key) for key in ("round1_majority", "budget_matched")]
    compared = [c for c in compared if c]
    for c in compared:
        table.add_row(
            SHORT_LABELS[c["against"]],
            str(c["steps"]),
            _both(c["hit_rate"], 100, 0),
            f"{_signed(c['hit_difference'], 100, 1)} ({_bounds(c['hit_interval'], 100, 1)})",
            _both(c["return_pct"]),
            f"{_signed(c['return_difference'])} ({_bounds(c['return_interval'])})",
            share(c["ahead"]),
        )
    if compared:
        print_whole(console, table)
    console.print(escape(verdict["sentence"]))
    if backtest.strategy_id is None:
        return
    scope = selectors.Scope(owner_id=backtest.owner_id, strategy_id=backtest.strategy_id)
    wider = selectors.ledger(scope).verdict
    if _most_steps(wider) > _most_steps(verdict):
        console.print(escape(wider["sentence"]))


def _most_steps(verdict: dict) -> int:
    """Return the most steps any comparison of ``verdict`` pairs."""
    return max((c["steps"] for c in verdict["comparisons"].values() if c), default=0)
