"""Run a backtest from the command line, with a progress bar, and print every rule's
metrics in one table (or, with ``--json``, the report)."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from functools import partial

from django.core.management.base import CommandError, CommandParser
from rich.console import Console
from rich.markup import escape
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from arena.exceptions import ApplicationError
from backtests.models import ACTIVE_STATUSES, Backtest, BacktestStep, BookMode, CoinScope
from backtests.selectors import backtest_list, backtest_representation
from backtests.services import BacktestInput, backtest_cancel, backtest_create
from debates.models import CacheMode, DebateLevel
from debates.quotas import QuotaExceeded
from strategies.models import Strategy
from traders.management.console import (
    ConsoleCommand,
    StopSignals,
    cancelled_when_stopped,
    command_owner,
    personalities_of,
    poll,
    print_whole,
    problem,
    refusal_line,
    seat_models,
    seats,
    seconds,
)

# The rules' names in the table (participants alone keep theirs: "P1 bull").
SHORT_LABELS = {
    "debate": "debate",
    "buy_and_hold": "buy & hold",
    "flat": "flat",
    "round1_majority": "round-1 majority",
    "weighting:confidence": "votes by confidence",
    "weighting:calibrated": "votes calibrated",
}
DURATION = re.compile(r"^(\d+)\s*(m|h|d)$")
UNIT_MINUTES = {"m": 1, "h": 60, "d": 1440}
TERMINAL = {"completed", "failed", "cancelled"}
# The flag behind each input field, for a refusal naming the flags (``refusal_line``).
FLAGS = {
    "symbol": "--symbol",
    "max_rounds": "--rounds",
    "prompt_variant": "--variant",
    "cache": "--cache",
    "participants": "--participants",
    "start": "--from",
    "end": "--to",
    "interval_minutes": "--every",
    "horizon_minutes": "--horizon",
    "starting_balance": "--balance",
    "fee_rate": "--fee-rate",
    "slippage_bps": "--slippage-bps",
    "coins": "--coins",
    "book": "--book",
    "level": "--level",
}
# The demo strategy shows 1h and 4h candles, so a replay may start in May (a 15m
# timeframe would hold it to 5 August, where the 15m candles begin).
DEMO_STRATEGY = "Demo: majors on 1h and 4h candles"


def minutes(value: str) -> int:
    """Return the minutes of ``15m``, ``4h``, ``1d``..."""
    found = DURATION.match(value.strip())
    if not found:
        raise ValueError(f"{value!r}: give minutes, hours or days, e.g. 15m, 4h, 1d")
    return int(found.group(1)) * UNIT_MINUTES[found.group(2)]


def instant(value: str) -> datetime:
    """Return a UTC instant from ``2024-08-01``, ``2024-08-01T12:00Z`` or another zone's
    time (a time without a zone is UTC's)."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return moment.astimezone(UTC) if moment.tzinfo is not None else moment.replace(tzinfo=UTC)


def _parsed(parse, value: str, flag: str):
    """Return ``parse(value)``, or refuse it naming ``flag``."""
    try:
        return parse(value)
    except ValueError as exc:
        raise CommandError(f"{flag}: {exc}") from exc


def percent(value: float | None) -> str:
    return "-" if value is None else f"{value:+.2%}"


def number(value: float | None, digits: int = 2) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def share(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def profit_factor(metrics: dict) -> str:
    """Return a rule's profit factor; with no losing trade there is none: "∞" when a
    trade won, "-" when none did."""
    if metrics["profit_factor"] is None and (metrics["win_rate"] or 0) > 0:
        return "∞"
    return number(metrics["profit_factor"])


def _tokens(usage: dict) -> str:
    """Return a run's tokens, saying which the simulated model estimated."""
    tokens = usage["prompt_tokens"] + usage["completion_tokens"]
    estimated = usage.get("estimated_tokens", 0)
    if not estimated:
        return f"{tokens} tokens"
    return f"{tokens} tokens ({'estimated' if estimated == tokens else f'{estimated} estimated'})"


class Command(ConsoleCommand):
    help = "Replay a debate template over history, step by step, and score it against baselines."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--symbol", default="BTCUSDT", help="primary coin")
        parser.add_argument("--from", dest="start", default="2024-08-05", help="first step")
        parser.add_argument("--to", dest="end", default="2024-08-12", help="window end")
        parser.add_argument("--every", default="4h", help="step: 15m, 1h, 4h, 1d...")
        parser.add_argument("--horizon", default="", help="scoring horizon (default: the step)")
        parser.add_argument(
            "--participants",
            default="bull,bear,analyst",
            help="personalities, comma-separated (simulated models unless --models is given)",
        )
        parser.add_argument("--models", default="", help="AI model ids, one per participant")
        parser.add_argument("--rounds", type=int, default=2)
        parser.add_argument("--variant", default="balanced")
        parser.add_argument("--balance", default="1000", help="starting balance, USDT")
        parser.add_argument("--fee-rate", default="0.0004")
        parser.add_argument("--slippage-bps", default="0")
        parser.add_argument("--coins", choices=CoinScope.values, default=CoinScope.PRIMARY)
        parser.add_argument(
            "--book",
            choices=BookMode.values,
            default=BookMode.AWARE,
            help="aware: each step's votes see the simulated account; blind: none does "
            "(default: %(default)s)",
        )
        parser.add_argument("--cache", choices=CacheMode.values, default=CacheMode.USE)
        parser.add_argument(
            "--level", choices=DebateLevel.values, default=DebateLevel.L2, help="debate level"
        )
        parser.add_argument("--user", default="demo", help="owner of the backtest")
        parser.add_argument("--timeout", type=seconds, default=3600.0, help="seconds to wait")
        parser.add_argument("--json", action="store_true", help="print the report as JSON")
        parser.add_argument(
            "--cancel",
            type=int,
            metavar="ID",
            help="cancel the user's backtest ID (one a closed terminal left running) and exit",
        )

    def handle(self, *args, **options) -> None:
        console = self.console(options)
        owner = command_owner(options["user"])
        if options["cancel"] is not None:
            self._cancel(console, owner, options["cancel"])
            return
        data = self._input(owner, options)
        timeout = options["timeout"]
        with StopSignals() as stop:
            try:
                backtest = backtest_create(owner=owner, data=data)
            except QuotaExceeded as exc:
                raise CommandError(f"{refusal_line(exc, FLAGS)} {self._running(owner)}") from exc
            except ApplicationError as exc:
                raise CommandError(refusal_line(exc, FLAGS)) from exc
            cancel = partial(backtest_cancel, backtest_id=backtest.pk)
            with cancelled_when_stopped(console, stop, timeout, backtest, cancel):
                self._follow(console, backtest, timeout, stop)
        if options["json"]:
            detail = backtest_representation(backtest_id=backtest.pk)
            self.stdout.write(json.dumps(detail["report"], default=str))
        self._conclude(console, backtest, printed=not options["json"])

    def _input(self, owner, options: dict) -> BacktestInput:
        """Return the backtest's input from the flags, on the demo strategy."""
        personalities = personalities_of(options["participants"])
        models = seat_models(owner, personalities, options["models"])
        step = _parsed(minutes, options["every"], "--every")
        horizon = _parsed(minutes, options["horizon"], "--horizon") if options["horizon"] else None
        start = _parsed(instant, options["start"], "--from")
        end = _parsed(instant, options["end"], "--to")
        strategy, _ = Strategy.objects.get_or_create(
            owner=owner,
            name=DEMO_STRATEGY,
            defaults={
                "static_coins": ["BTCUSDT", "ETHUSDT", "SOLUSDT"],
                "market_source": "dataset",
                "timeframes": ["1h", "4h"],
            },
        )
        return BacktestInput(
            name=f"{options['symbol']} {start:%Y-%m-%d}..{end:%Y-%m-%d} every {options['every']}",
            strategy=strategy.pk,
            participants=seats(models, personalities),
            symbol=options["symbol"],
            max_rounds=options["rounds"],
            prompt_variant=options["variant"],
            start=start,
            end=end,
            interval_minutes=step,
            horizon_minutes=horizon,
            starting_balance=options["balance"],
            fee_rate=options["fee_rate"],
            slippage_bps=options["slippage_bps"],
            coins=options["coins"],
            book=options["book"],
            cache=options["cache"],
            level=options["level"],
        )

    def _conclude(self, console: Console, backtest: Backtest, *, printed: bool) -> None:
        """Print the report of an ended backtest (when ``printed``) and what did not
        finish; refuse one that did not complete or scored nothing."""
        if backtest.status != "completed":
            raise CommandError(f"backtest {backtest.pk} ended {backtest.status}: {backtest.error}")
        if printed and backtest.report["completed_steps"]:
            self._print_report(console, backtest)
        unfinished = self._unfinished(backtest)
        if unfinished:
            console.print(f"[yellow]{escape(unfinished)}[/]")
        if not backtest.report["completed_steps"]:
            raise CommandError(f"backtest {backtest.pk}: no debate completed, nothing to score")

    def _cancel(self, console: Console, owner, backtest_id: int) -> None:
        """Cancel the owner's backtest ``backtest_id`` and its running debates."""
        try:
            backtest = backtest_cancel(backtest_id=backtest_id, owner=owner)
        except ApplicationError as exc:
            raise CommandError(f"--cancel: {exc.message}") from exc
        console.print(f"Backtest {backtest.pk} {backtest.status}.")

    def _running(self, owner) -> str:
        """Name the owner's running backtests and how to stop one: on the embedded
        default a backtest whose command was killed stays running, with no worker."""
        running = [
            f"{backtest.pk} ({backtest.name}, {backtest.steps_done}/{backtest.steps_total})"
            for backtest in backtest_list(owner=owner).filter(status__in=ACTIVE_STATUSES)
        ]
        return f"Running: {', '.join(running)}; --cancel ID stops one."

    def _unfinished(self, backtest: Backtest) -> str:
        """Say how many steps' debates did not complete and why the first did not, or
        return "" when every step's did (or was skipped)."""
        unfinished = backtest.report["unfinished_steps"]
        if not unfinished:
            return ""
        first = (
            BacktestStep.objects.filter(backtest=backtest, index=unfinished[0]["index"])
            .select_related("debate")
            .first()
        )
        debate = first.debate if first is not None else None
        why = (
            f"debate {debate.pk} {debate.status}: {problem(debate.error, markup=False)}"
            if debate is not None
            else "its debate was deleted"
        )
        return (
            f"{len(unfinished)} of {backtest.report['steps']} steps have no completed debate "
            f"(scored as no decision); the first, at {unfinished[0]['at'][:16]}, "
            f"{why.rstrip('.')}."
        )

    def _follow(
        self, console: Console, backtest: Backtest, timeout: float, stop: StopSignals
    ) -> None:
        """Show the debates done of the total until the backtest ends."""
        columns = (
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("debates"),
            TimeElapsedColumn(),
        )
        with Progress(*columns, console=console, transient=False) as progress:
            task = progress.add_task(escape(backtest.name), total=backtest.steps_total)

            def ended() -> bool:
                backtest.refresh_from_db()
                progress.update(task, completed=backtest.steps_done)
                return backtest.status in TERMINAL

            poll(stop, timeout, ended)

    def _print_report(self, console: Console, backtest: Backtest) -> None:
        report = backtest.report
        stretches = ", ".join(
            f"{s['timeframe']} from {s['from'][:16]}" for s in report["stretches"]
        )
        table = Table(title=f"Backtest {backtest.pk}: {escape(backtest.name)}")
        for column in (
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
        ):
            table.add_column(column, justify="left" if column == "rule" else "right", no_wrap=True)
        for run in report["rules"]:
            m = run["metrics"]
            table.add_row(
                escape(SHORT_LABELS.get(run["key"], run["label"].removesuffix(" alone"))),
                number(m["final_equity"]),
                percent(m["total_return"]),
                percent(-m["max_drawdown"]) if m["max_drawdown"] else "0.00%",
                number(m["sharpe"]),
                number(m["sortino"]),
                share(m["win_rate"]),
                profit_factor(m),
                str(m["trades"]),
                f"{m['exposure']:.0%}",
                number(m["fees"]),
                share(m["hit_rate"]),
            )
        print_whole(console, table)
        usage = report["usage"]
        skipped = report.get("skipped", {}).get("count", 0)
        console.print(
            f"{report['completed_steps']}/{report['steps']} debates completed"
            + (f" ({skipped} steps skipped at L0: no debate needed)" if skipped else "")
            + "; "
            f"{usage['model_calls']} model calls, {usage['cached_calls']} answered from the "
            f"cache, {_tokens(usage)}, {usage['seconds']:.1f} s. Candles: {stretches}."
        )
        self._print_ledger(console, report)

    def _print_ledger(self, console: Console, report: dict) -> None:
        """Print the debate-effect ledger, each voter's accuracy and calibration, the
        monitors' warnings and the leakage flag."""
        ledger = report.get("ledger")
        if not ledger:
            return
        tokens = ledger["tokens_per_useful_flip"]
        console.print(
            f"Did the debate help? {ledger['decisions']} decisions reviewed, "
            f"{ledger['flips']} flipped from the round-1 majority "
            f"({share(ledger['flip_rate'])}), {share(ledger['flip_accuracy'])} of the flips "
            f"right ({ledger['useful_flips']} useful, {ledger['harmful_flips']} harmful); "
            f"accuracy {share(ledger['final_accuracy'])} after the debate against "
            f"{share(ledger['round1_accuracy'])} for the round-1 majority; "
            f"{'-' if tokens is None else f'{tokens:,.0f}'} tokens of rounds 2..N per "
            "useful flip."
        )
        self._print_voters(console, ledger["participants"], report.get("calibration", []))
        for warning in report.get("monitors", {}).get("warnings", []):
            console.print(f"[yellow]warning:[/] {escape(warning)}")
        leakage = report.get("leakage") or {}
        if leakage.get("contaminated"):
            names = ", ".join(f"{m['name']} ({m['training_cutoff']})" for m in leakage["models"])
            console.print(
                f"[red]contaminated:[/] the window starts before the training cutoff of {names}"
            )

    def _print_voters(self, console: Console, seats: dict, calibration: list[dict]) -> None:
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
