"""The database itself enforces the debate rules, whatever code writes the rows."""

import pytest
from django.db import IntegrityError, transaction

from debates.models import Ballot, Debate, Decision, Message, Participant, Vote
from tests.debates.factories import (
    BallotFactory,
    DebateFactory,
    DecisionFactory,
    MessageFactory,
    ParticipantFactory,
    VoteFactory,
)
from tests.traders.factories import ExecutionFactory, TraderFactory

pytestmark = pytest.mark.django_db


def refused(make) -> bool:
    """Return True when the database refuses the write ``make`` performs."""
    try:
        with transaction.atomic():
            make()
    except IntegrityError:
        return True
    return False


def test_one_message_per_round_and_participant():
    message = MessageFactory()
    assert refused(lambda: MessageFactory(participant=message.participant, round=1))
    assert Message.objects.count() == 1
    MessageFactory(participant=message.participant, round=2, message_type="rebuttal")
    assert Message.objects.count() == 2


def test_one_vote_per_voter_and_coin():
    vote = VoteFactory()
    assert refused(lambda: VoteFactory(ballot=vote.ballot, symbol="BTCUSDT"))
    VoteFactory(ballot=vote.ballot, symbol="ETHUSDT")
    assert Vote.objects.count() == 2


def test_one_ballot_per_voter():
    ballot = BallotFactory()
    assert refused(lambda: BallotFactory(participant=ballot.participant))


def test_one_decision_per_coin_and_one_primary():
    decision = DecisionFactory()
    assert refused(lambda: DecisionFactory(debate=decision.debate, is_primary=False))
    assert refused(lambda: DecisionFactory(debate=decision.debate, symbol="ETHUSDT"))
    DecisionFactory(debate=decision.debate, symbol="ETHUSDT", is_primary=False)
    assert Decision.objects.filter(debate=decision.debate).count() == 2


def test_one_execution_per_decision():
    execution = ExecutionFactory()
    trader = TraderFactory(owner=execution.decision.debate.owner)
    assert refused(lambda: ExecutionFactory(decision=execution.decision, trader=trader))


def test_an_abstention_is_the_only_vote_without_action():
    assert refused(lambda: VoteFactory(action="", abstained=False))
    VoteFactory(action="", abstained=True, confidence=None, leverage=None, position_pct=None)


@pytest.mark.parametrize(
    ("factory", "values"),
    [
        (DebateFactory, {"max_rounds": 1}),
        (DebateFactory, {"max_rounds": 6}),
        (DebateFactory, {"interval_minutes": 0}),
        (VoteFactory, {"confidence": 101}),
        (VoteFactory, {"confidence": -1}),
        (VoteFactory, {"leverage": 0}),
        (VoteFactory, {"position_pct": 1.5}),
        (DecisionFactory, {"confidence": 100.5}),
        (DecisionFactory, {"leverage": 21}),
        (DecisionFactory, {"position_pct": -0.1}),
        (MessageFactory, {"round": 0}),
        (MessageFactory, {"round": 6}),
    ],
)
def test_out_of_range_values_are_refused(factory, values):
    assert refused(lambda: factory(**values))


def test_deleting_a_debate_removes_its_children():
    # given a debate with a participant, a message, a vote and a decision
    participant = ParticipantFactory()
    debate = participant.debate
    MessageFactory(participant=participant)
    VoteFactory(ballot=BallotFactory(participant=participant))
    DecisionFactory(debate=debate)
    # when it is deleted
    debate.delete()
    # then nothing of it remains
    assert Debate.objects.count() == 0
    for model in (Participant, Message, Ballot, Vote, Decision):
        assert model.objects.count() == 0, model
