"""A human seat at create: the owner takes a seat with no AI model; bad seats are 400s."""

import pytest

from debates.models import Debate, Participant
from tests.api.conftest import debate_body

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
    assert response.json() == {
        "code": "validation_error",
        "message": "Invalid input.",
        "fields": fields,
    }
    assert (Debate.objects.count(), Participant.objects.count()) == (0, 0)
