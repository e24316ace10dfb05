"""The simulated book a step's votes see, at ``book: aware``.

A backtest at ``book: aware`` replays the trading loop: each step's debate is made
awaiting its book (``debates.services.books``), its rounds run as soon as the run has
room for it, and its votes wait until every earlier step has ended. The book is then
the account the earlier steps' decisions made under the debate rule (the consensus,
executed on the coins the backtest trades), walked to the step's instant: every fill,
stop, target, funding payment and guard trip since, from prices known by then alone
(``Tape.known_at``). The report's debate rule runs the same decisions through the same
account, so what each vote saw is what the report scores.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from backtests.engine.books import portfolio_book
from backtests.engine.rules import replay, rule_plan
from backtests.models import Backtest
from backtests.services.reports import account_of, step_records, step_tapes
from strategies.market.sources import to_ms


def step_book(backtest: Backtest, *, index: int, as_of: datetime) -> dict[str, Any]:
    """Return the book the debate of step ``index`` (at ``as_of``) sees: the debate rule's
    account after the steps before it, at ``as_of``, as a dict."""
    at_ms = to_ms(as_of)
    steps = step_records(backtest, before=index, votes=False)
    tapes = {symbol: tape.known_at(at_ms) for symbol, tape in step_tapes(backtest, steps).items()}
    portfolio = replay(
        rule_plan(steps, lambda step: step.decisions, backtest.coins),
        tapes=tapes,
        account=account_of(backtest),
        until_ms=at_ms,
    )
    return portfolio_book(portfolio, at_ms).to_dict()
