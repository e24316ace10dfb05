"""The state machine decides where a debate goes after each turn, from its facts alone."""

from __future__ import annotations

import pytest

from debates.engine import machine
from debates.engine.machine import Failure, Rounds, State

SEATS = (11, 12, 13)


def rounds(turns, *, current_round=1, max_rounds=3) -> Rounds:
    """Return the facts of a 3-seat running debate with ``turns`` (round, seat, status)."""
    return Rounds("running", current_round, max_rounds, SEATS, tuple(turns))


def test_an_opening_that_leaves_the_round_open_names_no_speaker():
    facts = rounds([(1, 12, "ok")])
    assert machine.after_turn(facts, 1) == State("running", "opening", 1, None)


def test_a_rebuttal_names_the_first_seat_yet_to_speak_in_its_round():
    openings = [(1, seat, "ok") for seat in SEATS]
    facts = rounds([*openings, (2, 11, "ok")], current_round=2)
    assert machine.after_turn(facts, 2) == State("running", "rebuttal", 2, 12)


def test_the_last_opening_opens_round_two_with_its_first_speaker():
    facts = rounds([(1, seat, "ok") for seat in SEATS])
    assert machine.after_turn(facts, 1) == State(
        "running", "rebuttal", 2, 11, round_ended=1, round_started=2
    )


def test_the_last_turn_of_the_last_round_begins_the_votes():
    turns = [(r, seat, "ok") for r in (1, 2) for seat in SEATS]
    facts = rounds(turns, current_round=2, max_rounds=2)
    assert machine.after_turn(facts, 2) == State("voting", "voting", 2, None, round_ended=2)


def test_the_votes_begin_early_when_the_round_close_says_so():
    facts = rounds([(1, seat, "ok") for seat in SEATS])
    assert machine.after_turn(facts, 1, votes_now=True) == State(
        "voting", "voting", 1, None, round_ended=1
    )


def test_a_round_whose_every_turn_failed_fails_the_debate():
    facts = rounds([(1, seat, "error") for seat in SEATS])
    failure = Failure("round 1", "round_failed", "Every turn of round 1 failed.")
    assert machine.after_turn(facts, 1) == State(
        "failed", "opening", 1, None, failure, round_ended=1
    )


def test_rounds_that_end_with_fewer_than_two_answering_fail_the_debate():
    turns = [(1, 11, "ok"), (1, 12, "error"), (1, 13, "skipped")]
    turns += [(2, 11, "ok"), (2, 12, "error"), (2, 13, "error")]
    facts = rounds(turns, current_round=2, max_rounds=2)
    state = machine.after_turn(facts, 2)
    assert (state.status, state.failure.code) == ("failed", "not_enough_participants")
    assert state.failure.message == "Only 1 participant(s) ever answered; a debate needs 2."


def test_a_late_turn_of_an_earlier_round_keeps_the_current_round():
    openings = [(1, seat, "ok") for seat in SEATS]
    facts = rounds([*openings, (2, 11, "ok")], current_round=2)
    assert machine.after_turn(facts, 1) == State("running", "rebuttal", 2, 12)


@pytest.mark.parametrize(
    ("turns", "round_number", "max_rounds", "expected"),
    [
        ([(1, s, "ok") for s in SEATS], 1, 3, True),
        ([(1, 11, "ok")], 1, 3, False),  # the round is still open
        ([(1, s, "error") for s in SEATS], 1, 3, False),  # no answer: the round fails
        ([(r, s, "ok") for r in (1, 2) for s in SEATS], 2, 2, False),  # the last round
    ],
)
def test_a_round_may_stop_the_rounds_early_only_when_it_closes_answered_before_the_last(
    turns, round_number, max_rounds, expected
):
    facts = rounds(turns, current_round=round_number, max_rounds=max_rounds)
    assert machine.may_stop_early(facts, round_number) is expected


@pytest.mark.parametrize(
    ("phase", "status"),
    [
        ("opening", "running"),
        ("rebuttal", "running"),
        ("voting", "voting"),
        ("consensus", "voting"),
    ],
)
def test_a_retried_debate_goes_back_to_the_rounds_or_the_votes(phase, status):
    assert machine.retry_status(phase) == status


@pytest.mark.parametrize(
    ("status", "kind", "to"),
    [
        ("failed", "voting", "voting"),
        ("failed", "rebuttal", "running"),
        ("failed", "prepare", "running"),
        ("running", "rebuttal", "running"),
        ("voting", "voting", "voting"),
    ],
)
def test_a_step_run_again_takes_a_failed_debate_back_and_leaves_an_active_one(status, kind, to):
    assert machine.retry_step_status(status, kind) == to
