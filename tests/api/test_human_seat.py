"""A human seat at create: the owner takes a seat with no AI model; bad seats are 400s."""

import pytest

from debates.models import Ballot, Debate, Message, Participant, Vote
from tests.api.conftest import debate_body, refusal
from tests.debates.factories import DebateFactory, MessageFactory, ParticipantFactory

pytestmark = pytest.mark.django_db


def _seats(seeded, *human_seats):
    return [*human_seats, {"ai_model": seeded["models"][0].pk, "personality": "bear"}]


def test_create_seats_the_owner_in_a_human_seat(api, seeded):
    # given a body with a human seat first and a model seat
    body = debate_body(
        seeded,
        participants=_seats(seeded, {"kind": "human", "personality": "bull"}),
        human_turn_timeout_minutes=12,
    )
    # when it is posted
    response = api.post("/api/debates", body, format="json")
    # then the seat is stored as the owner's, with no model
    assert response.status_code == 201
    detail = response.json()
    human, model = detail["participants"]
    assert {
        k: human[k] for k in ("kind", "ai_model", "ai_model_name", "provider", "simulated")
    } == {
        "kind": "human",
        "ai_model": None,
        "ai_model_name": None,
        "provider": None,
        "simulated": False,
    }
    assert (human["personality"], human["speak_order"]) == ("bull", 0)
    assert (model["kind"], model["ai_model"]) == ("model", seeded["models"][0].pk)
    assert detail["human_turn_timeout_minutes"] == 12
    seat = Participant.objects.get(pk=human["id"])
    assert (seat.kind, seat.ai_model_id, seat.is_human) == ("human", None, True)


def test_the_turn_timeout_is_thirty_minutes_by_default(api, seeded):
    # when a debate is created without a timeout
    response = api.post("/api/debates", debate_body(seeded), format="json")
    # then
    assert response.json()["human_turn_timeout_minutes"] == 30
    assert Debate.objects.get().human_turn_timeout_minutes == 30


@pytest.mark.parametrize(
    ("change", "fields"),
    [
        (
            lambda s: {
                "participants": [
                    {"kind": "human", "personality": "bull"},
                    {"kind": "human", "personality": "bear"},
                    {"ai_model": s["models"][0].pk, "personality": "analyst"},
                ]
            },
            {
                "participants[1].kind": [
                    "A debate has at most one human seat; participants[0] is one."
                ]
            },
        ),
        (
            lambda s: {
                "participants": _seats(
                    s, {"kind": "human", "ai_model": s["models"][1].pk, "personality": "bull"}
                )
            },
            {"participants[0].ai_model": ["A human seat has no AI model."]},
        ),
        (
            lambda s: {"participants": _seats(s, {"kind": "model", "personality": "bull"})},
            {"participants[0].ai_model": ["No such AI model: None."]},
        ),
        (
            lambda s: {"participants": _seats(s, {"kind": "robot", "personality": "bull"})},
            {"participants[0].kind": ["'robot' is not one of: model, human."]},
        ),
        (
            lambda s: {"participants": _seats(s, {"kind": "human", "personality": "pundit"})},
            {
                "participants[0].personality": [
                    "'pundit' is not one of: bull, bear, analyst, contrarian, risk_manager."
                ]
            },
        ),
        (
            lambda s: {"human_turn_timeout_minutes": 0},
            {"human_turn_timeout_minutes": ["Ensure this value is greater than or equal to 1."]},
        ),
        (
            lambda s: {"human_turn_timeout_minutes": 1441},
            {"human_turn_timeout_minutes": ["Ensure this value is less than or equal to 1440."]},
        ),
        (
            lambda s: {"human_turn_timeout_minutes": "30"},
            {"human_turn_timeout_minutes": ["A valid integer is required."]},
        ),
    ],
    ids=[
        "two-human-seats",
        "human-seat-with-a-model",
        "model-seat-without-a-model",
        "unknown-kind",
        "human-seat-personality",
        "timeout-zero",
        "timeout-over-a-day",
        "timeout-as-text",
    ],
)
def test_a_bad_seat_is_a_400_naming_the_field_and_stores_nothing(api, seeded, change, fields):
    # when a body with one bad seat or timeout is posted
    response = api.post("/api/debates", debate_body(seeded, **change(seeded)), format="json")
    # then it is refused naming the field, and nothing is stored
    assert response.status_code == 400
    assert response.json() == refusal(fields)
    assert (Debate.objects.count(), Participant.objects.count()) == (0, 0)


# --- the person's turn and vote ---------------------------------------------------------

TURN = {
    "reasoning": "BTC holds its hourly EMA20; ETH has no setup.",
    "decisions": [
        {"symbol": "BTCUSDT", "action": "open_long", "confidence": 66, "leverage": 3},
        {"symbol": "ETHUSDT", "action": "wait", "confidence": 30},
    ],
}


def _seated(user, **state):
    """Return a 2-round debate of ``user`` past its prepare step, with a human seat first
    and a model seat: in round 1, or voting with every turn stored."""
    fields = {"status": "running", "phase": "opening", "current_round": 1, **state}
    debate = DebateFactory(
        owner=user,
        symbols=["BTCUSDT", "ETHUSDT"],
        max_rounds=2,
        step_outcomes={"prepare": {"status": "done"}},
        **fields,
    )
    human = ParticipantFactory(
        debate=debate, kind="human", ai_model=None, personality="bull", speak_order=0
    )
    model = ParticipantFactory(debate=debate, personality="bear", speak_order=1)
    if debate.status == "voting":
        for round_number in (1, 2):
            for seat in (human, model):
                MessageFactory(debate=debate, participant=seat, round=round_number)
    return debate, human


