"""A worker killed mid-debate loses and duplicates nothing once a worker runs again."""

from __future__ import annotations

import re
import time
from collections import Counter

import pytest

from arena.celery import app
from debates.models import Message
from debates.services import debate_start
from tests.debates.conftest import (
    kill_process_group,
    start_worker_process,
    wait_for,
    wait_until_finished,
)

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

TURN = re.compile(r"round (\d)/\d\. You are P(\d),")


def test_sigkill_of_the_whole_worker_in_round_2_resumes_and_completes(llm, make_debate):
    # given a debate running on a worker process, each model call taking 0.4 s
    app.control.purge()
    llm.set_latency(0.4)
    debate = make_debate()
    first = start_worker_process("first")
    try:
        debate_start(debate_id=debate.pk)
        wait_for(lambda: Message.objects.filter(debate=debate, round=2).exists(), timeout=60)
        # when the worker and its pool children are killed with SIGKILL in round 2
        kill_process_group(first)
        killed_at = time.monotonic()
        stored_at_kill = Message.objects.filter(debate=debate).count()
        # and a new worker starts
        second = start_worker_process("second")
        try:
            wait_for(
                lambda: Message.objects.filter(debate=debate).count() > stored_at_kill,
                timeout=60,
            )
            resumed_after = time.monotonic() - killed_at
            finished = wait_until_finished(debate.pk, timeout=120)
        finally:
            kill_process_group(second)
    finally:
        if first.poll() is None:
            kill_process_group(first)
        app.control.purge()

    # then the debate completed within 30 s of the new worker, with one message per turn
    assert finished.status == "completed"
    assert resumed_after < 30
    pairs = Counter(Message.objects.filter(debate=debate).values_list("round", "participant"))
    assert len(pairs) == 9
    assert set(pairs.values()) == {1}
    # and no turn was asked again after it had been stored
    stored = {
        (m.round, m.participant.speak_order + 1): m.created_at.timestamp()
        for m in Message.objects.filter(debate=debate).select_related("participant")
    }
    for request in llm.requests:
        found = TURN.search(request.prompt)
        if found:
            key = (int(found.group(1)), int(found.group(2)))
            assert request.arrived_at < stored[key], f"turn {key} asked after it was stored"
