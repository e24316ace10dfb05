"""A debate of simulated models on the bundled dataset: a participant gives way to a
confident majority of the others now and then, so the debate can decide otherwise than
its round-1 majority, and the same debate run twice says and decides the same."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest

from debates.engine.consensus import round1_majority
from debates.engine.types import CoinDecision
from debates.models import Ballot, Debate, Message
from debates.services import DebateInput, debate_create, debate_start, debates_delete
from tests.api.conftest import run_steps
from tests.debates.conftest import number_debates_from
from tests.debates.factories import AIModelFactory
from tests.strategies.factories import StrategyFactory

# The simulated model seeds its draws by the debate's id, the seat and the turn: both runs
# of the debate take this id.
DEBATE_ID = 4242
AS_OF = datetime(2024, 8, 5, 16, tzinfo=UTC)


def _run(user) -> Debate:
    """Run a debate of three simulated seats over two rounds at ``AS_OF``."""
    number_debates_from(DEBATE_ID)
    model = AIModelFactory(owner=user)
    data = DebateInput(
        name="Simulated",
        strategy=StrategyFactory(owner=user).pk,
        symbol="BTCUSDT",
        max_rounds=2,
        participants=[
            {"ai_model": model.pk, "personality": personality}
            for personality in ("bull", "bear", "analyst")
        ],
        as_of=AS_OF,
    )
    debate = debate_create(owner=user, data=data)
    debate_start(debate_id=debate.pk)
    return run_steps(debate.pk)


def _said(debate: Debate) -> list[tuple]:
    """Return every turn's and ballot's text, in order, then the decisions."""
    turns = Message.objects.filter(debate=debate).order_by("round", "participant__speak_order")
    ballots = Ballot.objects.filter(debate=debate).order_by("participant__speak_order")
    return [
        *((m.round, m.participant.speak_order, m.content) for m in turns),
        *(("vote", b.participant.speak_order, b.content) for b in ballots),
        *debate.decisions.order_by("symbol").values_list("symbol", "action", "confidence"),
    ]


def _moves(said: list[tuple]) -> set[tuple]:
    """Return each (turn, seat, coin, action) where a participant said it gave way."""
    moved = re.compile(r"^(\w+USDT): .* I move to (\w+)\.", re.MULTILINE)
    return {(turn, seat, *found) for turn, seat, text in said[:-3] for found in moved.findall(text)}


def _round1(debate: Debate) -> dict[str, str]:
    """Return what the round-1 openings decide on each coin by the consensus rule."""
    openings = {
        str(speaker): [CoinDecision.from_dict(d) for d in said]
        for speaker, said in Message.objects.filter(debate=debate, round=1)
        .order_by("participant__speak_order")
        .values_list("participant_id", "decisions")
    }
    return {r.symbol: r.action.value for r in round1_majority(openings, debate.symbols)}


@pytest.mark.django_db
def test_a_seeded_simulated_debate_gives_way_and_runs_the_same_twice(user):
    # when a debate of simulated bull, bear and analyst runs
    first = _run(user)
    said = _said(first)
    # then participants gave way to the others in round 2 and in a vote, saying so, on
    # the coins where a confident majority stood against them; labelled simulated
    assert first.status == "completed"
    assert _moves(said) == {
        (2, 0, "ETHUSDT", "wait"),
        (2, 0, "SOLUSDT", "wait"),
        (2, 1, "ETHUSDT", "wait"),
        (2, 2, "BTCUSDT", "open_short"),
        (2, 2, "SOLUSDT", "open_short"),
        ("vote", 0, "BTCUSDT", "wait"),
    }
    assert all("\nSimulated " in text for *_, text in said[:-3])
    # and the debate decided otherwise than its round-1 majority on two coins of three
    decided = dict(first.decisions.values_list("symbol", "action"))
    assert decided == {"BTCUSDT": "open_short", "ETHUSDT": "wait", "SOLUSDT": "open_short"}
    assert _round1(first) == {"BTCUSDT": "wait", "ETHUSDT": "wait", "SOLUSDT": "wait"}
    # when the same debate runs again
    debates_delete(debates=Debate.objects.filter(pk=first.pk))
    again = _run(user)
    # then it said and decided exactly the same
    assert again.pk == first.pk
    assert _said(again) == said
