"""The debate endpoints of SPEC 6: create, list, read, delete, start, cancel, retry,
execute, messages and votes, with their validation errors and refused states."""

from typing import Any

import pytest

from debates.models import Debate, Participant
from debates.services import debate_prepare
from tests.api.conftest import AS_OF, debate_body, refusal, run_steps
from tests.debates.factories import (
    AIModelFactory,
    DebateFactory,
    DecisionFactory,
    MessageFactory,
    ParticipantFactory,
    VoteFactory,
)
from tests.strategies.factories import StrategyFactory
from tests.traders.factories import ExecutionFactory, TraderFactory
from traders.models import Execution

pytestmark = pytest.mark.django_db

# The keys SPEC 6 requires of the detail representation and of its children.
DETAIL_KEYS = {
    "id", "name", "status", "phase", "current_round", "current_speaker", "available_actions",
    "symbol", "symbols", "max_rounds", "prompt_variant", "interval_minutes", "auto_execute",
    "trader", "strategy", "market_snapshot", "error", "participants", "messages", "votes",
    "decisions", "event_id", "created_at", "started_at", "finished_at",
}  # fmt: skip
PARTICIPANT_KEYS = {
    "id", "ai_model", "ai_model_name", "provider", "personality", "emoji", "color", "speak_order",
}  # fmt: skip
MESSAGE_KEYS = {
    "id", "round", "participant", "message_type", "content", "decisions", "parse_status",
    "error", "usage", "latency_ms", "created_at",
}  # fmt: skip
VOTE_KEYS = {
    "id", "participant", "symbol", "action", "confidence", "leverage", "position_pct",
    "stop_loss", "take_profit", "reasoning", "abstained",
}  # fmt: skip
DECISION_KEYS = {
    "symbol", "action", "confidence", "leverage", "position_pct", "stop_loss", "take_profit",
    "scores", "clamps", "is_primary", "execution",
}  # fmt: skip


def completed_debate(owner: Any, action: str = "open_long") -> Debate:
    """Return a completed debate of ``owner`` whose primary decision on BTCUSDT is ``action``."""
    debate = DebateFactory(owner=owner, status="completed", phase="done", current_round=2)
    DecisionFactory(debate=debate, action=action)
    return debate


# --- create -------------------------------------------------------------------------------


def test_create_returns_the_full_detail_of_a_pending_debate(api, seeded):
    # given a valid body with a lower-case coin
    body = debate_body(seeded, symbol="eth/usdt", prompt_variant="conservative")
    # when it is posted
    response = api.post("/api/debates", body, format="json")
    # then the debate is created pending, with every key of SPEC 6
    assert response.status_code == 201
    detail = response.json()
    assert set(detail) >= DETAIL_KEYS
    debate = Debate.objects.get()
    assert detail["id"] == debate.pk
    assert {key: detail[key] for key in ("name", "status", "phase", "symbol", "max_rounds")} == {
        "name": "BTC today",
        "status": "pending",
        "phase": "created",
        "symbol": "ETHUSDT",
        "max_rounds": 2,
    }
    assert detail["prompt_variant"] == "conservative"
    assert detail["cache"] == "off"
    assert detail["available_actions"] == ["start", "cancel", "delete"]
    assert detail["as_of"] == "2024-09-04T12:00:00Z"
    assert detail["strategy"]["id"] == seeded["strategy"].pk
    assert [
        (p["ai_model"], p["personality"], p["speak_order"]) for p in detail["participants"]
    ] == [
        (seeded["models"][0].pk, "bull", 0),
        (seeded["models"][1].pk, "bear", 1),
    ]
    assert set(detail["participants"][0]) >= PARTICIPANT_KEYS
    assert (detail["participants"][0]["emoji"], detail["participants"][0]["color"]) == (
        "🐂",
        "#22C55E",
    )
    assert (detail["messages"], detail["votes"], detail["decisions"]) == ([], [], [])


