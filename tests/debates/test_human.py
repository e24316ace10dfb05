"""Recording the person's turn and vote: checked, stored once, skipped once."""

from datetime import UTC, datetime, timedelta

import pytest
from django.utils import timezone

from arena.exceptions import InvalidState, NotFound, ValidationError
from debates.models import Ballot, Debate, Message, Vote
from debates.selectors import debate_state
from debates.services import debates_resume_stale, runs
from debates.services.human import (
    human_step_skip,
    human_steps_expire,
    human_turn_record,
    human_vote_record,
)
from debates.services.runs import run_plan
from tests.debates.factories import DebateFactory, MessageFactory, ParticipantFactory
from tests.threads import results_at_once

pytestmark = pytest.mark.django_db

SYMBOLS = ["BTCUSDT", "ETHUSDT"]
TURN = {
    "reasoning": "BTC holds above its hourly EMA20 while funding stays flat.",
    "decisions": [
        {"symbol": "BTCUSDT", "action": "open_long", "confidence": 70},
        {"symbol": "ETHUSDT", "action": "wait", "confidence": 35},
    ],
}


def _debate(*, human_first=True, said=(), **state):
    """Return a running 2-round debate past its prepare step, with a human seat and a
    model seat (the human speaking first unless not ``human_first``), and the turns
    ``said`` stored as (round, "human" or "model")."""
    fields = {
        "status": "running",
        "phase": "opening",
        "current_round": 1,
        "step_outcomes": {"prepare": {"status": "done"}},
        **state,
    }
    debate = DebateFactory(symbols=SYMBOLS, max_rounds=2, **fields)
    human = ParticipantFactory(
        debate=debate,
        kind="human",
        ai_model=None,
        personality="bull",
        speak_order=0 if human_first else 1,
    )
    model = ParticipantFactory(debate=debate, personality="bear", speak_order=int(human_first))
    seats = {"human": human, "model": model}
    for round_number, who in said:
        MessageFactory(debate=debate, participant=seats[who], round=round_number)
    return debate, human, model


ROUND_1 = ((1, "human"), (1, "model"))
ALL_TURNS = (*ROUND_1, (2, "human"), (2, "model"))


def test_a_turn_is_stored_as_a_model_turn_would_be():
    # given a running debate in round 1
    debate, human, _ = _debate()
    # when the person writes their opening
    recorded = human_turn_record(debate_id=debate.pk, owner=debate.owner, answer=TURN)
    # then it is stored once, parsed, in the shape of a model's turn
    message = Message.objects.get()
    assert recorded.created is True
    assert recorded.message.pk == message.pk
    assert (message.participant_id, message.round, message.message_type) == (
        human.pk,
        1,
        "analysis",
    )
    assert (message.status, message.parse_status, message.dropped) == ("ok", "ok", [])
    assert message.reasoning == TURN["reasoning"]
    assert [(d["symbol"], d["action"], d["confidence"]) for d in message.decisions] == [
        ("BTCUSDT", "open_long", 70.0),
        ("ETHUSDT", "wait", 35.0),
    ]
    assert (message.prompt_tokens, message.completion_tokens, message.cached) == (0, 0, False)


def test_the_same_turn_sent_again_returns_the_stored_one():
    # given a stored turn
    debate, _, _ = _debate()
    first = human_turn_record(debate_id=debate.pk, owner=debate.owner, answer=TURN)
    # when the same answer is sent again (a retried request)
    again = human_turn_record(debate_id=debate.pk, owner=debate.owner, answer=TURN)
    # then nothing more is stored
    assert (again.created, again.message.pk) == (False, first.message.pk)
    assert Message.objects.count() == 1


def test_a_different_turn_for_a_stored_round_is_refused():
    # given a stored turn
    debate, _, _ = _debate()
    human_turn_record(debate_id=debate.pk, owner=debate.owner, answer=TURN)
    # when another answer comes for the same round
    changed = {**TURN, "reasoning": "Changed my mind."}
    with pytest.raises(InvalidState) as refused:
        human_turn_record(debate_id=debate.pk, owner=debate.owner, answer=changed)
    # then it is refused and the first turn stays
    assert refused.value.message == (
        "The debate is not waiting for your turn: it is running, round 1."
    )
    assert Message.objects.get().reasoning == TURN["reasoning"]


