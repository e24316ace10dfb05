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

from arena.exceptions import ApplicationError
from backtests.management.tables import print_report
from backtests.models import (
    ACTIVE_STATUSES,
    DEFAULT_WINDOW,
    Backtest,
    BacktestStep,
    BookMode,
    CoinScope,
)
from backtests.selectors import backtest_list, backtest_representation
from backtests.services import BacktestInput, backtest_cancel, backtest_create
from debates.engine.personalities import PERSONALITIES, VARIANTS
from debates.models import CacheMode, DebateLevel
from debates.quotas import QuotaExceeded
from debates.services.inputs import MAX_ROUNDS, MIN_ROUNDS
from strategies.models import Strategy
from traders.management.console import (
    ConsoleCommand,
    StopSignals,
    cancelled_when_stopped,
    command_owner,
    personalities_of,
    poll,
    problem,
    refusal_line,
    seat_models,
    seats,
    seconds,
)

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
    "baseline": "--baseline",
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


class Command(ConsoleCommand):
    help = "Replay a debate template over history, step by step, and score it against baselines."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--symbol", default="BTCUSDT", help="primary coin (default: %(default)s)"
        )
        parser.add_argument(
            "--from",
            dest="start",
            default=f"{DEFAULT_WINDOW[0]:%Y-%m-%d}",
            help="first step (default: %(default)s)",
        )
        parser.add_argument(
            "--to",
            dest="end",
            default=f"{DEFAULT_WINDOW[1]:%Y-%m-%d}",
            help="window end (default: %(default)s)",
        )
        parser.add_argument(
            "--every", default="4h", help="step: 15m, 1h, 4h, 1d... (default: %(default)s)"
        )
        parser.add_argument("--horizon", default="", help="scoring horizon (default: the step)")
        parser.add_argument(
            "--participants",
            default="bull,bear,analyst",
            help=f"personalities, comma-separated, from {', '.join(PERSONALITIES)} "
            "(default: %(default)s)",
        )
        parser.add_argument(
            "--models",
            default="",
            help="AI model ids, one per participant (default: simulated models)",
        )
        parser.add_argument(
            "--rounds",
            type=int,
            choices=range(MIN_ROUNDS, MAX_ROUNDS + 1),
            default=2,
            help="rounds of each debate (default: %(default)s)",
        )
        parser.add_argument(
            "--variant",
            choices=list(VARIANTS),
            default="balanced",
            help="prompt variant (default: %(default)s)",
        )
        parser.add_argument(
            "--balance", default="1000", help="starting balance, USDT (default: %(default)s)"
        )
        parser.add_argument(
            "--fee-rate", default="0.0004", help="fee per fill's notional (default: %(default)s)"
        )
        parser.add_argument(
            "--slippage-bps",
            default="0",
            help="slippage of each fill, basis points (default: %(default)s)",
        )
        parser.add_argument(
            "--coins",
            choices=CoinScope.values,
            default=CoinScope.PRIMARY,
            help="primary: the primary coin's decision; all: every executable decision "
            "(default: %(default)s)",
        )
        parser.add_argument(
            "--book",
            choices=BookMode.values,
            default=BookMode.AWARE,
            help="aware: each step's votes see the simulated account; blind: none does "
            "(default: %(default)s)",
        )
        parser.add_argument(
            "--cache",
            choices=CacheMode.values,
            default=CacheMode.USE,
            help="the model-call cache (default: %(default)s)",
        )
        parser.add_argument(
            "--level",
            choices=DebateLevel.values,
            default=DebateLevel.L2,
            help="debate level (default: %(default)s)",
        )
        parser.add_argument(
            "--user", default="demo", help="owner of the backtest (default: %(default)s)"
        )
        parser.add_argument(
            "--timeout",
            type=seconds,
            default=3600.0,
            help="seconds to wait (default: %(default)s)",
        )
        parser.add_argument(
            "--baseline",
            default="off",
            help="the budget-matched baseline, which costs model calls: off, rotate (each "
            "seat's model in turn) or a seat (P1, P2...), answering its round-1 prompt "
            "again and again with the debate's tokens at each step (default: %(default)s)",
        )
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
            baseline=options["baseline"],
        )

    def _conclude(self, console: Console, backtest: Backtest, *, printed: bool) -> None:
        """Print the report of an ended backtest (when ``printed``) and what did not
        finish; refuse one that did not complete or scored nothing."""
        if backtest.status != "completed":
            raise CommandError(f"backtest {backtest.pk} ended {backtest.status}: {backtest.error}")
        if printed and backtest.report["completed_steps"]:
            print_report(console, backtest)
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