@pytest.mark.parametrize(
    ("change", "code", "fields"),
    [
        (
            lambda s, o: {"max_rounds": 7},
            "validation_error",
            {"max_rounds": ["Ensure this value is less than or equal to 5."]},
        ),
        (
            lambda s, o: {"name": "   "},
            "validation_error",
            {"name": ["This field may not be blank."]},
        ),
        (
            lambda s, o: {"participants": [{"ai_model": s["models"][0].pk, "personality": "bull"}]},
            "not_enough_participants",
            {"participants": ["A debate needs 2 to 6 participants; got 1."]},
        ),
        (
            lambda s, o: {
                "participants": [{"ai_model": s["models"][0].pk, "personality": "bull"}] * 7
            },
            "validation_error",
            {"participants": ["A debate needs 2 to 6 participants; got 7."]},
        ),
        (
            lambda s, o: {
                "participants": [
                    {"ai_model": s["models"][0].pk, "personality": "bull"},
                    {"ai_model": s["models"][1].pk, "personality": "wolf"},
                ]
            },
            "validation_error",
            {
                "participants[1].personality": [
                    "'wolf' is not one of: bull, bear, analyst, contrarian, risk_manager."
                ]
            },
        ),
        (
            lambda s, o: {
                "participants": [
                    {"ai_model": AIModelFactory(owner=o).pk, "personality": "bull"},
                    {"ai_model": s["models"][1].pk, "personality": "bear"},
                ]
            },
            "validation_error",
            lambda b: {
                "participants[0].ai_model": [
                    f"No such AI model: {b['participants'][0]['ai_model']}."
                ]
            },
        ),
        (
            lambda s, o: {
                "participants": [
                    {
                        "ai_model": AIModelFactory(
                            owner=s["strategy"].owner, name="Off", enabled=False
                        ).pk,
                        "personality": "bull",
                    },
                    {"ai_model": s["keyed_model"].pk, "personality": "bear"},
                ]
            },
            "validation_error",
            {"participants[0].ai_model": ["AI model 'Off' is disabled."]},
        ),
        (
            lambda s, o: {
                "participants": [
                    {"ai_model": s["models"][0].pk, "personality": "bull"},
                    {
                        "ai_model": AIModelFactory(
                            owner=s["strategy"].owner, name="NoKey", provider="openai"
                        ).pk,
                        "personality": "bear",
                    },
                ]
            },
            "validation_error",
            {"participants[1].ai_model": ["AI model 'NoKey' has no API key."]},
        ),
        (
            lambda s, o: {"strategy": StrategyFactory(owner=o).pk},
            "validation_error",
            lambda b: {"strategy": [f"No such object: {b['strategy']}."]},
        ),
        (
            lambda s, o: {"trader": TraderFactory(owner=o).pk},
            "validation_error",
            lambda b: {"trader": [f"No such object: {b['trader']}."]},
        ),
        (
            lambda s, o: {"auto_execute": True},
            "validation_error",
            {"trader": ["Required when auto_execute is true."]},
        ),
        (
            lambda s, o: {"symbol": "BTC/ETH"},
            "validation_error",
            {"symbol": ["unsupported symbol 'BTC/ETH': only USDT pairs are traded."]},
        ),
        (
            lambda s, o: {"symbol": "pepe"},
            "validation_error",
            {
                "symbol": [
                    "The bundled dataset holds no PEPEUSDT; one of BTCUSDT, ETHUSDT, SOLUSDT, "
                    "XRPUSDT, DOGEUSDT, AVAXUSDT, LINKUSDT."
                ]
            },
        ),
        (
            lambda s, o: {"prompt_variant": "wild", "oi_duration": "2h", "cache": "always"},
            "validation_error",
            {
                "prompt_variant": [
                    "'wild' is not one of: balanced, aggressive, conservative, scalping."
                ],
                "oi_duration": ["'2h' is not one of: 1h, 4h, 24h."],
                "cache": ["'always' is not one of: off, use, refresh."],
            },
        ),
        (
            lambda s, o: {"as_of": "yesterday"},
            "validation_error",
            {
                "as_of": [
                    "Datetime has wrong format. Use one of these formats instead: "
                    "YYYY-MM-DDThh:mm[:ss[.uuuuuu]][+HH:MM|-HH:MM|Z]."
                ]
            },
        ),
    ],
    ids=[
        "rounds-out-of-range",
        "blank-name",
        "one-participant",
        "seven-participants",
        "unknown-personality",
        "other-users-model",
        "disabled-model",
        "model-without-key",
        "other-users-strategy",
        "other-users-trader",
        "auto-execute-without-trader",
        "malformed-symbol",
        "symbol-not-in-the-dataset",
        "unknown-choices",
        "malformed-as-of",
    ],
)
def test_create_refuses_bad_input_naming_each_field_and_writes_nothing(
    api, seeded, other_user, change, code, fields
):
    # given a body with one thing wrong
    body = debate_body(seeded, **change(seeded, other_user))
    # when it is posted
    response = api.post("/api/debates", body, format="json")
    # then it is refused, naming the field, and nothing is written
    assert response.status_code == 400
    expected = fields(body) if callable(fields) else fields
    assert response.json() == {"code": code, "message": "Invalid input.", "fields": expected}
    assert (Debate.objects.count(), Participant.objects.count()) == (0, 0)


