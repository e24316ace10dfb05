"""Check a connection: ``manage.py check_venue --model ID`` or ``--trader ID``."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from arena.exceptions import NotFound
from debates.services.checks import ai_model_check
from traders.services.checks import CHECKED_MARKET, trader_check


class Command(BaseCommand):
    help = (
        "Check an AI model (one vote-shaped call of a few tokens, with the parameters a "
        "debate sends) or a trader's exchange account (its key, position mode and a "
        "market's minimum order) and say in one line what is wrong."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--model", type=int, metavar="ID", help="AI model id")
        which.add_argument("--trader", type=int, metavar="ID", help="trader id")
        parser.add_argument(
            "--symbol",
            default=CHECKED_MARKET,
            help="market whose minimums a trader's check reads (default: %(default)s)",
        )

    def handle(self, *args, **options) -> None:
        try:
            if options["model"] is not None:
                outcome = ai_model_check(ai_model_id=options["model"])
            else:
                outcome = trader_check(trader_id=options["trader"], symbol=options["symbol"])
        except NotFound as exc:
            raise CommandError(exc.message) from exc
        if not outcome.ok:
            raise CommandError(outcome.message)
        self.stdout.write(outcome.message)
