"""``/metrics`` after debates run by workers: what the worker processes counted (calls,
their latency, steps, errors) reaches the web process through Redis, and the gauges
read at the scrape count the debates."""

from __future__ import annotations

import pytest
from django.db.models import Sum

from debates.models import Ballot, Message
from debates.services import debate_start
from tests.debates.conftest import (
    failed_in_round_two,
    start_worker_process,
    stop_workers,
    wait_for,
    wait_until_finished,
)
from tests.ops.conftest import sample

pytestmark = pytest.mark.django_db(transaction=True)

CALL = {"provider": "openai_compatible", "model": "fake-model"}


def stored_tokens(kind: str) -> int:
    """Return the ``kind`` tokens (prompt, completion) the turns and ballots stored."""
    column = f"{kind}_tokens"
    return sum(model.objects.aggregate(n=Sum(column))["n"] or 0 for model in (Message, Ballot))


@pytest.mark.slow
def test_a_debate_run_by_a_worker_process_is_counted(empty_counts, make_debate, scrape):
    # given a 2-seat, 2-round debate on the fake model server, and a prefork worker
    debate = make_debate(personalities=("bull", "bear"), rounds=2)
    worker = start_worker_process("metrics")
    try:
        # when the worker runs it to the end
        debate_start(debate_id=debate.pk)
        assert wait_until_finished(debate.pk).status == "completed"
        # (the consensus step is counted once its task ends, a moment after the debate)
        wait_for(lambda: sample(scrape(), "arena_steps_total", step="consensus", outcome="ok"))
    finally:
        stop_workers(worker)
    found = scrape()
    # then the debate is counted by its status
    assert sample(found, "arena_debates", status="completed") == 1
    assert sample(found, "arena_debates", status="running") == 0
    # and its six model calls (four turns, two votes) by provider and model, each timed
    assert sample(found, "arena_model_calls_total", **CALL, outcome="ok") == 6
    assert sample(found, "arena_model_calls_total", **CALL, outcome="error") is None
    assert sample(found, "arena_model_call_seconds_count", **CALL) == 6
    assert sample(found, "arena_model_call_seconds_bucket", **CALL, le="+Inf") == 6
    assert sample(found, "arena_model_call_seconds_sum", **CALL) > 0
    # with the tokens the turns and ballots stored
    for kind in ("prompt", "completion"):
        counted = sample(found, "arena_model_tokens_total", **CALL, kind=kind)
        assert counted == stored_tokens(kind) > 0
    # and every step of its plan, each timed
    steps = {"prepare": 1, "opening": 2, "rebuttal": 2, "voting": 2, "consensus": 1}
    for step, runs in steps.items():
        assert sample(found, "arena_steps_total", step=step, outcome="ok") == runs
        assert sample(found, "arena_step_seconds_count", step=step) == runs
    # and no error
    assert [key for key in found if key[0] == "arena_errors_total"] == []
    assert sample(found, "arena_metrics_source_up", source="redis") == 1
    assert sample(found, "arena_metrics_source_up", source="database") == 1


def test_a_failed_debate_is_counted_by_its_errors(
    empty_counts, celery_worker, llm, make_debate, scrape
):
    # given a debate whose three models refuse their round-2 turns (a terminal 400)
    failed_in_round_two(llm, make_debate)
    # (the failed turns are counted once their tasks end, a moment after the debate)
    wait_for(lambda: sample(scrape(), "arena_steps_total", step="rebuttal", outcome="error") == 3)
    found = scrape()
    # then the debate, the refused calls and why are counted
    assert sample(found, "arena_debates", status="failed") == 1
    assert sample(found, "arena_model_calls_total", **CALL, outcome="ok") == 3
    assert sample(found, "arena_model_calls_total", **CALL, outcome="error") == 3
    assert sample(found, "arena_model_call_seconds_count", **CALL) == 6
    assert sample(found, "arena_errors_total", source="model_call", code="bad_request") == 3
    assert sample(found, "arena_errors_total", source="debate", code="round_failed") == 1
