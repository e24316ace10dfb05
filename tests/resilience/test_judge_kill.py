"""A worker killed with SIGKILL during a judge call loses and duplicates nothing.

A 3x3 debate with a judge runs on a worker process killed, with every pool child, while
the judge's summary of round 1, or its scoring call, is in flight; a new worker then
starts. The debate must complete with one row per turn, vote, judge call and judge
score, every judge step done, and no judge call asked again once it was stored.

As in tests/resilience/test_kill.py, the workers' step claims and model slots outlive
them by 6 s instead of 15, so the new worker resumes the debate sooner.
"""

from __future__ import annotations

from collections import Counter

import pytest

from debates.models import Debate, JudgeCall, JudgeScore, Message, Vote
from debates.selectors import debate_representation
from debates.services import debate_start
from tests.debates.conftest import wait_for, wait_until_finished, worker_processes
from tests.debates.test_judge import JUDGE_MODEL, script_judge

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

SHORT_LEASES = {"STEP_CLAIM_TTL_S": "6"}
ASKS = {"round summary": "Summarise round 1", "scores": "Score every participant"}


def judge_in_flight(llm, ask: str) -> bool:
    return any(
        r.body.get("model") == JUDGE_MODEL and ask in r.prompt and r.status is None
        for r in llm.requests
    )


@pytest.mark.parametrize("point", list(ASKS))
def test_sigkill_during_a_judge_call_loses_and_duplicates_nothing(
    point, llm, make_debate, judge_model
):
    # given a 3x3 debate with a judge, on one worker
    llm.set_latency(0.3)
    script_judge(llm, {"P1": (7, 7, 7), "P2": (5, 5, 5), "P3": (3, 3, 3)})
    debate = make_debate(judge={"ai_model": judge_model.pk})
    with worker_processes(**SHORT_LEASES) as workers:
        workers.start("first")
        debate_start(debate_id=debate.pk)
        # when the worker dies with SIGKILL while the judge's call is in flight
        wait_for(lambda: judge_in_flight(llm, ASKS[point]), timeout=60, every=0.01)
        workers.kill("first")
        # and a new worker starts
        workers.start("second")
        finished = wait_until_finished(debate.pk, timeout=120)

    # then the debate completed with one row per turn, vote, judge call and score
    assert finished.status == "completed", finished.error
    turns = Counter(Message.objects.filter(debate=debate).values_list("round", "participant"))
    assert len(turns) == 9 and set(turns.values()) == {1}
    assert Vote.objects.filter(debate=debate).count() == 9
    calls = list(
        JudgeCall.objects.filter(debate=debate)
        .order_by("round", "kind")
        .values_list("kind", "round", "judge", "status")
    )
    assert calls == [
        ("round_summary", 1, 0, "ok"),
        ("round_summary", 2, 0, "ok"),
        ("scores", 3, 0, "ok"),
    ]
    assert JudgeScore.objects.filter(debate=debate, score__isnull=False).count() == 3
    # and every judge step is done in the plan
    steps = debate_representation(debate_id=debate.pk)["steps"]
    assert {s["status"] for s in steps if s["kind"].startswith("judge")} == {"done"}
    # and no judge call was asked again after it had been stored
    stored = {
        ask: JudgeCall.objects.get(
            debate=debate, kind=kind, round=round_number
        ).created_at.timestamp()
        for ask, kind, round_number in (
            ("Summarise round 1", "round_summary", 1),
            ("Summarise round 2", "round_summary", 2),
            ("Score every participant", "scores", 3),
        )
    }
    for request in llm.requests:
        for ask, at in stored.items():
            if request.body.get("model") == JUDGE_MODEL and ask in request.prompt:
                assert request.arrived_at < at, f"{ask!r} asked after it was stored"
    assert Debate.objects.get(pk=debate.pk).status == "completed"
