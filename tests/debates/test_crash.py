"""A worker killed mid-debate loses and duplicates nothing once a worker runs again."""

from __future__ import annotations

import time
from collections import Counter

import pytest

from debates.models import Message
from debates.services import debate_start
from tests.debates.conftest import wait_for, wait_until_finished, worker_processes
from tests.debates.turns import turns_asked_again

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_sigkill_of_the_whole_worker_in_round_2_resumes_and_completes(llm, make_debate):
    # given a debate running on a worker process, each model call taking 0.4 s
    llm.set_latency(0.4)
    debate = make_debate()
    with worker_processes() as workers:
        workers.start("first")
        debate_start(debate_id=debate.pk)
        wait_for(lambda: Message.objects.filter(debate=debate, round=2).exists(), timeout=60)
        # when the worker and its pool children are killed with SIGKILL in round 2
        workers.kill("first")
        killed_at = time.monotonic()
        stored_at_kill = Message.objects.filter(debate=debate).count()
        # and a new worker starts
        workers.start("second")
        wait_for(
            lambda: Message.objects.filter(debate=debate).count() > stored_at_kill,
            timeout=60,
        )
        resumed_after = time.monotonic() - killed_at
        finished = wait_until_finished(debate.pk, timeout=120)

    # then the debate completed within 30 s of the new worker, with one message per turn
    assert finished.status == "completed"
    assert resumed_after < 30
    pairs = Counter(Message.objects.filter(debate=debate).values_list("round", "participant"))
    assert len(pairs) == 9
    assert set(pairs.values()) == {1}
    # and no turn was asked again after it had been stored
    assert turns_asked_again(llm, debate) == []
