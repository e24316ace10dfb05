"""What one debate step costs the database: a fixed handful of statements.

Each step is on the critical path of a debate (rounds 2..N speak one after another),
so a statement added to it, or a column read lazily, shows here first.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from debates.models import Debate, DebateStatus, Message
from debates.services import debate_prepare, turn_run

pytestmark = pytest.mark.django_db(transaction=True)


def running(debate: Debate) -> list[int]:
    """Move a pending debate to its first round, as a start does; return its seats."""
    Debate.objects.filter(pk=debate.pk).update(status=DebateStatus.RUNNING, current_round=1)
    assert debate_prepare(debate_id=debate.pk)
    return list(debate.participants.order_by("speak_order").values_list("pk", flat=True))


def statements(step) -> list[str]:
    with CaptureQueriesContext(connection) as captured:
        step()
    return [query["sql"] for query in captured.captured_queries]


def test_a_turn_reads_three_times_and_stores_in_one_short_transaction(make_debate):
    debate = make_debate(rounds=2)
    seats = running(debate)
    for seat in seats:
        turn_run(debate_id=debate.pk, round_number=1, participant_id=seat, holder="test")

    rebuttal = statements(
        lambda: turn_run(debate_id=debate.pk, round_number=2, participant_id=seats[0], holder="t")
    )
    # Reads: the seats (with models, debate and strategy), the earlier turns, the cancel
    # check. Then one transaction under the debate's lock: its stored turns, the
    # message, the state, the events.
    assert len(rebuttal) == 3 + 7, "\n".join(rebuttal)
    assert rebuttal[3:4] + rebuttal[-1:] == ["BEGIN", "COMMIT"]
    assert sum("FOR UPDATE" in sql for sql in rebuttal) == 1

    for seat in seats[1:-1]:
        turn_run(debate_id=debate.pk, round_number=2, participant_id=seat, holder="test")
    closing = statements(
        lambda: turn_run(debate_id=debate.pk, round_number=2, participant_id=seats[-1], holder="t")
    )
    # The last turn of the last round moves the debate to voting with no extra statement.
    assert len(closing) == 3 + 7, "\n".join(closing)
    assert Debate.objects.get(pk=debate.pk).status == DebateStatus.VOTING
    assert Message.objects.filter(debate=debate).count() == 2 * len(seats)


def test_a_stored_turn_is_not_asked_again_and_costs_two_reads(make_debate, llm):
    debate = make_debate(rounds=2)
    seats = running(debate)
    turn_run(debate_id=debate.pk, round_number=1, participant_id=seats[0], holder="test")
    asked = len(llm.requests)

    again = statements(
        lambda: turn_run(debate_id=debate.pk, round_number=1, participant_id=seats[0], holder="t")
    )

    assert len(again) == 2, "\n".join(again)
    assert len(llm.requests) == asked
