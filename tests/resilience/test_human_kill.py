"""A worker killed with SIGKILL while a debate waits for the person in its human seat
loses and duplicates nothing.

Two points: in round 1, while the models' openings are in flight and the person's
waits; in round 2, while the debate waits for the person's rebuttal and no model call
runs. The person writes their turn while no worker is alive; a new worker then starts.
The debate must complete with one row per turn and ballot, and no model request for a
turn already stored. Step claims outlive their dead worker by 6 s instead of 15.
"""

from __future__ import annotations

from collections import Counter

import pytest

from debates.models import Ballot, Message, Participant
from debates.selectors import debate_state
from debates.services import DebateInput, debate_create, debate_start
from debates.services.human import human_turn_record, human_vote_record
from debates.state import debate_plan
from tests.debates.conftest import wait_for, wait_until_finished, worker_processes
from tests.debates.factories import FakeLLMModelFactory
from tests.debates.turns import turns_asked, turns_asked_again
from tests.strategies.factories import StrategyFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHORT_CLAIMS = {"STEP_CLAIM_TTL_S": "6"}
ANSWER = {
    "reasoning": "The person's view: BTC holds its hourly EMA20.",
    "decisions": [{"symbol": "BTCUSDT", "action": "open_long", "confidence": 70}],
}


def _waits_for(debate_id: int, kind: str, round_number: int | None) -> bool:
    plan = debate_plan(debate_state(debate_id=debate_id))
    return any((s.kind, s.round, s.status) == (kind, round_number, "waiting") for s in plan.steps)


def _debate(user, llm):
    """Create a 2-round debate: model P1, the person P2, model P3."""
    models = FakeLLMModelFactory.create_batch(2, owner=user, llm=llm)
    data = DebateInput(
        name="Kill while waiting",
        strategy=StrategyFactory(owner=user).pk,
        symbol="BTCUSDT",
        max_rounds=2,
        participants=[
            {"ai_model": models[0].pk, "personality": "bull"},
            {"kind": "human", "personality": "analyst"},
            {"ai_model": models[1].pk, "personality": "bear"},
        ],
    )
    return debate_create(owner=user, data=data)


KILL_POINTS = {
    "round 1, the models' openings in flight": (
        lambda d, llm: _waits_for(d, "opening", 1) and llm.stats()["in_flight"] >= 1,
        1,
    ),
    "round 2, the person's rebuttal waiting": (
        lambda d, llm: _waits_for(d, "rebuttal", 2),
        2,
    ),
}


@pytest.mark.parametrize("point", list(KILL_POINTS))
def test_sigkill_while_waiting_for_the_person_loses_and_duplicates_nothing(point, llm, user):
    # given a debate with a human seat on one worker
    reached, round_number = KILL_POINTS[point]
    llm.set_latency(0.3)
    debate = _debate(user, llm)
    with worker_processes(**SHORT_CLAIMS) as workers:
        workers.start("first")
        debate_start(debate_id=debate.pk)
        if round_number == 2:  # the person writes their opening
            wait_for(lambda: _waits_for(debate.pk, "opening", 1), timeout=60)
            human_turn_record(debate_id=debate.pk, owner=user, answer=ANSWER)
        # when the worker dies with SIGKILL while the debate waits for the person
        wait_for(lambda: reached(debate.pk, llm), timeout=60, every=0.01)
        workers.kill("first")
        # and the person writes their turn while no worker is alive
        human_turn_record(debate_id=debate.pk, owner=user, answer=ANSWER)
        # and a new worker starts; the person writes what remains as it comes
        workers.start("second")
        if round_number == 1:
            wait_for(lambda: _waits_for(debate.pk, "rebuttal", 2), timeout=90)
            human_turn_record(debate_id=debate.pk, owner=user, answer=ANSWER)
        wait_for(lambda: _waits_for(debate.pk, "voting", None), timeout=90)
        human_vote_record(debate_id=debate.pk, owner=user, answer={**ANSWER, "reasoning": ""})
        finished = wait_until_finished(debate.pk, timeout=90)

    # then the debate completed with exactly one row per turn and ballot
    assert finished.status == "completed", finished.error
    turns = Counter(Message.objects.filter(debate=debate).values_list("round", "participant"))
    assert len(turns) == 6 and set(turns.values()) == {1}
    assert Message.objects.filter(debate=debate, status="ok").count() == 6
    assert Ballot.objects.filter(debate=debate).count() == 3
    # and no model turn was asked again after it had been stored, nor the person's asked
    person = Participant.objects.get(debate=debate, kind="human").speak_order + 1
    seats_asked = {seat for (_, seat), _ in turns_asked(llm)}
    assert person not in seats_asked, "the person's turn was asked of a model"
    assert turns_asked_again(llm, debate) == []