# --- list, personalities, detail, children ------------------------------------------------


def test_list_shows_own_debates_newest_first(api, user, other_user):
    # given three debates of the user and one of another user
    first, second, third = (DebateFactory(owner=user, name=f"D{i}") for i in range(3))
    DebateFactory(owner=other_user)
    # when the user lists debates
    response = api.get("/api/debates")
    # then they see their own, newest first
    assert response.status_code == 200
    body = response.json()
    assert (body["count"], body["next"], body["previous"]) == (3, None, None)
    assert [d["id"] for d in body["results"]] == [third.pk, second.pk, first.pk]


def test_list_filters_by_status(api, user):
    DebateFactory(owner=user, status="pending")
    done = DebateFactory(owner=user, status="completed")
    response = api.get("/api/debates", {"status": "completed"})
    assert [d["id"] for d in response.json()["results"]] == [done.pk]


def test_list_refuses_an_unknown_status(api):
    response = api.get("/api/debates", {"status": "sleeping"})
    assert response.status_code == 400
    assert response.json()["fields"] == {
        "status": [
            "'sleeping' is not one of: pending, running, voting, completed, cancelled, failed."
        ]
    }


def test_list_is_paginated(api, user):
    # given 23 debates (pages hold 20)
    DebateFactory.create_batch(23, owner=user)
    # when the second page is asked for, and a page past the end
    page_two = api.get("/api/debates", {"page": 2}).json()
    past_end = api.get("/api/debates", {"page": 3})
    # then the second page has the 3 oldest and the third does not exist
    assert (page_two["count"], len(page_two["results"]), page_two["next"]) == (23, 3, None)
    assert past_end.status_code == 404
    assert past_end.json() == {"code": "not_found", "message": "Invalid page.", "fields": {}}


def test_personalities_lists_the_five(api):
    response = api.get("/api/debates/personalities")
    assert response.status_code == 200
    assert [p["id"] for p in response.json()] == [
        "bull",
        "bear",
        "analyst",
        "contrarian",
        "risk_manager",
    ]
    assert response.json()[0] == {
        "id": "bull",
        "name": "Bull",
        "emoji": "🐂",
        "color": "#22C55E",
        "description": "Optimist hunting for longs: trend continuation and support holding.",
    }


def test_detail_shows_participants_messages_votes_and_decisions(api, user):
    # given a completed debate with a message, a vote and an executed decision
    debate = DebateFactory(owner=user, status="completed", phase="done")
    participant = ParticipantFactory(debate=debate, ai_model__owner=user, speak_order=0)
    MessageFactory(participant=participant, prompt_tokens=120, completion_tokens=80)
    VoteFactory(ballot__participant=participant)
    decision = DecisionFactory(debate=debate)
    execution = ExecutionFactory(decision=decision)
    # when it is read
    response = api.get(f"/api/debates/{debate.pk}")
    # then every part of SPEC 6 is there
    assert response.status_code == 200
    detail = response.json()
    assert set(detail) >= DETAIL_KEYS
    assert set(detail["messages"][0]) >= MESSAGE_KEYS
    assert detail["messages"][0]["usage"] == {
        "prompt_tokens": 120,
        "completion_tokens": 80,
        "reasoning_tokens": 0,
        "cached_input_tokens": 0,
        "cost_usd": "0",
        "estimated": False,
    }
    assert set(detail["votes"][0]) >= VOTE_KEYS
    assert set(detail["decisions"][0]) >= DECISION_KEYS
    assert detail["decisions"][0]["execution"]["id"] == execution.pk
    assert detail["available_actions"] == ["delete"]


