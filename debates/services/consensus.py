"""Turning the stored votes into per-coin decisions and completing the debate."""

from __future__ import annotations

from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone
from django.utils.module_loading import import_string

from debates import events
from debates.engine.consensus import Ballot, ConsensusLimits, decide
from debates.engine.types import Action, CoinDecision
from debates.models import Debate, DebatePhase, DebateStatus, Decision, Vote

# What the consensus reads of a voting debate under its row lock: the coins, the state,
# the strategy's limits; written out in SQL, as the steps' reads are. With the ORM's
# reads, and the decisions read back with their executions, a consensus took 17.3 ms;
# with these, 11.8 ms (medians of 20 each, taken in turn, after a 3-voter debate).
_LOCK_SQL = """
SELECT debate.symbol, debate.symbols, debate.auto_execute, debate.current_round, debate.error,
       debate.weighting, strategy.id, strategy.max_leverage_major, strategy.max_leverage_other,
       strategy.min_confidence
FROM debates_debate AS debate
LEFT JOIN strategies_strategy AS strategy ON strategy.id = debate.strategy_id
WHERE debate.id = %s AND debate.status = %s
"""
_SYMBOLS = Debate._meta.get_field("symbols")  # JSON columns
_ERROR = Debate._meta.get_field("error")
_EXECUTION = Decision.execution.related  # the reverse one-to-one, and its cache
# What the consensus reads of a vote besides its voter: the fields of a CoinDecision, in
# their order.
_TRADE = ("symbol", "action", "confidence", "leverage", "position_pct", "stop_loss", "take_profit")


def _lock_voting(debate_id: int) -> tuple[Debate, ConsensusLimits] | None:
    """Lock a voting debate's row for the transaction; return what the consensus reads
    of it and its strategy's limits, or None when it is not voting (cancelled, say).

    SQLite has no row locks: its transactions let one writer in at a time anyway.
    """
    lock = " FOR UPDATE OF debate" if connection.features.has_select_for_update_of else ""
    with connection.cursor() as cursor:
        cursor.execute(_LOCK_SQL + lock, [debate_id, DebateStatus.VOTING])
        row = cursor.fetchone()
    if row is None:
        return None
    symbol, symbols, auto_execute, current_round, error, weighting, strategy, *caps = row
    debate = Debate(
        pk=debate_id,
        status=DebateStatus.VOTING,
        symbol=symbol,
        symbols=_SYMBOLS.from_db_value(symbols, None, connection),
        auto_execute=bool(auto_execute),
        current_round=current_round,
        error=_ERROR.from_db_value(error, None, connection),
        weighting=weighting,
    )
    if strategy is None:
        return debate, ConsensusLimits()
    major, others, min_confidence = caps
    limits = ConsensusLimits.by_major(major=major, others=others, min_confidence=min_confidence)
    return debate, limits


def _ballots(debate_id: int) -> list[Ballot]:
    # In no order: the consensus does not depend on it, and the model's default order
    # joins the debates and the participants (reading 9 votes: 2.66 ms, against 1.02).
    votes = (
        Vote.objects.filter(debate_id=debate_id, abstained=False)
        .order_by()
        .values_list("participant_id", *_TRADE)
    )
    return [
        Ballot(voter=str(voter), decision=CoinDecision(symbol, Action(action), *numbers))
        for voter, symbol, action, *numbers in votes
    ]


def voter_weights(*, debate_id: int, weighting: str) -> dict[str, float] | None:
    """Return each voter's (participant id's) weight multiplier under ``weighting``, or
    None to weigh by confidence alone.

    The weightings that read more than the ballots are found by name in the
    ``CONSENSUS_VOTER_WEIGHTS`` setting (``calibrated``: the evaluations' reviews), so
    the debates depend on no app above them.
    """
    provider = settings.CONSENSUS_VOTER_WEIGHTS.get(weighting)
    return None if provider is None else import_string(provider)(debate_id=debate_id)


def consensus_finalize(*, debate_id: int) -> None:
    """Compute and store every coin's decision, then complete the debate.

    Does nothing unless the debate is voting; abstentions count nowhere.
    """
    from debates.services.runs import after_consensus

    with transaction.atomic():
        locked = _lock_voting(debate_id)
        if locked is None:
            return
        debate, limits = locked
        results = decide(
            _ballots(debate_id),
            debate.symbols,
            limits,
            voter_weights=voter_weights(debate_id=debate_id, weighting=debate.weighting),
        )
        decisions = Decision.objects.bulk_create(
            Decision(
                debate=debate,
                symbol=result.symbol,
                action=result.action.value,
                confidence=result.confidence,
                leverage=result.leverage,
                position_pct=result.position_pct,
                stop_loss=result.stop_loss,
                take_profit=result.take_profit,
                scores=dict(result.scores),
                clamps=[clamp.to_dict() for clamp in result.clamps],
                defaults=list(result.defaults),
                reason=result.reason[:300],
                supporters=result.supporters,
                voters=result.voters,
                is_primary=result.symbol == debate.symbol,
            )
            for result in results
        )
        now = timezone.now()
        done = {
            "status": DebateStatus.COMPLETED,
            "phase": DebatePhase.DONE,
            "current_speaker": None,
            "finished_at": now,
            "progressed_at": now,
        }
        Debate.objects.filter(pk=debate_id).update(**done)
        for name, value in done.items():
            setattr(debate, name, value)
        # Just made, so none has an execution yet: the event's representations and the
        # state's available actions are told so instead of reading it back.
        for decision in decisions:
            _EXECUTION.set_cached_value(decision, None)
        debate._prefetched_objects_cache = {"decisions": decisions}
        with events.together(debate_id):
            events.consensus_reached(debate_id, decisions)
            events.status_changed(debate)
        if debate.auto_execute:
            after_consensus(debate_id=debate_id)
