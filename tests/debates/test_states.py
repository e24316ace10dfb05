"""Every action from every state either moves the debate as SPEC 5.6 says or changes nothing."""

from __future__ import annotations

import pytest
from django.forms.models import model_to_dict

from arena.exceptions import InvalidState, NotFound
from debates.models import Debate
from debates.services import (
    debate_cancel,
    debate_delete,
    debate_prepare,
    debate_retry,
    debate_start,
)
from debates.state import available_actions
from tests.debates.factories import DebateFactory, DecisionFactory, ParticipantFactory

pytestmark = pytest.mark.django_db

STATES = ("pending", "running", "voting", "completed", "cancelled", "failed")
SERVICES = {
    "start": debate_start,
    "cancel": debate_cancel,
    "retry": debate_retry,
    "delete": debate_delete,
}
# (action, from) -> the status after it; every pair missing here is refused.
MOVES = {
    ("start", "pending"): "running",
    ("cancel", "pending"): "cancelled",
    ("cancel", "running"): "cancelled",
    ("cancel", "voting"): "cancelled",
    ("retry", "failed"): "running",
    ("delete", "pending"): None,
    ("delete", "completed"): None,
    ("delete", "cancelled"): None,
    ("delete", "failed"): None,
}


def debate_in(status: str) -> Debate:
    debate = DebateFactory(status=status, as_of="2024-08-05T12:00Z", symbol="BTCUSDT")
    for order, personality in enumerate(("bull", "bear")):
        ParticipantFactory(debate=debate, personality=personality, speak_order=order)
    if status != "pending":
        Debate.objects.filter(pk=debate.pk).update(current_round=1, phase="opening")
    if status == "failed":
        Debate.objects.filter(pk=debate.pk).update(
            error={"step": "round 1", "code": "round_failed", "message": "x"},
            market_snapshot={"source": "dataset"},
        )
    return Debate.objects.get(pk=debate.pk)


@pytest.mark.parametrize("status", STATES)
@pytest.mark.parametrize("action", SERVICES)
def test_action_from_state(action, status, django_capture_on_commit_callbacks):
    # given a debate in ``status``
    debate = debate_in(status)
    before = model_to_dict(debate)
    expected = MOVES.get((action, status), "refused")
    # when the action is taken (tasks are captured, not sent)
    with django_capture_on_commit_callbacks(execute=False):
        if expected == "refused":
            with pytest.raises(InvalidState) as refusal:
                SERVICES[action](debate_id=debate.pk)
            # then it is refused and nothing changed
            assert refusal.value.code == "invalid_state"
            assert model_to_dict(Debate.objects.get(pk=debate.pk)) == before
            return
        SERVICES[action](debate_id=debate.pk)
    # then it moved as specified
    if expected is None:
        assert not Debate.objects.filter(pk=debate.pk).exists()
    else:
        assert Debate.objects.get(pk=debate.pk).status == expected


@pytest.mark.parametrize(
    ("status", "actions"),
    [
        ("pending", ["start", "cancel", "delete"]),
        ("running", ["cancel"]),
        ("voting", ["cancel"]),
        ("completed", ["delete"]),
        ("cancelled", ["delete"]),
        ("failed", ["retry", "delete"]),
    ],
)
def test_available_actions_follow_the_state(status, actions):
    assert available_actions(debate_in(status)) == actions


def test_execute_is_offered_for_an_executable_unexecuted_decision():
    decision = DecisionFactory(action="open_long")
    assert available_actions(decision.debate) == ["execute", "delete"]
    DecisionFactory(debate=decision.debate, symbol="ETHUSDT", action="wait", is_primary=False)
    assert available_actions(decision.debate) == ["execute", "delete"]


def test_the_prepare_step_stores_the_snapshot_once_with_the_candidate_coins(
    django_capture_on_commit_callbacks,
):
    # given a started debate (the start itself reads no market data)
    debate = debate_in("pending")
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        debate_start(debate_id=debate.pk)
    assert Debate.objects.get(pk=debate.pk).market_snapshot is None
    assert len(callbacks) >= 1
    # when its prepare step runs, twice
    assert debate_prepare(debate_id=debate.pk)
    stored = Debate.objects.get(pk=debate.pk).market_snapshot
    assert debate_prepare(debate_id=debate.pk)
    # then the snapshot was stored once, with the candidate coins, and the step is done
    debate.refresh_from_db()
    assert debate.market_snapshot == stored
    assert debate.symbols == ["BTCUSDT", "ETHUSDT", "SOLUSDT"]
    assert debate.market_snapshot["as_of"] == "2024-08-05T12:00:00Z"
    assert [c["symbol"] for c in debate.market_snapshot["coins"]] == debate.symbols
    assert debate.step_outcomes == {"prepare": {"status": "done"}}


def test_another_users_debate_is_not_found(other_user):
    debate = debate_in("pending")
    for service in SERVICES.values():
        with pytest.raises(NotFound):
            service(debate_id=debate.pk, owner=other_user)
    assert Debate.objects.get(pk=debate.pk).status == "pending"