def test_a_turn_is_posted_once_and_a_repeat_answers_the_stored_one(api, user):
    # given a debate waiting for the person's opening
    debate, human = _seated(user)
    # when the turn is posted twice
    first = api.post(f"/api/debates/{debate.pk}/turns", TURN, format="json")
    again = api.post(f"/api/debates/{debate.pk}/turns", TURN, format="json")
    # then it is stored once
    assert (first.status_code, again.status_code) == (201, 200)
    assert first.json() == again.json()
    body = first.json()
    assert (body["participant"], body["round"], body["status"], body["parse_status"]) == (
        human.pk,
        1,
        "ok",
        "ok",
    )
    assert [
        (d["symbol"], d["action"], d["confidence"], d["leverage"]) for d in body["decisions"]
    ] == [
        ("BTCUSDT", "open_long", 66.0, 3),
        ("ETHUSDT", "wait", 30.0, None),
    ]
    assert Message.objects.count() == 1


@pytest.mark.parametrize(
    ("decision", "field"),
    [
        ({"symbol": "BTCUSDT", "action": "moon", "confidence": 50}, "decisions[0].action"),
        ({"symbol": "DOGEUSDT", "action": "wait", "confidence": 50}, "decisions[0].symbol"),
        ({"symbol": "BTCUSDT", "action": "wait", "confidence": 101}, "decisions[0].confidence"),
        ({"symbol": "BTCUSDT", "action": "wait", "confidence": -5}, "decisions[0].confidence"),
        ({"symbol": "BTCUSDT", "action": "wait", "confidence": 5, "size": 1}, "decisions[0].size"),
    ],
    ids=[
        "unknown-action",
        "not-a-candidate",
        "confidence-over-100",
        "confidence-negative",
        "extra",
    ],
)
@pytest.mark.parametrize("path", ["turns", "votes"])
def test_a_bad_answer_is_a_400_naming_the_field_and_stores_nothing(
    api, user, decision, field, path
):
    # given a debate waiting for the person's turn, or voting
    state = {"status": "voting", "phase": "voting", "current_round": 2} if path == "votes" else {}
    debate, _ = _seated(user, **state)
    # when an answer with one bad field is posted
    body = {"reasoning": "My view.", "decisions": [decision]}
    response = api.post(f"/api/debates/{debate.pk}/{path}", body, format="json")
    # then
    assert response.status_code == 400
    assert response.json()["code"] == "validation_error"
    assert list(response.json()["fields"]) == [field]
    turns = 4 if path == "votes" else 0
    assert (Message.objects.count(), Ballot.objects.count(), Vote.objects.count()) == (turns, 0, 0)


def test_a_turn_when_the_debate_waits_for_none_is_a_409_changing_nothing(api, user):
    # given a voting debate
    debate, _ = _seated(user, status="voting", phase="voting", current_round=2)
    # when a turn is posted
    response = api.post(f"/api/debates/{debate.pk}/turns", TURN, format="json")
    # then
    assert response.status_code == 409
    assert response.json()["code"] == "invalid_state"
    assert response.json()["message"].endswith("It waits for your vote.")
    assert Message.objects.count() == 4


def test_a_vote_is_posted_as_one_vote_per_coin(api, user):
    # given a voting debate
    debate, human = _seated(user, status="voting", phase="voting", current_round=2)
    vote = {
        "reasoning": "",
        "decisions": [{"symbol": "ETHUSDT", "action": "open_short", "confidence": 55}],
    }
    # when
    response = api.post(f"/api/debates/{debate.pk}/votes", vote, format="json")
    # then
    assert response.status_code == 201
    assert [(v["symbol"], v["action"], v["abstained"]) for v in response.json()] == [
        ("BTCUSDT", None, True),
        ("ETHUSDT", "open_short", False),
    ]
    listed = api.get(f"/api/debates/{debate.pk}/votes").json()
    assert {v["participant"] for v in listed} == {human.pk}


def test_another_users_debate_is_a_404(api, other_user):
    # given another user's debate waiting for its owner
    debate, _ = _seated(other_user)
    # then
    assert api.post(f"/api/debates/{debate.pk}/turns", TURN, format="json").status_code == 404
    assert Message.objects.count() == 0


def test_skip_turn_skips_the_step_the_debate_waits_for_once(api, user):
    # given a debate waiting for the person's opening
    debate, human = _seated(user)
    # when the person skips it, then tries again
    first = api.post(f"/api/debates/{debate.pk}/skip-turn")
    again = api.post(f"/api/debates/{debate.pk}/skip-turn")
    # then the turn is recorded as skipped once, and the debate no longer waits for them
    assert first.status_code == 200
    detail = first.json()
    assert [(m["participant"], m["status"]) for m in detail["messages"]] == [(human.pk, "skipped")]
    assert detail["user_action_required"] is False
    assert "submit_turn" not in detail["available_actions"]
    assert (again.status_code, again.json()["code"]) == (409, "invalid_state")
    assert Message.objects.count() == 1


def test_the_detail_says_the_debate_waits_for_the_person(api, user):
    # given a debate whose person's opening waits
    debate, human = _seated(user)
    # when
    detail = api.get(f"/api/debates/{debate.pk}").json()
    # then
    waiting = [s for s in detail["steps"] if s["status"] == "waiting"]
    assert waiting == [
        {
            "index": 1,
            "kind": "opening",
            "round": 1,
            "speaker": human.pk,
            "status": "waiting",
            "outcome": None,
        }
    ]
    assert detail["user_action_required"] is True
    assert {"submit_turn", "skip_turn", "cancel"} <= set(detail["available_actions"])