def test_messages_are_listed_by_round_and_speaking_order(api, user):
    # given messages stored out of order
    debate = DebateFactory(owner=user, status="running")
    first = ParticipantFactory(debate=debate, ai_model__owner=user, speak_order=0)
    second = ParticipantFactory(debate=debate, ai_model__owner=user, speak_order=1)
    late = MessageFactory(participant=first, round=2, message_type="rebuttal")
    opening_second = MessageFactory(participant=second, round=1)
    opening_first = MessageFactory(participant=first, round=1)
    # when they are listed
    response = api.get(f"/api/debates/{debate.pk}/messages")
    # then round 1 comes first, in speaking order
    assert response.status_code == 200
    assert [m["id"] for m in response.json()] == [opening_first.pk, opening_second.pk, late.pk]


def test_votes_are_listed_with_abstentions(api, user):
    debate = DebateFactory(owner=user, status="completed")
    participant = ParticipantFactory(debate=debate, ai_model__owner=user, speak_order=0)
    vote = VoteFactory(ballot__participant=participant, symbol="BTCUSDT")
    abstention = VoteFactory(
        ballot=vote.ballot,
        symbol="ETHUSDT",
        action="",
        abstained=True,
        abstain_reason="no usable answer",
        confidence=None,
        leverage=None,
        position_pct=None,
    )
    response = api.get(f"/api/debates/{debate.pk}/votes")
    assert response.status_code == 200
    votes = response.json()
    assert [(v["id"], v["action"], v["abstained"]) for v in votes] == [
        (vote.pk, "open_long", False),
        (abstention.pk, None, True),
    ]


# --- delete, start, cancel, retry ---------------------------------------------------------


@pytest.mark.parametrize("status", ["pending", "completed", "cancelled", "failed"])
def test_delete_removes_a_pending_or_finished_debate(api, user, status):
    debate = DebateFactory(owner=user, status=status)
    ParticipantFactory(debate=debate, ai_model__owner=user)
    response = api.delete(f"/api/debates/{debate.pk}")
    assert response.status_code == 204
    assert response.content == b""
    assert (Debate.objects.count(), Participant.objects.count()) == (0, 0)


@pytest.mark.parametrize(
    ("action", "method", "status"),
    [
        ("delete", "delete", "running"),
        ("delete", "delete", "voting"),
        ("start", "post", "running"),
        ("start", "post", "completed"),
        ("cancel", "post", "completed"),
        ("cancel", "post", "failed"),
        ("retry", "post", "pending"),
        ("retry", "post", "completed"),
        # not held before a step, nor with a failed step to run again
        ("advance", "post", "pending"),
        ("advance", "post", "running"),
        ("advance", "post", "failed"),
        ("retry_step", "post", "running"),
        ("retry_step", "post", "completed"),
        ("retry_step", "post", "cancelled"),
    ],
)
def test_an_action_the_state_forbids_is_a_409_and_changes_nothing(
    api, user, action, method, status
):
    # given a debate in a state that forbids the action
    debate = DebateFactory(owner=user, status=status)
    before = Debate.objects.filter(pk=debate.pk).values().get()
    path = f"/api/debates/{debate.pk}"
    path += "" if action == "delete" else "/" + action.replace("_", "-")
    # when the action is asked for
    response = getattr(api, method)(path)
    # then it is refused and the debate is unchanged
    assert response.status_code == 409
    assert response.json() == {
        "code": "invalid_state",
        "message": f"Cannot {action} a debate that is {status}.",
        "fields": {"status": [status]},
    }
    assert Debate.objects.filter(pk=debate.pk).values().get() == before


