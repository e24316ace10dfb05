"""List and detail endpoints run a fixed number of queries, whatever the number of rows."""

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token

from debates import events
from debates.models import Debate
from tests.debates.factories import (
    AIModelFactory,
    BallotFactory,
    DebateFactory,
    DecisionFactory,
    MessageFactory,
    ParticipantFactory,
    ScheduleFactory,
    VoteFactory,
)
from tests.strategies.factories import StrategyFactory
from tests.traders.factories import ExecutionFactory, OrderFactory, PositionFactory, TraderFactory

pytestmark = pytest.mark.django_db

COINS = [
    "BTCUSDT", "ETHUSDT", "SOLUSDT", "XRPUSDT", "DOGEUSDT",
    "AVAXUSDT", "LINKUSDT", "ADAUSDT", "DOTUSDT", "TRXUSDT",
]  # fmt: skip


def _debates(user: Any, trader: Any, rows: int) -> str:
    for _ in range(rows):
        decision = DecisionFactory(debate__owner=user)
        ExecutionFactory(decision=decision, trader=trader)
    return "/api/debates"


def _executions(user: Any, trader: Any, rows: int) -> str:
    for _ in range(rows):
        ExecutionFactory(decision__debate__owner=user, trader=trader)
    return f"/api/traders/{trader.pk}/executions"


def _debate_with_children(user: Any, trader: Any, rows: int) -> int:
    """Return a debate with ``rows`` messages, ``rows`` votes and up to 10 decisions."""
    debate = DebateFactory(owner=user, status="completed")
    seats = [
        ParticipantFactory(debate=debate, ai_model__owner=user, speak_order=i)
        for i in range(min(rows, 5))
    ]
    cells = [(round_number, seat) for round_number in range(1, 6) for seat in seats][:rows]
    for round_number, seat in cells:
        MessageFactory(participant=seat, round=round_number)
    votes = [(seat, coin) for seat in seats for coin in COINS][:rows]
    ballots = {seat.pk: BallotFactory(participant=seat) for seat in seats}
    for seat, coin in votes:
        VoteFactory(ballot=ballots[seat.pk], symbol=coin)
    for index, coin in enumerate(COINS[: min(rows, 10)]):
        decision = DecisionFactory(debate=debate, symbol=coin, is_primary=index == 0)
        ExecutionFactory(decision=decision, trader=trader)
    return debate.pk


# name: (make ``rows`` rows and return the path, queries expected). A list is a count
# and a page, plus the trader it belongs to and any prefetch (the debates' page is their
# ids, then the rows not stored yet with their decisions and executions, and what their
# plans of steps read: their seats, turns and ballots); the
# debate detail is the debate's status with the stream's latest event id, then (when no
# stored rendering serves) the debate with its strategy and judge model, participants,
# messages, votes, ballots, decisions, judge calls and judge scores, and its spend (one
# sum for each kind of stored call: turns, ballots, judge calls, dropped calls).
LISTS: dict[str, tuple[Callable[[Any, Any, int], str], int]] = {
    "debates": (_debates, 7),
    "ai-models": (
        lambda u, t, n: AIModelFactory.create_batch(n, owner=u) and "/api/ai-models",
        2,
    ),
    "strategies": (
        lambda u, t, n: StrategyFactory.create_batch(n, owner=u) and "/api/strategies",
        2,
    ),
    "traders": (lambda u, t, n: TraderFactory.create_batch(n, owner=u) and "/api/traders", 2),
    "schedules": (
        lambda u, t, n: ScheduleFactory.create_batch(n, owner=u) and "/api/schedules",
        2,
    ),
    "positions": (
        lambda u, t, n: (
            [PositionFactory(trader=t, symbol=f"C{i}USDT") for i in range(n)]
            and f"/api/traders/{t.pk}/positions"
        ),
        3,
    ),
    "orders": (
        lambda u, t, n: OrderFactory.create_batch(n, trader=t) and f"/api/traders/{t.pk}/orders",
        3,
    ),
    "executions": (_executions, 3),
    # The debate's children, its ballots among them (its plan of steps reads them).
    "debate detail": (lambda u, t, n: f"/api/debates/{_debate_with_children(u, t, n)}", 13),
    "debate messages": (
        lambda u, t, n: f"/api/debates/{_debate_with_children(u, t, n)}/messages",
        8,
    ),
    "debate votes": (
        lambda u, t, n: f"/api/debates/{_debate_with_children(u, t, n)}/votes",
        8,
    ),
}


