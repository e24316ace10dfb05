"""The debate detail served fast: an ETag and 304 while nothing changed, a finished
debate's stored rendering replaced when an event is published or a row it shows changes,
the raw candles only on request."""

from __future__ import annotations

import pytest

from tests.debates.factories import (
    DebateFactory,
    DecisionFactory,
    MessageFactory,
    ParticipantFactory,
    ScheduleFactory,
)
from tests.traders.factories import TraderFactory
from traders.services import execution_request

pytestmark = pytest.mark.django_db

CANDLE = {"open_time": 1725483600000, "open": 1.0, "high": 2.0, "low": 0.5, "close": 1.5}
SNAPSHOT = {
    "source": "dataset",
    "as_of": "2024-09-05T00:00:00Z",
    "coins": [
        {
            "symbol": "BTCUSDT",
            "price": 57970.9,
            "timeframes": [
                {"timeframe": "1h", "candles": [CANDLE] * 3, "indicators": {"rsi14": 55.9}}
            ],
        }
    ],
    "notes": [],
}


def test_a_finished_debate_answers_304_to_its_etag_until_an_execution_changes_it(
    api, user, django_capture_on_commit_callbacks
):
    # given a completed debate with an executable decision, read once
    debate = DebateFactory(owner=user, status="completed", phase="done")
    DecisionFactory(debate=debate, action="open_long")
    first = api.get(f"/api/debates/{debate.pk}")
    etag = first["ETag"]
    assert first.status_code == 200 and etag
    # when it is read again with that ETag
    again = api.get(f"/api/debates/{debate.pk}", HTTP_IF_NONE_MATCH=etag)
    # then it is a 304 without a body, under the same ETag
    assert (again.status_code, again.content, again["ETag"]) == (304, b"", etag)
    # when its decision is executed (an execution event is published)
    trader = TraderFactory(owner=user)
    with django_capture_on_commit_callbacks(execute=True):
        execution = execution_request(owner=user, debate_id=debate.pk, trader_id=trader.pk)
    changed = api.get(f"/api/debates/{debate.pk}", HTTP_IF_NONE_MATCH=etag)
    # then the old ETag no longer matches: the new detail shows the execution
    assert changed.status_code == 200
    assert changed["ETag"] != etag
    assert changed.json()["decisions"][0]["execution"]["id"] == execution.pk


def test_an_active_debates_etag_follows_its_content(api, user):
    # given a running debate, read once
    debate = DebateFactory(owner=user, status="running", phase="opening")
    participant = ParticipantFactory(debate=debate, ai_model__owner=user, speak_order=0)
    etag = api.get(f"/api/debates/{debate.pk}")["ETag"]
    assert api.get(f"/api/debates/{debate.pk}", HTTP_IF_NONE_MATCH=etag).status_code == 304
    # when a turn is stored
    MessageFactory(participant=participant)
    # then the ETag changes with it
    answer = api.get(f"/api/debates/{debate.pk}", HTTP_IF_NONE_MATCH=etag)
    assert answer.status_code == 200
    assert len(answer.json()["messages"]) == 1


def test_the_detail_leaves_the_raw_candles_out_unless_asked(api, user):
    # given a finished debate whose snapshot holds candles
    debate = DebateFactory(owner=user, status="completed", market_snapshot=SNAPSHOT)
    # when its detail is read, and read with ?include=snapshot
    summary = api.get(f"/api/debates/{debate.pk}").json()["market_snapshot"]
    full = api.get(f"/api/debates/{debate.pk}?include=snapshot")
    # then the default keeps the prices and indicators without the candles
    frame = summary["coins"][0]["timeframes"][0]
    assert frame == {"timeframe": "1h", "indicators": {"rsi14": 55.9}}
    assert summary["coins"][0]["price"] == 57970.9
    assert summary["as_of"] == "2024-09-05T00:00:00Z"
    # and the full snapshot has them, under an ETag of its own; both say how many
    # decimals the coin's prices have (0.5 and 1.5: one)
    assert summary["coins"][0]["price_decimals"] == 1
    expected = {**SNAPSHOT, "coins": [{**SNAPSHOT["coins"][0], "price_decimals": 1}]}
    assert full.json()["market_snapshot"] == expected
    assert full["ETag"] != api.get(f"/api/debates/{debate.pk}")["ETag"]


