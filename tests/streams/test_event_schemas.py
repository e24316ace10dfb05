"""One test per live event type (SPEC 7): what went out through ``arena.sse`` has the
documented shape, and an object's payload is its REST representation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from asgiref.sync import sync_to_async
from django.db import connections
from django.test import AsyncClient

from debates import events
from debates.events import EVENT_TYPES
from debates.selectors import debate_representation
from debates.services import debate_cancel
from tests.debates.events_helpers import published
from tests.debates.factories import (
    AIModelFactory,
    DebateFactory,
    DecisionFactory,
    JudgeCallFactory,
    JudgeScoreFactory,
    MessageFactory,
    ParticipantFactory,
    VoteFactory,
)
from tests.streams.schemas import STATE_FIELDS, validate_event
from tests.streams.sse import SSEEvent
from tests.traders.factories import ExecutionFactory
from traders import events as trader_events


def publish_status(debate) -> Callable[[dict], Any]:
    debate_cancel(debate_id=debate.pk)
    return lambda detail: {name: detail[name] for name in STATE_FIELDS}


def publish_round_start(debate) -> None:
    events.round_started(debate.pk, 1)


def publish_round_end(debate) -> None:
    events.round_ended(debate.pk, 1)


def publish_message(debate) -> Callable[[dict], Any]:
    events.message_stored(MessageFactory(participant=ParticipantFactory(debate=debate)))
    return lambda detail: detail["messages"][0]


def publish_vote(debate) -> Callable[[dict], Any]:
    participant = ParticipantFactory(debate=debate)
    events.vote_stored(VoteFactory(ballot__participant=participant, ballot__debate=debate))
    return lambda detail: detail["votes"][0]


def publish_consensus(debate) -> Callable[[dict], Any]:
    primary = DecisionFactory(debate=debate, symbol="BTCUSDT", is_primary=True)
    other = DecisionFactory(debate=debate, symbol="ETHUSDT", is_primary=False, action="wait")
    events.consensus_reached(debate.pk, [other, primary])
    return lambda detail: {"decisions": detail["decisions"]}


def publish_execution(debate) -> Callable[[dict], Any]:
    trader_events.execution_changed(ExecutionFactory(decision=DecisionFactory(debate=debate)))
    return lambda detail: detail["decisions"][0]["execution"]


def publish_error(debate) -> None:
    participant = ParticipantFactory(debate=debate)
    events.step_failed(
        debate.pk,
        step="round 1 turn",
        participant=participant.pk,
        code="timeout",
        message="The model did not answer within 10 s.",
    )


def publish_judge_call(debate) -> Callable[[dict], Any]:
    debate.judge_model = AIModelFactory(owner=debate.owner)
    debate.save(update_fields=["judge_model"])
    events.judge_call_stored(JudgeCallFactory(debate=debate))
    return lambda detail: {
        "call": detail["judge"]["calls"][0],
        "summary": detail["judge"]["summaries"][0],
    }


def publish_judge_scores(debate) -> Callable[[dict], Any]:
    debate.judge_model = AIModelFactory(owner=debate.owner)
    debate.save(update_fields=["judge_model"])
    events.judge_scores_stored(
        debate.pk, [JudgeScoreFactory(participant=ParticipantFactory(debate=debate))]
    )
    return lambda detail: {"scores": detail["judge"]["scores"]}


PUBLISHERS = {
    "status": publish_status,
    "round_start": publish_round_start,
    "round_end": publish_round_end,
    "message": publish_message,
    "vote": publish_vote,
    "consensus": publish_consensus,
    "execution": publish_execution,
    "error": publish_error,
    "judge_call": publish_judge_call,
    "judge_scores": publish_judge_scores,
}


def test_every_event_type_has_a_schema_test():
    assert {"initial", *PUBLISHERS} == set(EVENT_TYPES)


@pytest.mark.django_db
@pytest.mark.parametrize("event_type", list(PUBLISHERS))
def test_a_published_event_has_the_documented_shape(
    event_type, user, django_capture_on_commit_callbacks
):
    # given a debate
    debate = DebateFactory(owner=user)
    # when the service step behind the event commits
    with django_capture_on_commit_callbacks(execute=True):
        rest_view = PUBLISHERS[event_type](debate)
    # then exactly that event was published, in the documented shape
    [(published_type, data)] = published(debate.pk)
    assert published_type == event_type
    validate_event(event_type, data)
    # and an object travels as its REST representation
    if rest_view is not None:
        assert data == rest_view(debate_representation(debate_id=debate.pk))


@pytest.fixture
def debate_with_turns(transactional_db, user):
    """A debate with a participant and a stored turn, for the ``initial`` event."""
    debate = DebateFactory(owner=user)
    MessageFactory(participant=ParticipantFactory(debate=debate))
    return debate


@pytest.mark.anyio
async def test_initial_is_the_rest_detail_with_the_stream_position(
    debate_with_turns, user, settings
):
    # given the owner's session (in-process delivery: no Redis subscriber on this loop)
    del settings.EVENTSTREAM_REDIS
    client = AsyncClient()
    await client.aforce_login(user)
    debate = debate_with_turns
    # when the owner connects to the stream
    response = await client.get(f"/api/debates/{debate.pk}/stream")
    try:
        first = (await anext(aiter(response.streaming_content))).decode()
    finally:
        await response.streaming_content.aclose()
    detail = await sync_to_async(debate_representation)(debate_id=debate.pk)
    await sync_to_async(connections.close_all)()
    # then the first event is initial, carrying the REST detail and the stream position
    assert response.status_code == 200
    [initial] = [parse(block) for block in first.split("\n\n") if block.startswith("event:")]
    assert initial.type == "initial"
    validate_event("initial", initial.json)
    assert initial.json == {**detail, "event_id": f"debate-{debate.pk}:0"}
    assert initial.id == f"debate-{debate.pk}:0"


def parse(block: str) -> SSEEvent:
    """Return one SSE event from its text."""
    fields = dict(line.split(": ", 1) for line in block.splitlines())
    return SSEEvent(fields["event"], fields.get("id"), fields["data"])