@pytest.mark.parametrize(
    ("answer", "field"),
    [
        ({**TURN, "decisions": [{"symbol": "BTCUSDT", "action": "moon", "confidence": 5}]},
         "decisions[0].action"),
        ({**TURN, "decisions": [{"symbol": "DOGEUSDT", "action": "wait", "confidence": 5}]},
         "decisions[0].symbol"),
        ({**TURN, "decisions": [{"symbol": "BTCUSDT", "action": "wait", "confidence": 500}]},
         "decisions[0].confidence"),
        ({"decisions": TURN["decisions"]}, "reasoning"),
    ],
)  # fmt: skip
def test_a_bad_turn_is_refused_naming_the_field_and_stores_nothing(answer, field):
    # given a running debate in round 1
    debate, _, _ = _debate()
    # when
    with pytest.raises(ValidationError) as refused:
        human_turn_record(debate_id=debate.pk, owner=debate.owner, answer=answer)
    # then
    assert list(refused.value.fields) == [field]
    assert Message.objects.count() == 0


def test_a_turn_is_refused_when_another_seat_speaks():
    # given round 2, where the model seat speaks first
    debate, _, model = _debate(human_first=False, said=ROUND_1, current_round=2, phase="rebuttal")
    debate.current_speaker = model
    debate.save()
    # when
    with pytest.raises(InvalidState) as refused:
        human_turn_record(debate_id=debate.pk, owner=debate.owner, answer=TURN)
    # then
    assert refused.value.fields == {"status": ["running"]}
    assert Message.objects.count() == 2


def test_a_turn_in_round_two_is_a_rebuttal_when_the_seat_speaks():
    # given round 2, the person's turn
    debate, human, _ = _debate(said=ROUND_1, current_round=2, phase="rebuttal")
    debate.current_speaker = human
    debate.save()
    # when
    message = human_turn_record(debate_id=debate.pk, owner=debate.owner, answer=TURN).message
    # then
    assert (message.round, message.message_type) == (2, "rebuttal")


def test_another_users_debate_is_not_found_and_a_debate_without_a_human_seat_refuses():
    # given
    debate, _, _ = _debate()
    models_only = DebateFactory(owner=debate.owner, status="running", current_round=1)
    ParticipantFactory(debate=models_only, speak_order=0)
    stranger = DebateFactory().owner
    # then
    with pytest.raises(NotFound):
        human_turn_record(debate_id=debate.pk, owner=stranger, answer=TURN)
    with pytest.raises(InvalidState):
        human_turn_record(debate_id=models_only.pk, owner=debate.owner, answer=TURN)
    assert Message.objects.count() == 0


@pytest.mark.django_db(transaction=True)
def test_a_skipped_turn_is_recorded_once_whatever_the_callers():
    # given a turn the person owes
    debate, human, _ = _debate()

    # when eight callers skip it at once
    results = results_at_once(lambda: human_step_skip(debate_id=debate.pk), 8)
    # then each caller returned, one of them with the skipped turn, stored once
    assert len(results) == 8
    assert len([r for r in results if r is not None]) == 1
    message = Message.objects.get()
    assert (message.participant_id, message.status, message.decisions) == (human.pk, "skipped", [])
    assert message.error == {
        "code": "skipped",
        "message": "The person did not write this turn.",
    }
    with pytest.raises(InvalidState):
        human_turn_record(debate_id=debate.pk, owner=debate.owner, answer=TURN)


def test_a_stored_or_no_longer_due_turn_is_not_skipped():
    # given a stored turn, and a debate that was cancelled before the person wrote
    debate, _, _ = _debate()
    human_turn_record(debate_id=debate.pk, owner=debate.owner, answer=TURN)
    cancelled, _, _ = _debate(status="cancelled")
    # then
    assert human_step_skip(debate_id=debate.pk) is None
    assert human_step_skip(debate_id=cancelled.pk) is None
    with pytest.raises(InvalidState):
        human_step_skip(debate_id=debate.pk, owner=debate.owner)
    assert list(Message.objects.values_list("status", flat=True)) == ["ok"]