def test_an_unknown_include_is_a_400_naming_it(api, user):
    debate = DebateFactory(owner=user, status="completed")
    response = api.get(f"/api/debates/{debate.pk}?include=everything")
    assert response.status_code == 400
    assert set(response.json()["fields"]) == {"include"}


def test_another_users_debate_is_a_404_even_with_a_stored_rendering(api, user, other_user):
    # given another user's finished debate, rendered for its owner
    debate = DebateFactory(owner=other_user, status="completed")
    owner_client = api.__class__(api.answers)
    owner_client.force_authenticate(other_user)
    assert owner_client.get(f"/api/debates/{debate.pk}").status_code == 200
    # when the user asks for it, then it is not found
    response = api.get(f"/api/debates/{debate.pk}")
    assert (response.status_code, response.json()["code"]) == (404, "not_found")


def test_a_deleted_debate_is_a_404_at_once_though_its_rendering_was_stored(
    api, user, django_capture_on_commit_callbacks
):
    # given a finished debate whose detail is stored
    debate = DebateFactory(owner=user, status="completed", phase="done")
    assert api.get(f"/api/debates/{debate.pk}").status_code == 200
    # when it is deleted
    with django_capture_on_commit_callbacks(execute=True):
        assert api.delete(f"/api/debates/{debate.pk}").status_code == 204
    # then its detail is not found any more
    response = api.get(f"/api/debates/{debate.pk}")
    assert (response.status_code, response.json()["code"]) == (404, "not_found")


def test_a_failed_debate_retried_shows_its_new_state_at_once(
    api, user, django_capture_on_commit_callbacks
):
    # given a failed debate whose detail is stored
    debate = DebateFactory(owner=user, status="failed", phase="rounds", max_rounds=2)
    ParticipantFactory(debate=debate)
    assert api.get(f"/api/debates/{debate.pk}").json()["status"] == "failed"
    # when it is retried (a status event is published)
    with django_capture_on_commit_callbacks(execute=True):
        retried = api.post(f"/api/debates/{debate.pk}/retry")
    # then the detail shows the debate running again
    assert retried.status_code == 200, retried.json()
    assert api.get(f"/api/debates/{debate.pk}").json()["status"] != "failed"


# Each change of a row a finished debate names, and what its detail then shows.
CHANGES = {
    "strategy-renamed": (
        lambda api, debate: api.patch(
            f"/api/strategies/{debate.strategy_id}", {"name": "Breakouts"}, format="json"
        ),
        lambda detail: detail["strategy"]["name"] == "Breakouts",
    ),
    "model-renamed": (
        lambda api, debate: api.patch(
            f"/api/ai-models/{debate.participants.get().ai_model_id}",
            {"name": "Renamed model"},
            format="json",
        ),
        lambda detail: detail["participants"][0]["ai_model_name"] == "Renamed model",
    ),
    "schedule-deleted": (
        lambda api, debate: api.delete(f"/api/schedules/{debate.schedule_id}"),
        lambda detail: detail["schedule"] is None,
    ),
    "trader-deleted": (
        lambda api, debate: api.delete(f"/api/traders/{debate.trader_id}"),
        lambda detail: detail["trader"] is None,
    ),
}


@pytest.mark.parametrize("change", CHANGES)
@pytest.mark.parametrize("shared", [True, False], ids=["shared-cache", "embedded-default"])
def test_a_finished_debate_shows_the_rows_it_names_as_they_are_now(
    api, user, settings, django_capture_on_commit_callbacks, shared, change
):
    # given a finished debate of a schedule, for a trader, its detail and its list row
    # read (stored)
    settings.CACHE_SHARED = shared
    schedule = ScheduleFactory(owner=user)
    debate = DebateFactory(
        owner=user,
        status="completed",
        phase="done",
        schedule=schedule,
        strategy=schedule.strategy,
        trader=TraderFactory(owner=user),
    )
    ParticipantFactory(debate=debate)
    path = f"/api/debates/{debate.pk}"
    before = api.get(path).json()
    api.get("/api/debates")
    # when one of the rows it names changes
    make, shows = CHANGES[change]
    with django_capture_on_commit_callbacks(execute=True):
        assert make(api, debate).status_code in (200, 204)
    # then its detail, and its list row, show that row as it is now
    assert not shows(before)
    assert shows(api.get(path).json())
    row = api.get("/api/debates").json()["results"][0]
    assert (row["schedule"], row["trader"]) == (
        None if change == "schedule-deleted" else schedule.pk,
        None if change == "trader-deleted" else debate.trader_id,
    )
