"""The plan of a debate's steps, computed from its settings and what is stored (no database)."""

from __future__ import annotations

import pytest

from debates.engine import plan as plans
from debates.engine.plan import (
    PlanSettings,
    Progress,
    Seat,
    StepSpec,
    build_plan,
    register_step_kind,
    stages_to_run,
)

SEATS = (Seat(11), Seat(12), Seat(13))


def settings(rounds: int = 2, auto_execute: bool = False, seats=SEATS) -> PlanSettings:
    return PlanSettings(max_rounds=rounds, seats=seats, auto_execute=auto_execute)


def rows(plan) -> list[tuple]:
    return [(s.index, s.kind, s.round, s.speaker, s.status) for s in plan.steps]


def test_a_fresh_plan_lists_every_step_in_order_with_the_openings_and_votes_side_by_side():
    # given a 3-seat, 2-round debate that executes automatically, just started
    plan = build_plan(settings(auto_execute=True), Progress("running", {}))
    # then its steps are in order, the prepare step running and the rest pending
    assert rows(plan) == [
        (0, "prepare", None, None, "running"),
        (1, "opening", 1, 11, "pending"),
        (2, "opening", 1, 12, "pending"),
        (3, "opening", 1, 13, "pending"),
        (4, "rebuttal", 2, 11, "pending"),
        (5, "rebuttal", 2, 12, "pending"),
        (6, "rebuttal", 2, 13, "pending"),
        (7, "voting", None, 11, "pending"),
        (8, "voting", None, 12, "pending"),
        (9, "voting", None, 13, "pending"),
        (10, "consensus", None, None, "pending"),
        (11, "execution", None, None, "pending"),
    ]
    # the openings share a stage, as do the votes; each rebuttal has its own
    assert [s.stage for s in plan.steps] == [0, 1, 1, 1, 2, 3, 4, 5, 5, 5, 6, 7]
    assert (plan.current_step, plan.can_advance, plan.user_action_required) == (0, False, False)


def test_the_openings_run_together_once_the_debate_is_prepared():
    progress = Progress("running", {("prepare", None, None): "done", ("opening", 1, 12): "done"})
    plan = build_plan(settings(), progress)
    assert [s.status for s in plan.steps[:5]] == ["done", "running", "done", "running", "pending"]
    assert plan.current_step == 1


def test_a_held_debate_can_advance_once_its_released_steps_are_finished():
    # given a manual debate whose first two steps were released and ran
    records = {("prepare", None, None): "done", ("opening", 1, 11): "done"}
    plan = build_plan(settings(), Progress("running", records, released=2))
    # then it waits at the next step, which is pending, and may advance
    assert [s.status for s in plan.steps[:4]] == ["done", "done", "pending", "pending"]
    assert (plan.current_step, plan.can_advance) == (2, True)
    # while a released step still runs, it may not
    running = build_plan(settings(), Progress("running", records, released=3))
    assert running.steps[2].status == "running"
    assert running.can_advance is False


def test_a_failed_debate_is_at_the_first_failed_turn_of_its_last_round():
    records = {("prepare", None, None): "done"}
    records |= {("opening", 1, seat.id): "done" for seat in SEATS}
    records |= {("rebuttal", 2, seat.id): "failed" for seat in SEATS}
    plan = build_plan(settings(), Progress("failed", records))
    assert plan.current_step == 4
    assert [s.status for s in plan.steps[7:]] == ["pending"] * 4


def test_a_debate_failed_at_its_prepare_step_is_at_that_step():
    plan = build_plan(settings(), Progress("failed", {("prepare", None, None): "failed"}))
    assert (plan.current_step, plan.steps[0].status) == (0, "failed")


@pytest.mark.parametrize(("status", "expected"), [("cancelled", "skipped"), ("pending", "pending")])
def test_steps_never_run_are_skipped_once_cancelled(status, expected):
    plan = build_plan(settings(), Progress(status, {}))
    assert {s.status for s in plan.steps} == {expected}


def test_a_completed_debate_runs_its_execution_step_after_the_consensus():
    records = {("voting", None, seat.id): "done" for seat in SEATS}
    plan = build_plan(settings(auto_execute=True), Progress("completed", records))
    assert [s.status for s in plan.steps[-2:]] == ["skipped", "running"]
    done = build_plan(
        settings(auto_execute=True),
        Progress("completed", {**records, ("execution", None, None): "done"}),
    )
    assert done.current_step is None


def keys(stages) -> list[list[tuple]]:
    return [[(s.kind, s.round, s.speaker) for s in stage] for stage in stages]


def test_what_runs_next_is_every_stage_not_run_from_the_first_unfinished_step():
    # given a prepared debate with one opening stored
    records = {("prepare", None, None): "done", ("opening", 1, 12): "done"}
    plan = build_plan(settings(rounds=2), Progress("running", records))
    # then the other openings run side by side, then each rebuttal, the votes, the consensus
    assert keys(stages_to_run(plan)) == [
        [("opening", 1, 11), ("opening", 1, 13)],
        [("rebuttal", 2, 11)],
        [("rebuttal", 2, 12)],
        [("rebuttal", 2, 13)],
        [("voting", None, 11), ("voting", None, 12), ("voting", None, 13)],
        [("consensus", None, None)],
    ]


def test_what_runs_next_stops_at_the_released_steps():
    records = {("prepare", None, None): "done"}
    plan = build_plan(settings(), Progress("running", records, released=2))
    assert keys(stages_to_run(plan)) == [[("opening", 1, 11)]]


def test_what_runs_next_stops_with_the_stage_holding_a_persons_step():
    # given a debate whose second seat is a person's, prepared
    seats = (Seat(11), Seat(12, kind="human"), Seat(13))
    plan = build_plan(settings(seats=seats), Progress("running", {("prepare", None, None): "done"}))
    # then the models' openings run, and nothing after the stage the person's opening holds
    assert keys(stages_to_run(plan, people={12})) == [[("opening", 1, 11), ("opening", 1, 13)]]


def test_a_person_s_turn_waits_for_them_and_asks_for_their_action():
    seats = (Seat(11), Seat(12, kind="human"))
    records = {
        ("prepare", None, None): "done",
        ("opening", 1, 11): "done",
        ("opening", 1, 12): "done",
    }
    plan = build_plan(settings(seats=seats), Progress("running", records))
    assert [s.status for s in plan.steps[3:5]] == ["running", "pending"]
    records[("rebuttal", 2, 11)] = "done"
    waiting = build_plan(settings(seats=seats), Progress("running", records))
    assert waiting.steps[4].status == "waiting"
    assert (waiting.current_step, waiting.user_action_required) == (4, True)


def test_a_registered_kind_takes_its_place_in_every_round(monkeypatch):
    # given a kind summarising each round but the last, registered after the turns
    monkeypatch.setitem(plans.STEP_KINDS, "round", list(plans.STEP_KINDS["round"]))

    def summaries(settings: PlanSettings, round_number: int | None) -> list[list[StepSpec]]:
        if round_number == settings.max_rounds:
            return []
        return [[StepSpec("summary", round_number)]]

    register_step_kind("summary", part="round", build=summaries, after="opening")
    # when a 3-round plan is built
    plan = build_plan(settings(rounds=3), Progress("running", {}))
    # then the summary follows each round but the last
    kinds = [(s.kind, s.round) for s in plan.steps if s.kind in ("summary", "voting")]
    assert kinds == [("summary", 1), ("summary", 2), *[("voting", None)] * 3]
    assert [s.index for s in plan.steps if s.kind == "summary"] == [4, 8]
