"""Run one whole debate from the command line and print it as it happens."""

from __future__ import annotations

import argparse
import json
import textwrap
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial

from django.core.management.base import CommandError, CommandParser
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from arena.exceptions import ApplicationError
from debates.engine.personalities import PERSONALITIES, VARIANTS
from debates.engine.types import EXECUTABLE_ACTIONS
from debates.models import AIModel, Ballot, CacheMode, Debate, Message, Participant, Vote
from debates.selectors import debate_representation
from debates.serializers import price_decimals
from debates.services import DebateInput, debate_cancel, debate_create, debate_start
from debates.services.inputs import MAX_ROUNDS, MIN_ROUNDS
from strategies.market.dataset import DATASET_END
from traders.hooks import executed_decisions
from traders.management.console import (
    POLL_S,
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
from traders.management.demo import (
    DEMO_COINS,
    demo_strategy,
    demo_trader,
    local_model,
    local_model_left,
)
from traders.models import Execution, Trader
from traders.services import execution_request
from traders.services.execution_state import FINAL_STATUSES

# How the transcript shows each action: its label and the label's style.
ACTIONS = {
    "open_long": ("LONG", "bold green"),
    "open_short": ("SHORT", "bold red"),
    "close_long": ("CLOSE LONG", "yellow"),
    "close_short": ("CLOSE SHORT", "yellow"),
    "hold": ("HOLD", "cyan"),
    "wait": ("WAIT", "dim"),
}
BADGES = {action: f"[{style}]{label}[/]" for action, (label, style) in ACTIONS.items()}
# How much of a turn's reasoning the transcript shows.
REASONING_CHARS = 300
TERMINAL = {"completed", "cancelled", "failed"}


def parse_instant(value: str) -> datetime:
    """Return an aware datetime from ISO 8601 text such as ``2024-08-05T12:00Z``."""
    moment = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        raise ValueError("give a time zone, e.g. 2024-08-05T12:00Z")
    return moment


# The defaults of the flags --local-model changes: (without it, with it).
DEFAULTS = {
    "participants": ("bull,bear,analyst", "bull,bear"),
    "rounds": (3, 2),
    "timeout": (300.0, 900.0),
}

# The flag that gave each field of the debate's input, so a refusal names what was typed.
FLAGS = {
    "symbol": "--symbol",
    "max_rounds": "--rounds",
    "prompt_variant": "--variant",
    "as_of": "--as-of",
    "cache": "--cache",
    "participants": "--participants",
}


def check_rounds(rounds: int) -> None:
    """Refuse a number of rounds out of range, naming the range (the input serializer's
    message names only the bound passed)."""
    if not MIN_ROUNDS <= rounds <= MAX_ROUNDS:
        raise CommandError(
            f"--rounds: Must be between {MIN_ROUNDS} and {MAX_ROUNDS}; got {rounds}."
        )


@dataclass
class _Shown:
    """What the transcript has printed of a debate so far, and its seats by id."""

    participants: dict[int, Participant]
    messages: set[int] = field(default_factory=set)
    ballots: set[int] = field(default_factory=set)
    round: int = 0
    coins: bool = False


class Command(ConsoleCommand):
    help = "Create and run a debate through the normal Celery canvas, printing it live."

    def create_parser(self, prog_name: str, subcommand: str, **kwargs) -> CommandParser:
        parser = super().create_parser(prog_name, subcommand, **kwargs)
        parser.epilog = (
            "The debate runs through the normal Celery canvas (in-process on the embedded "
            "default). Ctrl-C, SIGTERM or a closed terminal cancels it. Errors name the flag "
            "that caused them."
        )
        return parser

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--symbol",
            default="BTCUSDT",
            help="primary coin (BTC, BTCUSDT, BTC/USDT); the other coins are the strategy's "
            f"({', '.join(DEMO_COINS)}), the primary first, at most {len(DEMO_COINS)} "
            "(default: %(default)s)",
        )
        parser.add_argument(
            "--participants",
            default=None,
            help=f"personalities, comma-separated, from {', '.join(PERSONALITIES)} "
            "(simulated models unless --models or --local-model is given; default "
            "bull,bear,analyst, with --local-model bull,bear)",
        )
        parser.add_argument(
            "--models",
            default="",
            help="your AI model ids, one per participant, comma-separated (default: simulated "
            "models)",
        )
        parser.add_argument(
            "--local-model",
            action="store_true",
            help="seat the local model of scripts/local-model (installed and started if "
            "needed) through the openai_compatible provider, on one coin and 1h candles",
        )
        parser.add_argument(
            "--rounds",
            type=int,
            default=None,
            help=f"{MIN_ROUNDS} to {MAX_ROUNDS} (default 3, with --local-model 2)",
        )
        parser.add_argument(
            "--variant",
            default="balanced",
            choices=list(VARIANTS),
            help="prompt variant (default: %(default)s)",
        )
        parser.add_argument(
            "--as-of",
            default=DATASET_END.strftime("%Y-%m-%dT%H:%MZ"),
            help="dataset replay instant, e.g. 2024-08-05T12:00Z (default: %(default)s, "
            "the dataset's end)",
        )
        parser.add_argument(
            "--cache",
            choices=CacheMode.values,
            default=CacheMode.OFF,
            help="the model-call cache: off, use (answer calls made before from it) or "
            "refresh (call again and keep the new answers) (default: %(default)s)",
        )
        parser.add_argument(
            "--user", default="demo", help="owner of the debate (default: %(default)s)"
        )
        parser.add_argument(
            "--timeout",
            type=seconds,
            default=None,
            help="seconds to wait for the debate (default 300, with --local-model 900)",
        )
        parser.add_argument(
            "--json",
            action="store_true",
            help="print the final detail as JSON on stdout (the transcript goes to stderr)",
        )
        parser.add_argument(
            "--execute",
            action=argparse.BooleanOptionalAction,
            default=True,
            help="execute every executable decision, the primary coin's first, on a fresh "
            "demo paper account and print the fills (default: yes)",
        )

    def handle(self, *args, **options) -> None:
        console = self.console(options)
        owner = command_owner(options["user"])
        # A flag given is taken as typed (--rounds 0 is refused, not read as the default).
        given = {
            name: DEFAULTS[name][options["local_model"]] if options[name] is None else options[name]
            for name in DEFAULTS
        }
        check_rounds(given["rounds"])
        data, local = self._input(console, owner, options, given)
        try:
            self._run(console, owner, data, options, given["timeout"])
        finally:
            if local is not None:
                local_model_left(console, local)

    def _run(
        self, console: Console, owner, data: DebateInput, options: dict, timeout: float
    ) -> None:
        """Create and start the debate, print it as it goes, execute its decisions (unless
        told not to); refuse a debate that did not complete."""
        with StopSignals() as stop:
            try:
                debate = debate_create(owner=owner, data=data)
            except ApplicationError as exc:
                raise CommandError(refusal_line(exc, FLAGS)) from exc
            cancel = partial(debate_cancel, debate_id=debate.pk)
            with cancelled_when_stopped(console, stop, timeout, debate, cancel):
                debate_start(debate_id=debate.pk)
                final = self._follow(console, debate.pk, timeout, stop)
                if final.status == "completed" and options["execute"]:
                    self._execute_all(console, owner, final, timeout, stop)
        if options["json"]:
            self.stdout.write(json.dumps(debate_representation(debate_id=debate.pk), default=str))
        if final.status != "completed":
            reason = problem(final.error, markup=False)
            raise CommandError(f"debate {final.pk} ended {final.status}: {reason}")

    def _input(
        self, console: Console, owner, options: dict, given: dict
    ) -> tuple[DebateInput, AIModel | None]:
        """Return the debate's input from the flags, ``given`` holding those whose
        default ``--local-model`` changes, and the local model when it is asked for:
        started (once the flags are checked), seated in every seat."""
        personalities = personalities_of(given["participants"])
        try:
            as_of = parse_instant(options["as_of"])
        except ValueError as exc:
            raise CommandError(f"--as-of: {exc}") from exc
        strategy = demo_strategy(owner, options["symbol"] if options["local_model"] else None)
        local = local_model(console, owner) if options["local_model"] else None
        if local is not None:
            models = [local] * len(personalities)
        else:
            models = seat_models(owner, personalities, options["models"])
        debate = DebateInput(
            name=f"{options['symbol']} at {as_of.astimezone(UTC):%Y-%m-%d %H:%M} UTC",
            strategy=strategy.pk,
            symbol=options["symbol"],
            max_rounds=given["rounds"],
            prompt_variant=options["variant"],
            participants=seats(models, personalities),
            as_of=as_of,
            cache=options["cache"],
        )
        return debate, local

    def _follow(
        self, console: Console, debate_id: int, timeout: float, stop: StopSignals
    ) -> Debate:
        """Print each stored turn, vote and the consensus until the debate ends."""
        debate = Debate.objects.get(pk=debate_id)
        shown = _Shown({p.pk: p for p in debate.participants.select_related("ai_model")})
        console.rule(f"[bold]{escape(debate.name)}[/]")
        console.print(
            "Participants: "
            + ", ".join(
                f"{PERSONALITIES[p.personality].emoji} {p.personality} ({escape(str(p.ai_model))})"
                for p in shown.participants.values()
            )
        )
        poll(stop, timeout, partial(self._show_new, console, debate, shown))
        if debate.status == "completed":
            self._print_consensus(console, debate)
        else:
            console.print(f"[bold red]Debate {debate.status}[/]: {problem(debate.error)}")
        return debate

    def _show_new(self, console: Console, debate: Debate, shown: _Shown) -> bool:
        """Print what the debate stored since ``shown``; return whether it has ended."""
        debate.refresh_from_db()
        if debate.symbols and not shown.coins:  # the snapshot step chose them
            self._print_coins(console, debate)
            shown.coins = True
        for message in (
            Message.objects.filter(debate_id=debate.pk)
            .exclude(pk__in=shown.messages)
            .order_by("round", "participant__speak_order")
        ):
            if message.round != shown.round:
                shown.round = message.round
                console.rule(f"Round {shown.round}/{debate.max_rounds}")
            self._print_message(console, shown.participants[message.participant_id], message)
            shown.messages.add(message.pk)
        for ballot in Ballot.objects.filter(debate_id=debate.pk).exclude(pk__in=shown.ballots):
            if not shown.ballots:
                console.rule("Votes")
            self._print_ballot(console, shown.participants[ballot.participant_id], ballot)
            shown.ballots.add(ballot.pk)
        return debate.status in TERMINAL

    def _print_coins(self, console: Console, debate: Debate) -> None:
        """Print the coins the snapshot chose and why any were dropped."""
        console.print(f"Coins: {', '.join(debate.symbols)}")
        for note in (debate.market_snapshot or {}).get("notes", []):
            console.print(f"[dim]  {escape(note)}[/]")

    def _print_message(self, console: Console, participant, message: Message) -> None:
        head = f"{PERSONALITIES[participant.personality].emoji} [bold]{participant.personality}[/]"
        if message.status == "error":
            console.print(f"{head}  [red]failed: {problem(message.error)}[/]")
            return
        positions = "  ".join(
            f"{d['symbol']} {BADGES[d['action']]} {d['confidence']:.0f}" for d in message.decisions
        )
        took = "cached" if message.cached else f"{message.latency_ms} ms"
        console.print(f"{head}  {positions}  [dim]({took})[/]")
        # Model text is printed as it is, never read as markup.
        reasoning = textwrap.shorten(message.reasoning, REASONING_CHARS, placeholder=" …")
        console.print(f"  [dim]{escape(reasoning)}[/]")

    def _print_ballot(self, console: Console, participant, ballot: Ballot) -> None:
        votes = Vote.objects.filter(ballot=ballot).order_by("symbol")
        cells = "  ".join(
            f"{v.symbol} "
            + ("[dim]abstains[/]" if v.abstained else f"{BADGES[v.action]} {v.confidence:.0f}")
            for v in votes
        )
        console.print(
            f"{PERSONALITIES[participant.personality].emoji} {participant.personality}  {cells}"
        )

    def _print_consensus(self, console: Console, debate: Debate) -> None:
        table = Table(title="Consensus")
        table.add_column("coin", no_wrap=True)
        for column in ("action", "conf.", "leverage", "position", "SL", "TP", "scores"):
            table.add_column(column, no_wrap=True)  # figures are never cut
        for d in debate.decisions.order_by("-is_primary", "symbol"):
            # Only an order has a size: hold and wait show none, as on the arena page.
            sizing = ("-",) * 4
            if d.action in EXECUTABLE_ACTIONS:
                sizing = (
                    "-" if d.leverage is None else f"{d.leverage}x",
                    "-" if d.position_pct is None else f"{d.position_pct:.1%}",
                    "-" if d.stop_loss is None else f"{d.stop_loss:.1%}",
                    "-" if d.take_profit is None else f"{d.take_profit:.1%}",
                )
            table.add_row(
                ("★ " if d.is_primary else "") + d.symbol,
                BADGES[d.action],
                f"{d.confidence:.1f}",
                *sizing,
                "\n".join(f"{ACTIONS[k][0]} {v:.2f}" for k, v in d.scores.items()),
            )
        print_whole(console, table)

    def _execute_all(
        self, console: Console, owner, debate: Debate, timeout: float, stop: StopSignals
    ) -> None:
        """Execute the decisions the strategy executes (every executable one, or the
        primary coin's alone: ``executed_decisions``), the primary coin's first, on a fresh
        demo paper account; print each fill and the account after them."""
        executable = executed_decisions(debate)
        if not executable:
            actions = ", ".join(f"{d.symbol} {d.action}" for d in debate.decisions.all())
            console.print(f"Execution: no decision to execute ({actions}).")
            return
        trader = demo_trader(owner)
        console.rule(f"Paper execution on {escape(trader.name)}")
        for decision in executable:
            stop.check()  # no order is sent after Ctrl-C (or SIGTERM, SIGHUP)
            self._execute(console, owner, debate, decision.symbol, trader, timeout, stop)
        trader.refresh_from_db()
        clock = (
            f"paper clock {trader.replay_as_of:%Y-%m-%d %H:%M} UTC, " if trader.replay_as_of else ""
        )
        console.print(f"  {clock}balance {trader.balance.normalize()} USDT")

    def _execute(
        self,
        console: Console,
        owner,
        debate: Debate,
        symbol: str,
        trader: Trader,
        timeout: float,
        stop: StopSignals,
    ) -> None:
        """Execute the decision on ``symbol`` on the paper trader, wait for it, print it."""
        try:
            execution = execution_request(
                owner=owner, debate_id=debate.pk, trader_id=trader.pk, symbol=symbol
            )
        except ApplicationError as exc:
            console.print(f"[yellow]{symbol}: execution refused[/]: {escape(exc.message)}")
            return
        execution = self._settled(execution, timeout, stop)
        if execution.status == "failed":
            console.print(f"[bold red]{symbol}: execution failed[/]: {escape(execution.error)}")
            return
        if execution.status == "skipped":
            console.print(f"{symbol}: {escape(execution.note)}")
            return
        self._print_fill(console, debate, execution)

    def _settled(self, execution: Execution, timeout: float, stop: StopSignals) -> Execution:
        """Return ``execution`` once it has finished (filled, failed or skipped)."""
        deadline = time.monotonic() + timeout
        while execution.status not in FINAL_STATUSES:
            stop.check()
            if time.monotonic() > deadline:
                raise CommandError(f"execution {execution.pk} still {execution.status}")
            time.sleep(POLL_S)
            execution = Execution.objects.get(pk=execution.pk)
        return execution

    def _print_fill(self, console: Console, debate: Debate, execution: Execution) -> None:
        """Print a filled order, its prices at the coin's own precision."""
        side = "BUY" if execution.action in ("open_long", "close_short") else "SELL"
        coins = (debate.market_snapshot or {}).get("coins", [])
        coin = next((c for c in coins if c.get("symbol") == execution.symbol), {})
        decimals = price_decimals(coin)

        def at(value) -> str:  # a price at the coin's own precision
            return f"{value:.{decimals}f}"

        console.print(
            f"{BADGES[execution.action]} order {execution.client_order_id}: {side} "
            f"{execution.filled_quantity.normalize()} {execution.symbol} at "
            f"{at(execution.average_price)} (fee {execution.fee.normalize()} USDT)"
            + (f", {execution.leverage}x" if execution.leverage else "")
        )
        if execution.stop_loss_price is not None:
            console.print(
                f"  stop loss {at(execution.stop_loss_price)}, take profit "
                f"{at(execution.take_profit_price)}"
                + (f"  [yellow]{escape(execution.error)}[/]" if execution.error else "")
            )
