"""A debate whose votes await the book its caller gives (a backtest step at ``book:
aware``): its rounds run, it tells its caller when its votes wait, and only the book
given releases them."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from arena.exceptions import InvalidState
from debates.engine.book import Book
from debates.models import Ballot, Debate
from debates.services import DebateInput, debate_advance, debate_create, debate_start
from debates.services.books import debate_book_give
from debates.services.consensus import consensus_finalize
from debates.services.lifecycle import debate_prepare
from debates.services.steps import turn_run, vote_run
from debates.state import available_actions
from tests.debates.factories import fake_llm_seats
from tests.strategies.factories import StrategyFactory

pytestmark = pytest.mark.django_db

AT = datetime(2024, 8, 10, 3, tzinfo=UTC)
BOOK = Book(
    as_of="2024-08-10T03:00:00Z",
    equity=990.0,
    available=990.0,
    margin_in_use=0.0,
    realized_pnl_today=-10.0,
)


def test_its_rounds_run_it_tells_its_caller_and_only_the_book_releases_its_votes(
    user, llm, monkeypatch
):
    told: list[tuple[str, tuple]] = []
    monkeypatch.setattr(
        "debates.services.transitions.send_on_commit",
        lambda task: told.append((task.name, task.args)),
    )
    # given a started two-seat debate awaiting its book, naming a task for its caller
    data = DebateInput(
        name="A step",
        strategy=StrategyFactory(owner=user).pk,
        symbol="BTCUSDT",
        max_rounds=2,
        participants=fake_llm_seats(user, llm, ("bull", "bear"), timeout_seconds=10),
        as_of=AT,
    )
    debate = debate_create(owner=user, data=data, caller_task="tests.told", awaits_book=True)
    debate_start(debate_id=debate.pk)
    # when its prepare step and both rounds run
    seats = list(debate.participants.order_by("speak_order").values_list("pk", flat=True))
    debate_prepare(debate_id=debate.pk)
    for round_number in (1, 2):
        for seat in seats:
            turn_run(
                debate_id=debate.pk, round_number=round_number, participant_id=seat, holder="t"
            )
    # then it is voting, held before its votes (prepare and four turns), and told its
    # caller once, with no book and nothing to advance to
    held = Debate.objects.get(pk=debate.pk)
    assert (held.status, held.steps_released, held.book) == ("voting", 5, None)
    assert told == [("tests.told", (debate.pk,))]
    assert "advance" not in available_actions(held)
    with pytest.raises(InvalidState):
        debate_advance(debate_id=debate.pk, owner=user)
    # and a vote sent now does not run
    vote_run(debate_id=debate.pk, participant_id=seats[0], holder="t")
    assert not Ballot.objects.filter(debate_id=debate.pk).exists()

    # when its caller gives the book, twice
    given = debate_book_give(debate_id=debate.pk, book=BOOK.to_dict())
    again = debate_book_give(debate_id=debate.pk, book=BOOK.to_dict())
    # then the first stored it with each voter's (empty) record and released every step;
    # the second changed nothing
    assert again is None and given is not None
    stored = Debate.objects.get(pk=debate.pk)
    assert (stored.awaits_book, stored.steps_released) == (False, None)
    assert Book.from_dict(stored.book) == BOOK
    assert stored.track_record == {str(seat): [] for seat in seats}
    # and the votes, which see the book, complete the debate
    for seat in seats:
        vote_run(debate_id=debate.pk, participant_id=seat, holder="t")
    consensus_finalize(debate_id=debate.pk)
    assert Debate.objects.get(pk=debate.pk).status == "completed"
    votes = [r.prompt for r in llm.requests if "casts a final vote" in r.prompt]
    assert len(votes) == 2 and all("realised P&L today -10.00 USDT" in p for p in votes)


def test_a_book_given_before_the_rounds_end_is_refused(user, llm):
    data = DebateInput(
        name="A step",
        strategy=StrategyFactory(owner=user).pk,
        symbol="BTCUSDT",
        participants=fake_llm_seats(user, llm, ("bull", "bear"), timeout_seconds=10),
        as_of=AT,
    )
    debate = debate_create(owner=user, data=data, awaits_book=True)
    debate_start(debate_id=debate.pk)
    assert debate_book_give(debate_id=debate.pk, book=BOOK.to_dict()) is None
    assert Debate.objects.get(pk=debate.pk).book is None