VOTE = {
    "reasoning": "",
    "decisions": [
        {"symbol": "ETHUSDT", "action": "open_short", "confidence": 60, "leverage": 2},
    ],
}


def test_a_vote_stores_a_ballot_and_a_vote_per_coin():
    # given a voting debate
    debate, human, _ = _debate(said=ALL_TURNS, status="voting", phase="voting", current_round=2)
    # when the person votes on one coin of two
    recorded = human_vote_record(debate_id=debate.pk, owner=debate.owner, answer=VOTE)
    # then the other coin is an abstention
    assert recorded.created is True
    ballot = Ballot.objects.get()
    assert (ballot.participant_id, ballot.status, ballot.parse_status) == (human.pk, "ok", "ok")
    votes = {v.symbol: v for v in Vote.objects.all()}
    assert (votes["ETHUSDT"].action, votes["ETHUSDT"].confidence, votes["ETHUSDT"].leverage) == (
        "open_short",
        60.0,
        2,
    )
    assert (votes["BTCUSDT"].abstained, votes["BTCUSDT"].abstain_reason) == (
        True,
        "the person's vote left this coin out",
    )
    # and the same vote again stores nothing more
    again = human_vote_record(debate_id=debate.pk, owner=debate.owner, answer=VOTE)
    assert (again.created, Ballot.objects.count(), Vote.objects.count()) == (False, 1, 2)


def test_a_vote_is_refused_before_the_voting_and_when_bad():
    # given a debate still in its rounds, and a voting one
    running, _, _ = _debate()
    voting, _, _ = _debate(said=ALL_TURNS, status="voting", phase="voting", current_round=2)
    bad = {"reasoning": "", "decisions": [{"symbol": "BTCUSDT", "action": "hodl", "confidence": 9}]}
    # then
    with pytest.raises(InvalidState):
        human_vote_record(debate_id=running.pk, owner=running.owner, answer=VOTE)
    with pytest.raises(ValidationError) as refused:
        human_vote_record(debate_id=voting.pk, owner=voting.owner, answer=bad)
    assert list(refused.value.fields) == ["decisions[0].action"]
    assert (Ballot.objects.count(), Vote.objects.count()) == (0, 0)


@pytest.mark.django_db(transaction=True)
def test_a_skipped_vote_abstains_on_every_coin_once():
    # given a voting debate
    debate, _, _ = _debate(said=ALL_TURNS, status="voting", phase="voting", current_round=2)

    # when several callers skip the vote at once
    results = results_at_once(lambda: human_step_skip(debate_id=debate.pk), 6)
    # then each caller returned, one of them with the skipped ballot, stored once
    assert len(results) == 6
    assert len([r for r in results if r is not None]) == 1
    ballot = Ballot.objects.get()
    assert ballot.status == "skipped"
    assert sorted(Vote.objects.values_list("symbol", "abstained", "abstain_reason")) == [
        ("BTCUSDT", True, "the person did not vote"),
        ("ETHUSDT", True, "the person did not vote"),
    ]
    with pytest.raises(InvalidState):
        human_vote_record(debate_id=debate.pk, owner=debate.owner, answer=VOTE)


# --- the time a person has ----------------------------------------------------------------

NOW = datetime(2026, 1, 5, 12, 0, tzinfo=UTC)


@pytest.mark.django_db(transaction=True)
def test_a_turn_past_its_time_is_skipped_once_whatever_the_beat_processes():
    # given a turn the person owed until a minute ago, and another not due yet
    debate, human, _ = _debate(human_due_at=NOW - timedelta(minutes=1))
    later, _, _ = _debate(human_due_at=NOW + timedelta(minutes=1))
    # when six beat processes look at once
    results = results_at_once(lambda: human_steps_expire(now=NOW), 6)
    # then one of them skipped the turn, once, and the other debate still waits
    assert sorted(results, key=len) == [[]] * 5 + [[debate.pk]]
    assert list(Message.objects.values_list("participant", "status")) == [(human.pk, "skipped")]
    debate.refresh_from_db()
    later.refresh_from_db()
    assert (debate.human_due_at, later.human_due_at) == (None, NOW + timedelta(minutes=1))


