"""Selective debate: L0 for a quiet schedule firing or backtest step, and at the close of
a round the gate after the openings, the light level's ballots, and the early stop once the
positions settle (``debates.engine.gate``).

``round_close`` runs under the debate's row lock when a round that is not the last
closes, and says whether the votes begin now; what it decided is stored with the
debate's state, and the turns it skips are recorded as skipped steps of the plan.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from django.db.models import F

from debates import events
from debates.engine.gate import L1, Opening, gate, settled
from debates.engine.plan import REBUTTAL
from debates.engine.types import CoinDecision
from debates.models import (
    Ballot,
    Debate,
    DebateLevel,
    DebateStatus,
    Message,
    ParseStatus,
    Participant,
    SeatKind,
    StepStatus,
    Vote,
)
from debates.selectors import spend_of
from debates.state import outcome_name


@dataclass(frozen=True)
class RoundClose:
    """What closing a round decided: whether the votes begin now, and what to store."""

    votes_now: bool
    fields: dict[str, Any] = field(default_factory=dict)


def round_close(
    *,
    debate_id: int,
    round_number: int,
    seats: Sequence[Participant],
    answered: Mapping[tuple[int, int], list[dict]],
) -> RoundClose:
    """Decide, under the debate's lock, whether its votes begin after ``round_number``.

    ``seats`` and ``answered`` (the decisions of every answered turn by round and
    participant id) are the debate's, as the step closing the round holds them.
    """
    debate = (
        Debate.objects.select_related("strategy", "trader", "schedule__last_debate")
        .annotate(owner_daily_token_budget=F("owner__token_budget__daily_token_budget"))
        .only(
            "max_rounds",
            "book",
            "level",
            "level_used",
            "forced",
            "symbol",
            "symbols",
            "auto_execute",
            "owner_id",
            "step_outcomes",
            "strategy__early_stop",
            "strategy__gate_min_confidence",
            "trader__exchange",
            "schedule__daily_token_budget",
            "schedule__last_debate__status",
        )
        .get(pk=debate_id)
    )
    if round_number == 1:
        chosen = _gate(debate, _of_round(answered, 1), seats)
        fields = {
            "level_used": chosen.level,
            "level_reasons": list(chosen.reasons),
            "forced": chosen.forced,
        }
        if chosen.level == L1:
            _openings_as_ballots(debate_id)
            fields["step_outcomes"] = _skipped_after(debate, 1, seats)
            return RoundClose(votes_now=True, fields=fields)
        return RoundClose(votes_now=False, fields=fields)
    early_stop = debate.strategy.early_stop if debate.strategy is not None else True
    before, now = (_actions(_of_round(answered, r)) for r in (round_number - 1, round_number))
    if early_stop and settled(before, now):
        return RoundClose(
            votes_now=True,
            fields={
                "stopped_early": {
                    "after_round": round_number,
                    "reason": f"no participant changed any per-coin action from round "
                    f"{round_number - 1} to round {round_number}",
                },
                "step_outcomes": _skipped_after(debate, round_number, seats),
            },
        )
    return RoundClose(votes_now=False)


def _of_round(
    answered: Mapping[tuple[int, int], list[dict]], round_number: int
) -> dict[int, list[dict]]:
    """Return the decisions of the answered turns of ``round_number``: seat -> decisions."""
    return {seat: decisions for (r, seat), decisions in answered.items() if r == round_number}


def _actions(answers: dict[int, list[dict]]) -> dict[int, dict[str, str]]:
    """Return the per-coin actions of a round's answered turns: seat -> coin -> action."""
    return {
        seat: {d["symbol"]: d["action"] for d in decisions} for seat, decisions in answers.items()
    }


def _gate(debate: Debate, openings: dict[int, list[dict]], seats: Sequence[Participant]):
    """Choose the debate's level from its openings (``debates.engine.gate``)."""
    primary = debate.symbol or (debate.symbols[0] if debate.symbols else "")
    strategy, trader = debate.strategy, debate.trader
    return gate(
        requested=debate.level,
        openings=_on_primary(openings, primary, seats),
        primary=primary,
        high_impact=debate.auto_execute and trader is not None and trader.exchange != "paper",
        failure=_schedule_failure(debate),
        human=any(seat.kind != SeatKind.MODEL for seat in seats),
        min_confidence=strategy.gate_min_confidence if strategy is not None else 60.0,
        over_budget=_over_budget(debate),
        held=_held(debate),
    )


def _held(debate: Debate) -> list[str]:
    """Return the candidate coins the debate's trader holds a position on, by its book."""
    positions = (debate.book or {}).get("positions", ())
    return sorted({p["symbol"] for p in positions if p["symbol"] in debate.symbols})


def _on_primary(
    openings: dict[int, list[dict]], primary: str, seats: Sequence[Participant]
) -> list[Opening]:
    """Return each model seat's opening on the primary coin: its action and confidence
    (None for a seat that took no position on it)."""
    rows = []
    for seat in seats:
        if seat.kind == SeatKind.MODEL:
            on = {d["symbol"]: d for d in openings.get(seat.pk, [])}.get(primary, {})
            rows.append(Opening(on.get("action"), on.get("confidence")))
    return rows