def test_start_moves_a_pending_debate_to_running_and_its_prepare_step_stores_the_snapshot(
    api, user, seeded
):
    # given a pending debate replaying the dataset
    created = api.post("/api/debates", debate_body(seeded), format="json").json()
    # when it is started
    response = api.post(f"/api/debates/{created['id']}/start")
    # then it runs, at its prepare step
    assert response.status_code == 200
    detail = response.json()
    assert (detail["status"], detail["phase"], detail["current_round"]) == ("running", "opening", 1)
    assert detail["available_actions"] == ["cancel"]
    assert (detail["current_step"], detail["steps"][0]["kind"]) == (0, "prepare")
    assert detail["steps"][0]["status"] == "running"
    # and once that step has run (as a worker would), on the coins the snapshot holds
    debate_prepare(debate_id=created["id"])
    detail = api.get(f"/api/debates/{created['id']}").json()
    assert detail["symbols"] == ["BTCUSDT", "ETHUSDT"]
    assert detail["market_snapshot"]["as_of"] == "2024-09-04T12:00:00Z"
    assert (detail["current_step"], detail["steps"][0]["status"]) == (1, "done")


@pytest.mark.parametrize(
    ("judged", "field"),
    [(False, "participants[1].ai_model"), (True, "judge.ai_model")],
    ids=["seat", "judge"],
)
def test_start_is_refused_when_a_model_of_the_debate_was_disabled_since_its_create(
    api, seeded, judged, field
):
    # given a pending debate whose second seat (or judge) is on Sim B, then Sim B disabled
    model = seeded["models"][1]
    judge = {"ai_model": model.pk} if judged else None
    seats = [{"ai_model": seeded["models"][0].pk, "personality": p} for p in ("bull", "bear")]
    body = debate_body(seeded, judge=judge, **({"participants": seats} if judged else {}))
    created = api.post("/api/debates", body, format="json").json()
    disabled = api.patch(f"/api/ai-models/{model.pk}", {"enabled": False}, format="json")
    assert disabled.status_code == 200
    before = Debate.objects.filter(pk=created["id"]).values().get()
    # when it is started
    response = api.post(f"/api/debates/{created['id']}/start")
    # then the start is refused as the create would be, and nothing changed
    assert response.status_code == 409
    assert response.json() == {
        "code": "conflict",
        "message": "AI model 'Sim B' is disabled.",
        "fields": {field: ["AI model 'Sim B' is disabled."]},
    }
    assert Debate.objects.filter(pk=created["id"]).values().get() == before
    assert api.get(f"/api/debates/{created['id']}").json()["available_actions"] == [
        "start",
        "cancel",
        "delete",
    ]


@pytest.mark.parametrize("status", ["pending", "running", "voting"])
def test_cancel_stops_a_debate_that_has_not_ended(api, user, status):
    debate = DebateFactory(owner=user, status=status)
    response = api.post(f"/api/debates/{debate.pk}/cancel")
    assert response.status_code == 200
    assert (response.json()["status"], response.json()["available_actions"]) == (
        "cancelled",
        ["delete"],
    )
    debate.refresh_from_db()
    assert debate.status == "cancelled"


@pytest.mark.django_db(transaction=True)
def test_a_manual_debate_is_held_after_each_step_and_advanced_through_the_api(api, seeded):
    # given a debate created in the manual pace, started, and its prepare step run
    body = debate_body(seeded, pace="manual")
    created = api.post("/api/debates", body, format="json").json()
    assert (created["pace"], created["can_advance"]) == ("manual", False)
    api.post(f"/api/debates/{created['id']}/start")
    debate_prepare(debate_id=created["id"])
    # then it is held before its first opening
    detail = api.get(f"/api/debates/{created['id']}").json()
    assert (detail["current_step"], detail["can_advance"]) == (1, True)
    assert detail["available_actions"] == ["advance", "cancel"]
    assert detail["steps"][:2] == [
        {
            "index": 0,
            "kind": "prepare",
            "round": None,
            "speaker": None,
            "status": "done",
            "outcome": None,
        },
        {
            "index": 1,
            "kind": "opening",
            "round": 1,
            "speaker": detail["participants"][0]["id"],
            "status": "pending",
            "outcome": None,
        },
    ]
    # when it is advanced
    response = api.post(f"/api/debates/{created['id']}/advance")
    # then that one step is released to run
    advanced = response.json()
    assert response.status_code == 200
    assert (advanced["steps_released"], advanced["can_advance"]) == (2, False)
    assert [step["status"] for step in advanced["steps"][:3]] == ["done", "running", "pending"]