def test_a_vote_past_its_time_is_skipped_as_an_abstention_on_every_coin():
    # given a voting debate whose person's time ran out
    debate, human, _ = _debate(
        said=ALL_TURNS, status="voting", phase="voting", current_round=2, human_due_at=NOW
    )
    # when
    skipped = human_steps_expire(now=NOW)
    # then
    assert skipped == [debate.pk]
    assert Ballot.objects.get().status == "skipped"
    assert set(Vote.objects.values_list("participant", "abstained")) == {(human.pk, True)}


def test_a_debate_that_stopped_is_not_skipped_into():
    # given a cancelled debate that had a deadline
    _debate(status="cancelled", human_due_at=NOW - timedelta(hours=1))
    # then
    assert human_steps_expire(now=NOW) == []
    assert Message.objects.count() == 0


def test_the_admin_shows_that_a_debate_waits_for_the_person(client, staff_user):
    # given a debate waiting for the person's turn of round 2, and one waiting for none
    waiting, human, _ = _debate(said=ROUND_1, current_round=2, phase="rebuttal", human_due_at=NOW)
    waiting.current_speaker = human
    waiting.name = "Waiting debate"
    waiting.save()
    DebateFactory(name="Busy debate", status="running", current_round=1)
    client.force_login(staff_user)
    # when the list is filtered to the debates that wait for a person, and the page opened
    listing = client.get("/admin/debates/debate/?waits_for_person=yes").content.decode()
    page = client.get(f"/admin/debates/debate/{waiting.pk}/change/").content.decode()
    # then
    assert "Waiting debate" in listing
    assert "Busy debate" not in listing
    expected = "the person&#x27;s turn, round 2, until 2026-01-05 12:00 UTC"
    assert expected in listing
    assert expected in page


def test_the_watchdog_leaves_alone_a_debate_that_waits_only_for_the_person(monkeypatch):
    # given two debates quiet for an hour in round 2: one waits for the person's rebuttal,
    # the other for a model's
    _debate(said=ROUND_1, current_round=2, phase="rebuttal")
    stalled, _, _ = _debate(human_first=False, said=ROUND_1, current_round=2, phase="rebuttal")
    Debate.objects.update(progressed_at=timezone.now() - timedelta(hours=1))
    sent = []
    monkeypatch.setattr(runs, "send_on_commit", sent.append)
    # when the watchdog looks
    resumed = debates_resume_stale()
    # then only the model's step is sent again
    assert resumed == [stalled.pk]
    assert len(sent) == 1


def test_a_run_sends_no_task_for_a_persons_step_not_waiting_yet():
    # given round 2 of a debate whose model speaks before the person
    debate, _, model = _debate(human_first=False, said=ROUND_1, current_round=2, phase="rebuttal")
    # when its run is planned
    canvas = run_plan(debate=debate_state(debate_id=debate.pk))
    # then only the model's turn is sent: the person's turn after it (pending, not yet
    # waiting) and everything after that are sent once the person has written it
    assert [(task.task, task.args) for task in canvas.tasks] == [
        ("debates.turn_run", (debate.pk, 2, model.pk))
    ]


def test_the_run_never_sends_the_persons_step_to_a_worker(monkeypatch):
    # given a debate just started: its prepare step runs, every later step is pending
    debate, _, model = _debate(step_outcomes={})
    asked = []
    signature = runs.step_signature

    def recorded(debate_id, step):
        asked.append(step.key)
        return signature(debate_id, step)

    monkeypatch.setattr(runs, "step_signature", recorded)
    # when its canvas is built
    runs.run_plan(debate=debate_state(debate_id=debate.pk))
    # then it sends the prepare step and the model's opening, not the person's, and stops
    assert asked == [("prepare", None, None), ("opening", 1, model.pk)]
