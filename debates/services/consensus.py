"""Turning the stored votes into per-coin decisions and completing the debate."""

from __future__ import annotations

from django.conf import settings
from django.db import transaction
from django.utils.module_loading import import_string

from debates import events
from debates.engine.consensus import Ballot, ConsensusLimits, decide
from debates.engine.plan import CONSENSUS
from debates.engine.types import Action, CoinDecision
from debates.locks import lock_debate
from debates.models import Debate, DebateStatus, Decision, Vote, Weighting
from debates.services import transitions
from debates.services.judge import judge_weights
from debates.state import step_released

# What the consensus reads of a vote besides its voter: the fields of a CoinDecision, in
# their order.
_TRADE = ("symbol", "action", "confidence", "leverage", "position_pct", "stop_loss", "take_profit")
_LIMITS = ("max_leverage_major", "max_leverage_other", "min_confidence")


# What the consensus reads of the voting debate, with its row lock.
_CONSENSUS_COLUMNS = (
    "symbol",
    "symbols",
    "weighting",
    "strategy",
    *(f"strategy__{name}" for name in _LIMITS),
)


def _limits(debate: Debate) -> ConsensusLimits:
    """Return the consensus limits of ``debate``'s strategy (read with ``_CONSENSUS_COLUMNS``)."""
    strategy = debate.strategy
    if strategy is None:
        return ConsensusLimits()
    major, others, min_confidence = (getattr(strategy, name) for name in _LIMITS)
    return ConsensusLimits.by_major(major=major, others=others, min_confidence=min_confidence)


def _ballots(debate_id: int) -> list[Ballot]:
    # In no order: the consensus does not depend on it, and the model's default order
    # joins the participants to sort.
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

    ``judge`` reads the judge's scores of this debate; the weightings that read what
    other apps store are found by name in the ``CONSENSUS_VOTER_WEIGHTS`` setting
    (``calibrated``: the evaluations' reviews), so the debates depend on no app above them.
    """
    if weighting == Weighting.JUDGE:
        return judge_weights(debate_id=debate_id)
    provider = settings.CONSENSUS_VOTER_WEIGHTS.get(weighting)
    return None if provider is None else import_string(provider)(debate_id=debate_id)


def consensus_finalize(*, debate_id: int) -> None:
    """Compute and store every coin's decision, then complete the debate.

    Does nothing unless the debate is voting and released to its consensus;
    abstentions count nowhere. Runs no
    trading: an automatic execution is the plan's next step.
    """
    with transaction.atomic():
        locked = lock_debate(
            debate_id=debate_id, status=DebateStatus.VOTING, also=_CONSENSUS_COLUMNS
        )
        if locked is None or not step_released(locked, (CONSENSUS, None, None)):
            return  # not voting, or held before the consensus (it runs once released)
        weights = voter_weights(debate_id=debate_id, weighting=locked.weighting)
        results = decide(
            _ballots(debate_id), locked.symbols, _limits(locked), voter_weights=weights
        )
        decisions = Decision.objects.bulk_create(
            Decision(
                debate_id=debate_id,
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
                is_primary=result.symbol == locked.symbol,
            )
            for result in results
        )
        # Just made, so not executed: they are announced as they are, not read back.
        with events.together(debate_id):
            events.consensus_reached(debate_id, decisions, made_now=True)
            transitions.complete(debate=locked, decisions=decisions)