def test_an_unknown_pace_is_a_400_naming_the_field(api, seeded):
    response = api.post("/api/debates", debate_body(seeded, pace="fast"), format="json")
    assert response.status_code == 400
    assert list(response.json()["fields"]) == ["pace"]
    assert Debate.objects.count() == 0


def failed_in_round_1(user) -> Debate:
    """Return a debate of ``user`` that failed in its first round, before any snapshot,
    with two seats."""
    debate = DebateFactory(
        owner=user,
        status="failed",
        phase="opening",
        current_round=1,
        error={"step": "round 1", "code": "round_failed", "message": "Every turn failed."},
        as_of=AS_OF,
    )
    for order in (0, 1):
        ParticipantFactory(debate=debate, ai_model__owner=user, speak_order=order)
    return debate


def test_retry_resumes_a_failed_debate(api, user):
    # given a debate that failed in its first round, before any snapshot
    debate = failed_in_round_1(user)
    # when it is retried
    response = api.post(f"/api/debates/{debate.pk}/retry")
    # then it runs again with its error cleared
    assert response.status_code == 200
    assert (response.json()["status"], response.json()["error"]) == ("running", None)


@pytest.mark.parametrize("action", ["retry", "retry-step"])
def test_a_retry_is_refused_when_a_model_of_the_debate_was_disabled_since(api, user, action):
    # given a debate that failed in its first round, one of whose models is then disabled
    debate = failed_in_round_1(user)
    seat = debate.participants.get(speak_order=1)
    api.patch(f"/api/ai-models/{seat.ai_model_id}", {"enabled": False}, format="json")
    before = Debate.objects.filter(pk=debate.pk).values().get()
    # when it is retried
    response = api.post(f"/api/debates/{debate.pk}/{action}")
    # then the retry is refused as a start would be, naming the seat, and nothing changed
    message = f"AI model '{seat.ai_model.name}' is disabled."
    assert response.status_code == 409
    assert response.json()["fields"] == {"participants[1].ai_model": [message]}
    assert Debate.objects.filter(pk=debate.pk).values().get() == before


# --- execute ------------------------------------------------------------------------------


def test_execute_accepts_the_primary_decision_once(api, user):
    # given a completed debate with an open_long decision and a running paper trader
    debate = completed_debate(user)
    trader = TraderFactory(owner=user)
    # when the consensus is executed, twice
    first = api.post(f"/api/debates/{debate.pk}/execute", {"trader": trader.pk}, format="json")
    again = api.post(f"/api/debates/{debate.pk}/execute", {"trader": trader.pk}, format="json")
    # then one pending execution is recorded and both answers show it
    assert first.status_code == 202
    execution = Execution.objects.get()
    assert {key: first.json()[key] for key in ("id", "debate", "trader", "status", "symbol")} == {
        "id": execution.pk,
        "debate": debate.pk,
        "trader": trader.pk,
        "status": "pending",
        "symbol": "BTCUSDT",
    }
    assert (again.status_code, again.json()["id"]) == (202, execution.pk)


def test_execute_takes_a_coin_given_in_any_notation(api, user):
    debate = completed_debate(user)
    DecisionFactory(debate=debate, symbol="ETHUSDT", action="open_short", is_primary=False)
    trader = TraderFactory(owner=user)
    body = {"trader": trader.pk, "symbol": "eth"}
    response = api.post(f"/api/debates/{debate.pk}/execute", body, format="json")
    assert response.status_code == 202
    assert (response.json()["symbol"], response.json()["action"]) == ("ETHUSDT", "open_short")


