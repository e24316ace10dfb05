"""A worker logs one key=value line at INFO per debate step it runs."""

from __future__ import annotations

import logging
import re
import time

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from debates.services import debate_start, steps
from tests.debates.conftest import wait_for, wait_until_finished

pytestmark = pytest.mark.django_db(transaction=True)

LINE = re.compile(r"^step debate=(\d+) step=(turn|vote|consensus)( \w+=\S+)*$")


def test_each_step_of_a_debate_leaves_one_line(celery_worker, make_debate, caplog):
    # given a 2-participant, 2-round debate run by a real worker
    caplog.set_level(logging.INFO, logger="debates.step_log")
    debate = make_debate(personalities=("bull", "bear"), rounds=2)
    # when it runs to the end
    debate_start(debate_id=debate.pk)
    assert wait_until_finished(debate.pk).status == "completed"
    # then each turn, vote and the consensus left one line, naming its debate (the
    # consensus's once its task has returned, a moment after it completed the debate)

    def step_lines() -> list[str]:
        return [r.getMessage() for r in caplog.records if r.name == "debates.step_log"]

    wait_for(lambda: any(" step=consensus " in line for line in step_lines()), timeout=10)
    lines = step_lines()
    assert all(LINE.match(line) for line in lines), lines
    assert all(f"debate={debate.pk} " in line for line in lines)
    fields = [dict(pair.split("=", 1) for pair in line.split()[1:]) for line in lines]
    turns = [f for f in fields if f["step"] == "turn"]
    votes = [f for f in fields if f["step"] == "vote"]
    assert len(turns) == 4 and len(votes) == 2
    assert [f["step"] for f in fields].count("consensus") == 1
    assert {(f["round"], f["participant"]) for f in turns} == {
        (str(r), str(p.pk)) for r in (1, 2) for p in debate.participants.all()
    }
    # with what was stored and how long it took
    assert all(f["outcome"] == "ok" and int(f["latency_ms"]) >= 0 for f in fields)
    assert all(f["attempts"] == "1" and f["model_ms"].isdigit() for f in turns + votes)


def test_no_line_is_made_when_the_step_log_is_off(make_debate, caplog):
    # given the step log above INFO, and a stored turn
    caplog.set_level(logging.WARNING, logger="debates.step_log")
    debate = make_debate()
    key = ("opening", 1, debate.participants.first().pk)
    # when a turn's step ends, then nothing is read for its line and no line is written
    with CaptureQueriesContext(connection) as queries:
        steps._log(debate.pk, key, time.perf_counter())
    assert (len(queries), caplog.records) == (0, [])
