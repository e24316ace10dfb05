"""A debate with a human seat, end to end: the REST API, a real Celery worker, the fake
model server. The person writes their turns and vote through the API; the models
answer them in the next round."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from debates.models import Ballot, Debate, Message
from debates.services.human import human_steps_expire
from tests.api.conftest import AS_OF
from tests.debates.conftest import wait_for, wait_until_finished
from tests.debates.factories import FakeLLMModelFactory
from tests.strategies.factories import StrategyFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

MARK_1 = "Funding flipped negative at the 08:00 print"
MARK_2 = "My rebuttal: the bears ignore the open-interest climb"


def _create(api: Any, user: Any, llm: Any, **fields: Any) -> dict[str, Any]:
    """Create a 2-round debate: model P1 (bull), the person P2 (analyst), model P3 (bear)."""
    strategy = StrategyFactory(owner=user, static_coins=["BTCUSDT", "ETHUSDT"])
    models = FakeLLMModelFactory.create_batch(2, owner=user, llm=llm)
    body = {
        "name": "With a person",
        "strategy": strategy.pk,
        "symbol": "BTC",
        "max_rounds": 2,
        "as_of": AS_OF.isoformat(),
        "participants": [
            {"ai_model": models[0].pk, "personality": "bull"},
            {"kind": "human", "personality": "analyst"},
            {"ai_model": models[1].pk, "personality": "bear"},
        ],
        **fields,
    }
    response = api.post("/api/debates", body, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def _detail(api: Any, debate_id: int) -> dict[str, Any]:
    return api.get(f"/api/debates/{debate_id}").json()


def _waiting_step(api: Any, debate_id: int) -> dict[str, Any] | None:
    detail = _detail(api, debate_id)
    return next((s for s in detail["steps"] if s["status"] == "waiting"), None)


def _wait_for_step(api: Any, debate_id: int, kind: str, round_number: int | None) -> None:
    wait_for(
        lambda: (
            (step := _waiting_step(api, debate_id)) is not None
            and (step["kind"], step["round"]) == (kind, round_number)
        ),
        timeout=60,
    )


def _turn(reasoning: str, btc: str, eth: str) -> dict[str, Any]:
    return {
        "reasoning": reasoning,
        "decisions": [
            {"symbol": "BTCUSDT", "action": btc, "confidence": 80, "leverage": 3},
            {"symbol": "ETHUSDT", "action": eth, "confidence": 55},
        ],
    }


def _prompts(llm: Any, text: str) -> list[str]:
    return [r.prompt for r in llm.requests if text in r.prompt]


def test_the_person_takes_a_seat_and_the_models_answer_them(api, user, llm, celery_worker):
    # given a debate with the person in the second seat
    created = _create(api, user, llm)
    debate_id = created["id"]
    person = created["participants"][1]
    assert (person["kind"], person["ai_model"]) == ("human", None)
    # when it starts, the models write their openings while the person's waits
    assert api.post(f"/api/debates/{debate_id}/start").status_code == 200
    _wait_for_step(api, debate_id, "opening", 1)
    wait_for(lambda: Message.objects.filter(debate_id=debate_id, round=1).count() == 2)
    detail = _detail(api, debate_id)
    assert detail["user_action_required"] is True
    assert {"submit_turn", "skip_turn", "cancel"} <= set(detail["available_actions"])
    assert detail["human_due_at"] is not None
    assert detail["current_round"] == 1  # the round waits for the person
    # and the person writes theirs
    response = api.post(
        f"/api/debates/{debate_id}/turns", _turn(MARK_1, "open_long", "wait"), format="json"
    )
    assert response.status_code == 201
    # then round 2 opens; P1 answers the person's opening; then it is the person's turn
    _wait_for_step(api, debate_id, "rebuttal", 2)
    assert _detail(api, debate_id)["current_speaker"] == person["id"]
    rebuttals = _prompts(llm, "round 2/2")
    assert len(rebuttals) == 1
    assert MARK_1 in rebuttals[0]
    response = api.post(
        f"/api/debates/{debate_id}/turns", _turn(MARK_2, "open_long", "open_short"), format="json"
    )
    assert response.status_code == 201
    # and P3 answers both of the person's turns; then the person votes
    _wait_for_step(api, debate_id, "voting", None)
    rebuttals = _prompts(llm, "round 2/2")
    assert len(rebuttals) == 2
    assert MARK_1 in rebuttals[1] and MARK_2 in rebuttals[1]
    wait_for(lambda: Ballot.objects.filter(debate_id=debate_id).count() == 2)
    vote = _turn("", "open_long", "wait")
    response = api.post(f"/api/debates/{debate_id}/votes", vote, format="json")
    assert response.status_code == 201
    finished = wait_until_finished(debate_id)
    # then the debate completed with each step once, the person's among them
    assert finished.status == "completed"
    turns = sorted(Message.objects.filter(debate_id=debate_id).values_list("round", "participant"))
    seats = [p["id"] for p in created["participants"]]
    assert turns == sorted((r, s) for r in (1, 2) for s in seats)
    assert sorted(
        Ballot.objects.filter(debate_id=debate_id).values_list("participant", flat=True)
    ) == sorted(seats)
    assert len(llm.requests) == 6  # 2 openings, 2 rebuttals, 2 votes: nothing asked twice
    detail = _detail(api, debate_id)
    assert (detail["human_due_at"], detail["user_action_required"]) == (None, False)
    assert [m["reasoning"] for m in detail["messages"] if m["participant"] == person["id"]] == [
        MARK_1,
        MARK_2,
    ]
    assert detail["decisions"]


def test_steps_the_person_lets_pass_are_skipped_and_the_debate_goes_on(
    api, user, llm, celery_worker
):
    # given a started debate whose person has a minute for each step
    created = _create(api, user, llm, human_turn_timeout_minutes=1)
    debate_id = created["id"]
    person = created["participants"][1]["id"]
    api.post(f"/api/debates/{debate_id}/start")
    # when the beat looks after each deadline has passed
    for kind, round_number in (("opening", 1), ("rebuttal", 2), ("voting", None)):
        _wait_for_step(api, debate_id, kind, round_number)
        due = Debate.objects.get(pk=debate_id).human_due_at
        assert due is not None
        assert human_steps_expire(now=due - timedelta(seconds=1)) == []
        assert human_steps_expire(now=due + timedelta(seconds=1)) == [debate_id]
    finished = wait_until_finished(debate_id)
    # then every step of the person was skipped once and the models decided alone
    assert finished.status == "completed"
    mine = Message.objects.filter(debate_id=debate_id, participant=person)
    assert list(mine.order_by("round").values_list("round", "status")) == [
        (1, "skipped"),
        (2, "skipped"),
    ]
    assert Ballot.objects.get(debate_id=debate_id, participant=person).status == "skipped"
    assert Message.objects.filter(debate_id=debate_id, status="ok").count() == 4
    assert finished.human_due_at is None
    # and the models read the skipped turn as no answer
    assert "turn failed, no answer" in _prompts(llm, "round 2/2")[-1]


def test_a_manual_pace_debate_waits_for_advance_and_for_the_person(api, user, llm, celery_worker):
    # given a manual-pace debate with the person in the second seat
    created = _create(api, user, llm, pace="manual")
    debate_id = created["id"]
    person = created["participants"][1]["id"]
    api.post(f"/api/debates/{debate_id}/start")
    # when the owner advances whenever the debate is held, and writes whenever it waits
    done: list[str] = []

    def settled() -> dict[str, Any] | None:
        detail = _detail(api, debate_id)
        ready = detail["can_advance"] or detail["user_action_required"]
        return detail if ready or detail["status"] == "completed" else None

    while True:
        wait_for(lambda: settled() is not None, timeout=60)
        detail = settled()
        if detail["status"] == "completed":
            break
        if detail["user_action_required"]:
            step = next(s for s in detail["steps"] if s["status"] == "waiting")
            assert step["speaker"] == person
            assert "advance" not in detail["available_actions"]
            path = "votes" if step["kind"] == "voting" else "turns"
            answer = _turn(
                "" if path == "votes" else f"Round {step['round']} view.", "hold", "wait"
            )
            assert (
                api.post(f"/api/debates/{debate_id}/{path}", answer, format="json").status_code
                == 201
            )
            done.append(f"{path} {step['kind']}")
        else:
            step = detail["steps"][detail["current_step"]]
            assert api.post(f"/api/debates/{debate_id}/advance").status_code == 200
            done.append(f"advance to {step['kind']}")
    # then each step ran after one advance, and the person's waited for them
    assert done == [
        "advance to opening",
        "advance to opening",
        "turns opening",
        "advance to opening",
        "advance to rebuttal",
        "advance to rebuttal",
        "turns rebuttal",
        "advance to rebuttal",
        "advance to voting",
        "advance to voting",
        "votes voting",
        "advance to voting",
        "advance to consensus",
    ]
    assert Message.objects.filter(debate_id=debate_id).count() == 6
    assert len(llm.requests) == 6


def test_from_the_cache_the_models_openings_run_in_place_and_the_persons_waits(
    api, user, llm, celery_worker
):
    # given a debate with the person, at cache: use, run up to the person's opening once
    # (the models' openings asked and kept), then cancelled
    first = _create(api, user, llm, cache="use")["id"]
    assert api.post(f"/api/debates/{first}/start").status_code == 200
    _wait_for_step(api, first, "opening", 1)
    wait_for(lambda: Message.objects.filter(debate_id=first, round=1).count() == 2)
    assert api.post(f"/api/debates/{first}/cancel").status_code == 200
    asked = len(llm.requests)
    # when the same debate runs again
    again = _create(api, user, llm, cache="use")["id"]
    assert api.post(f"/api/debates/{again}/start").status_code == 200
    # then the models' openings come from the cache, no model asked,
    # and the debate waits for the person's opening
    _wait_for_step(api, again, "opening", 1)
    wait_for(lambda: Message.objects.filter(debate_id=again, round=1).count() == 2)
    openings = Message.objects.filter(debate_id=again, round=1)
    assert [m.cached for m in openings] == [True, True]
    assert len(llm.requests) == asked
    detail = _detail(api, again)
    assert (detail["status"], detail["current_round"]) == ("running", 1)
    assert detail["user_action_required"] is True
    # and once the person writes theirs, round 2 opens
    response = api.post(
        f"/api/debates/{again}/turns", _turn(MARK_1, "open_long", "wait"), format="json"
    )
    assert response.status_code == 201
    wait_for(lambda: _detail(api, again)["current_round"] == 2)