@pytest.mark.parametrize(
    ("arrange", "status", "code"),
    [
        (lambda u: (completed_debate(u, "hold"), TraderFactory(owner=u)), 409, "not_executable"),
        (lambda u: (completed_debate(u, "wait"), TraderFactory(owner=u)), 409, "not_executable"),
        (
            lambda u: (DebateFactory(owner=u, status="running"), TraderFactory(owner=u)),
            409,
            "invalid_state",
        ),
        (
            lambda u: (completed_debate(u), TraderFactory(owner=u, status="stopped")),
            409,
            "trader_stopped",
        ),
        (
            lambda u: (
                ExecutionFactory(decision=DecisionFactory(debate__owner=u)).decision.debate,
                TraderFactory(owner=u),
            ),
            409,
            "already_executed",
        ),
        (
            lambda u: (completed_debate(u), TraderFactory()),
            404,
            "not_found",
        ),
    ],
    ids=["hold", "wait", "not-completed", "trader-stopped", "executed-elsewhere", "other-trader"],
)
def test_execute_refuses_what_cannot_be_executed(api, user, arrange, status, code):
    # given a debate and a trader that cannot execute it
    debate, trader = arrange(user)
    executions = Execution.objects.count()
    # when its consensus is executed
    response = api.post(f"/api/debates/{debate.pk}/execute", {"trader": trader.pk}, format="json")
    # then it is refused with a specific code and nothing is executed
    assert (response.status_code, response.json()["code"]) == (status, code)
    assert Execution.objects.count() == executions


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        ({}, {"trader": ["This field is required."]}),
        ({"trader": "1"}, {"trader": ["A valid integer is required."]}),
        ({"trader": 1, "symbol": 5}, {"symbol": ["Must be a string."]}),
        ({"trader": 1, "coin": "BTC"}, {"coin": ["Unknown field."]}),
    ],
)
def test_execute_names_bad_fields(api, user, body, fields):
    debate = completed_debate(user)
    response = api.post(f"/api/debates/{debate.pk}/execute", body, format="json")
    assert response.status_code == 400
    assert response.json() == refusal(fields)


def test_execute_refuses_a_malformed_coin(api, user):
    debate = completed_debate(user)
    trader = TraderFactory(owner=user)
    body = {"trader": trader.pk, "symbol": "BTC/ETH"}
    response = api.post(f"/api/debates/{debate.pk}/execute", body, format="json")
    assert response.status_code == 400
    assert response.json()["fields"] == {
        "symbol": ["unsupported symbol 'BTC/ETH': only USDT pairs are traded."]
    }


# --- a whole debate through the API -------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_debate_created_and_started_through_the_api_runs_to_a_consensus(api, seeded):
    # given a debate created and started through the API
    debate_id = api.post("/api/debates", debate_body(seeded), format="json").json()["id"]
    assert api.post(f"/api/debates/{debate_id}/start").status_code == 200
    # when its steps run (as the workers would)
    run_steps(debate_id)
    # then the API shows it completed, with 2 rounds of 2 messages, votes and decisions
    detail = api.get(f"/api/debates/{debate_id}").json()
    assert (detail["status"], detail["phase"]) == ("completed", "done")
    assert [(m["round"], m["message_type"]) for m in detail["messages"]] == [
        (1, "analysis"),
        (1, "analysis"),
        (2, "rebuttal"),
        (2, "rebuttal"),
    ]
    assert len(detail["votes"]) == 4
    assert [d["symbol"] for d in detail["decisions"]] == ["BTCUSDT", "ETHUSDT"]
    assert detail["decisions"][0]["is_primary"] is True
    assert api.get(f"/api/debates/{debate_id}/votes").json() == detail["votes"]


@pytest.mark.parametrize(
    "as_of", ["2023-06-01T00:00:00Z", "2024-09-05T00:00:01Z", "2030-01-01T00:00:00Z"]
)
def test_an_as_of_outside_the_strategys_dataset_window_is_refused_at_create(api, seeded, as_of):
    # when a debate on a dataset strategy is created at an instant the dataset lacks
    response = api.post("/api/debates", debate_body(seeded, as_of=as_of), format="json")
    # then the instant is refused, naming the window, and nothing is created
    assert response.status_code == 400
    assert response.json()["fields"] == {
        "as_of": [
            "Outside the dataset window of this strategy: "
            "2024-08-05T03:00:00+00:00 .. 2024-09-05T00:00:00+00:00."
        ]
    }
    assert Debate.objects.count() == 0
