"""Check a trader's connection to its exchange: ``manage.py check_venue --trader ID``."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError, CommandParser

from arena.exceptions import NotFound
from traders.services.checks import CHECKED_MARKET, trader_check


class Command(BaseCommand):
    help = (
        "Check a trader's exchange account with a few cheap real calls (its key, its "
        "position mode, a market's minimum order) and say in one line what is wrong."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--trader", type=int, required=True, metavar="ID", help="trader id")
        parser.add_argument(
            "--symbol", default=CHECKED_MARKET, help="market whose minimums are read"
        )

    def handle(self, *args, **options) -> None:
        try:
            outcome = trader_check(trader_id=options["trader"], symbol=options["symbol"])
        except NotFound as exc:
            raise CommandError(f"trader {options['trader']}: {exc.message}") from exc
        if not outcome.ok:
            raise CommandError(outcome.message)
        self.stdout.write(outcome.message)
