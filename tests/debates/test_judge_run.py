"""A debate with a judge run by the real Celery canvas: the judge's steps are in its plan
(a summary after each round but the last, the scores after the votes, before the
consensus) and run as tasks; a judge that fails leaves the debate to complete."""

from __future__ import annotations

import pytest

from debates.models import DebateStatus, JudgeCall, JudgeScore
from debates.selectors import debate_representation
from debates.services import debate_advance, debate_start
from tests.debates.conftest import wait_for, wait_until_finished
from tests.debates.test_judge import script_judge
from tests.fakes.llm_server import Reply

pytestmark = pytest.mark.django_db(transaction=True)


def kinds(detail: dict) -> list[tuple[str, int | None, str]]:
    return [(step["kind"], step["round"], step["status"]) for step in detail["steps"]]


def test_the_judges_steps_run_in_the_plan_and_their_summaries_reach_later_rounds(
    celery_worker, llm, make_debate, judge_model
):
    # given a 3x3 debate with a judge
    script_judge(llm, {"P1": (8, 8, 8), "P2": (6, 6, 6), "P3": (4, 4, 4)})
    debate = make_debate(rounds=3, judge={"ai_model": judge_model.pk})
    # when it is started and the worker runs it
    debate_start(debate_id=debate.pk)
    finished = wait_until_finished(debate.pk)
    # then it completed, every judge step done in its place in the plan
    assert finished.status == DebateStatus.COMPLETED
    detail = debate_representation(debate_id=debate.pk)
    judge_steps = [step for step in kinds(detail) if step[0].startswith("judge")]
    assert judge_steps == [
        ("judge_round", 1, "done"),
        ("judge_round", 2, "done"),
        ("judge_final", None, "done"),
    ]
    order = [kind for kind, _, _ in kinds(detail)]
    assert order.index("judge_round") == order.index("rebuttal") - 1
    assert order[-2:] == ["judge_final", "consensus"]
    # and each summary was asked after its round and read by every turn of the next
    prompts = [r.prompt for r in llm.requests]
    for round_number in (1, 2):
        asked = next(i for i, p in enumerate(prompts) if f"Summarise round {round_number}" in p)
        turns = [i for i, p in enumerate(prompts) if f"round {round_number + 1}/3. You are" in p]
        assert len(turns) == 3 and min(turns) > asked
        assert all(f"SUMMARY-MARKER-{round_number}" in prompts[i] for i in turns)
        assert all("## The debate so far" not in prompts[i] for i in turns)
    # and the scores are in the detail
    assert [s["score"] for s in detail["judge"]["scores"]] == [0.8, 0.6, 0.4]
    assert [s["round"] for s in detail["judge"]["summaries"]] == [1, 2]
    assert len(llm.requests) == 9 + 3 + 3


def test_a_judge_answering_500_leaves_a_completed_debate_with_full_history(
    celery_worker, llm, make_debate, judge_model
):
    # given a judge whose every call fails
    llm.add_rule(Reply.server_error(match="You are the judge of a debate"))
    debate = make_debate(rounds=3, judge={"ai_model": judge_model.pk})
    # when it runs
    debate_start(debate_id=debate.pk)
    finished = wait_until_finished(debate.pk)
    # then it completed, the judge's steps failed, later rounds had the full history
    assert finished.status == DebateStatus.COMPLETED
    detail = debate_representation(debate_id=debate.pk)
    assert [step for step in kinds(detail) if step[0].startswith("judge")] == [
        ("judge_round", 1, "failed"),
        ("judge_round", 2, "failed"),
        ("judge_final", None, "failed"),
    ]
    for request in llm.requests:
        if "round 3/3. You are" in request.prompt:
            assert "## The debate so far\n[round 1] P1 bull:" in request.prompt
    assert set(JudgeCall.objects.filter(debate=debate).values_list("status", flat=True)) == {
        "error"
    }
    assert set(JudgeScore.objects.filter(debate=debate).values_list("missing", flat=True)) == {
        "judge call failed: server_error"
    }
    assert len(detail["decisions"]) == 3


def test_in_the_manual_pace_each_judge_step_waits_for_its_advance(
    celery_worker, llm, make_debate, judge_model
):
    # given a 2-round debate with a judge in the manual pace
    script_judge(llm, {"P1": (5, 5, 5), "P2": (5, 5, 5), "P3": (5, 5, 5)}, rounds=2)
    debate = make_debate(rounds=2, pace="manual", judge={"ai_model": judge_model.pk})
    debate_start(debate_id=debate.pk)
    held_at = []
    # when each step is advanced to in turn, once the debate is held before it
    while True:
        wait_for(lambda: _held_or_done(debate.pk), timeout=30)
        detail = debate_representation(debate_id=debate.pk)
        if detail["status"] == "completed" and not detail["can_advance"]:
            break
        step = detail["steps"][detail["current_step"]]
        held_at.append((step["kind"], step["round"], step["status"]))
        debate_advance(debate_id=debate.pk)
    # then the debate was held before each judge step, which then ran, and completed
    assert ("judge_round", 1, "pending") in held_at
    assert ("judge_final", None, "pending") in held_at
    kinds_done = [(k, r) for k, r, s in kinds(detail) if k.startswith("judge") and s == "done"]
    assert kinds_done == [("judge_round", 1), ("judge_final", None)]
    assert JudgeScore.objects.filter(debate=debate, score=0.5).count() == 3


def _held_or_done(debate_id: int) -> bool:
    detail = debate_representation(debate_id=debate_id)
    return detail["can_advance"] or detail["status"] in ("completed", "failed", "cancelled")