def _schedule_failure(debate: Debate) -> str:
    """Say whether the previous debate of the debate's schedule failed ("" otherwise)."""
    last = debate.schedule.last_debate if debate.schedule is not None else None
    if last is not None and last.pk != debate.pk and last.status == DebateStatus.FAILED:
        return "the schedule's previous debate failed"
    return ""


def _over_budget(debate: Debate) -> str:
    """Return which daily token budget the debate's owner or schedule has passed, if any."""
    today = datetime.now(UTC).date()
    budget = debate.owner_daily_token_budget  # read with the debate (``round_close``)
    if budget is not None:
        used = spend_of(since=today, owner_id=debate.owner_id).tokens
        if used >= budget:
            return f"the user's daily token budget is passed ({used:,} of {budget:,})"
    schedule = debate.schedule
    if schedule is not None and schedule.daily_token_budget is not None:
        used = spend_of(since=today, schedule_id=schedule.pk).tokens
        if used >= schedule.daily_token_budget:
            return (
                f"the schedule's daily token budget is passed "
                f"({used:,} of {schedule.daily_token_budget:,})"
            )
    return ""


def _skipped_after(
    debate: Debate, round_number: int, seats: Sequence[Participant]
) -> dict[str, Any]:
    """Return the step outcomes with every turn after ``round_number`` recorded skipped."""
    outcomes = dict(debate.step_outcomes or {})
    for later in range(round_number + 1, debate.max_rounds + 1):
        for seat in seats:
            outcomes[outcome_name((REBUTTAL, later, seat.pk))] = {"status": "skipped"}
    return outcomes


def _openings_as_ballots(debate_id: int) -> None:
    """Store each seat's opening as its ballot (the light level asks for no vote)."""
    symbols = Debate.objects.values_list("symbols", flat=True).get(pk=debate_id)
    from debates.services.steps import vote_row

    for message in Message.objects.filter(debate_id=debate_id, round=1):
        decisions = (
            {d["symbol"]: CoinDecision.from_dict(d) for d in message.decisions}
            if message.status == StepStatus.OK
            else {}
        )
        ballot = Ballot.objects.create(
            debate_id=debate_id,
            participant_id=message.participant_id,
            status=message.status,
            content="(the opening, as the light level's ballot)",
            parse_status=message.parse_status if decisions else ParseStatus.NONE,
        )
        votes = Vote.objects.bulk_create(
            vote_row(
                ballot, symbol, decisions.get(symbol), "no position on this coin in the opening"
            )
            for symbol in symbols
        )
        for vote in votes:
            events.vote_stored(vote)


def quiet_market(*, schedule: Any) -> str | None:
    """Return why a schedule's firing needs no debate (L0), or None when it does.

    L0 when the primary coin moved less than the strategy's ``quiet_atr_fraction`` of
    its 1h ATR14 since the schedule's last debate saw it, and no position can change: a
    schedule that executes its decisions automatically is always debated. Only at
    ``level: auto``, as for a backtest's steps: a schedule set to L1 or L2 asks for that
    debate at every firing.
    """
    from strategies.market.snapshot import MarketSnapshot

    if schedule.level != DebateLevel.AUTO or schedule.auto_execute:
        return None
    last, strategy = schedule.last_debate, schedule.strategy
    if strategy is None or last is None or not last.market_snapshot:
        return None
    seen = MarketSnapshot.from_dict(last.market_snapshot)
    primary = schedule.symbol or (seen.symbols[0] if seen.symbols else "")
    before = seen.coin(primary) if primary else None
    if before is None:
        return None
    return quiet_move(
        strategy=strategy, primary=primary, before=before.price, as_of=schedule.replay_as_of
    )


def quiet_move(*, strategy: Any, primary: str, before: float, as_of: Any) -> str | None:
    """Return why a debate at ``as_of`` is not needed (L0), or None when it is: the rule
    of L0 for a schedule's firing and a backtest's step alike.

    Quiet when ``primary``'s price at ``as_of`` (now when None: what a debate then
    sees) is less than the strategy's ``quiet_atr_fraction`` of its 1h ATR14 at
    ``as_of`` away from ``before``, its price at the last debate. Never quiet without
    an ATR, nor when the data cannot be had (the debate's own start reports why).
    """
    move = market_move(strategy=strategy, primary=primary, as_of=as_of)
    return None if move is None else quiet_reason(strategy, primary, before, *move)


def market_move(*, strategy: Any, primary: str, as_of: Any) -> tuple[float, float | None] | None:
    """Return ``primary``'s price and 1h ATR14 at ``as_of`` (``primary_move``), or None
    when the data cannot be had."""
    from strategies.market.exceptions import MarketDataError
    from strategies.snapshots import primary_move

    try:
        return primary_move(strategy, primary, as_of)
    except (MarketDataError, ValueError):
        return None


def quiet_reason(
    strategy: Any, primary: str, before: float, price: float, atr: float | None
) -> str | None:
    """Return the L0 reason when ``price`` lies less than the strategy's
    ``quiet_atr_fraction`` of ``atr`` away from ``before`` (see ``quiet_move``), else None."""
    fraction = strategy.quiet_atr_fraction
    move = abs(price - before)
    if atr is None or move >= fraction * atr:
        return None
    return (
        f"L0: {primary} moved {move:,.2f} since the last debate, less than {fraction:g} of "
        f"its 1h ATR14 {atr:,.2f}"
    )