def _queries(api: Any, path: str) -> int:
    with CaptureQueriesContext(connection) as captured:
        response = api.get(path)
    assert response.status_code == 200
    return len(captured.captured_queries)


@pytest.mark.parametrize("name", LISTS)
def test_queries_do_not_grow_with_rows(api, user, other_user, name):
    # given an endpoint showing 1 row for one user and 50 rows for another
    make, expected = LISTS[name]
    one_path = make(user, TraderFactory(owner=user), 1)
    fifty_client = api.__class__(api.answers)
    fifty_client.force_authenticate(other_user)
    fifty_path = make(other_user, TraderFactory(owner=other_user), 50)
    # when each reads it
    one, fifty = _queries(api, one_path), _queries(fifty_client, fifty_path)
    # then both run the same, fixed number of queries
    assert (one, fifty) == (expected, expected)


@pytest.mark.parametrize(
    ("cache_shared", "rows", "queries"),
    [(True, 50, 0), (False, 5, 1)],
    ids=["shared-cache", "no-shared-cache"],
)
def test_a_finished_debates_detail_read_again_is_served_from_its_stored_rendering(
    api, user, settings, cache_shared, rows, queries
):
    """With a shared cache no query serves the same bytes (the stream's version is in
    the cache); without one (the embedded default), one query: the debate's status and
    its latest event id."""
    # given a finished debate with ``rows`` messages whose detail was read once
    settings.CACHE_SHARED = cache_shared
    path = f"/api/debates/{_debate_with_children(user, TraderFactory(owner=user), rows)}"
    first = api.get(path)
    # when it is read again
    with CaptureQueriesContext(connection) as captured:
        again = api.get(path)
    # then that many queries serve the same bytes
    assert len(captured.captured_queries) == queries
    assert again.content == first.content


def test_a_page_of_finished_debates_read_again_is_served_from_their_stored_rows(
    api, user, django_capture_on_commit_callbacks
):
    # given a page of finished debates, one of them active, read once
    trader = TraderFactory(owner=user)
    _debates(user, trader, 25)
    active = DebateFactory(owner=user, status="running", phase="rounds", name="active")
    first = api.get("/api/debates")
    # when it is read again
    with CaptureQueriesContext(connection) as captured:
        again = api.get("/api/debates")
    # then the count and the ids, and the active debate's row with what its plan reads
    assert len(captured.captured_queries) == 2 + 5
    assert again.content == first.content
    # and when a finished debate's stream moves on (an event published), its row shows it
    finished = Debate.objects.filter(owner=user, status="completed").latest("created_at")
    Debate.objects.filter(pk=finished.pk).update(name="renamed")
    Debate.objects.filter(pk=active.pk).update(status="completed")
    assert [r["name"] for r in api.get("/api/debates").json()["results"][:2]] == [
        "active",
        finished.name,
    ]
    with django_capture_on_commit_callbacks(execute=True):
        events.status_changed(Debate.objects.get(pk=finished.pk))
    rows = api.get("/api/debates").json()["results"]
    assert rows[1]["name"] == "renamed"
    # and the active debate, now finished, is stored: two queries for the whole page
    with CaptureQueriesContext(connection) as captured:
        api.get("/api/debates")
    assert len(captured.captured_queries) == 2
    # and the stored rows are in the page indented, or in the browsable API, too
    compact = api.get("/api/debates")
    indented = api.get("/api/debates", HTTP_ACCEPT="application/json; indent=2")
    assert indented.status_code == 200 and b'\n  "count"' in indented.content
    assert json.loads(indented.content) == json.loads(compact.content)
    browsable = api.get("/api/debates", HTTP_ACCEPT="text/html")
    assert browsable.status_code == 200 and rows[1]["name"].encode() in browsable.content


def test_a_stored_detail_asked_with_a_token_takes_no_query(anon, user):
    # given a finished debate whose detail was read once with the user's token
    path = f"/api/debates/{_debate_with_children(user, TraderFactory(owner=user), 5)}"
    anon.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    first = anon.get(path)
    # when it is read again with that token
    with CaptureQueriesContext(connection) as captured:
        again = anon.get(path)
    # then neither the token nor the detail took a query
    assert (again.status_code, len(captured.captured_queries)) == (200, 0)
    assert again.content == first.content
