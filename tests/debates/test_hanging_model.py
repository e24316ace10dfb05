"""One user's model that hangs holds that user's share of the model slots and of the
workers' processes and threads, never all of them: another user's debate runs to its end
meanwhile, on the workers the Procfile starts."""

from __future__ import annotations

from collections import Counter

import pytest
from django.conf import settings

from arena.celery import app
from debates.models import Debate
from debates.providers.slots import model_slots
from debates.services import DebateInput, debate_create, debate_start
from tests.debates.conftest import stop_workers, wait_for, wait_until_finished, worker_env
from tests.debates.factories import fake_llm_seats
from tests.fakes.llm_server import FakeLLMServer
from tests.processes import start_procfile_workers
from tests.strategies.factories import StrategyFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

HANG_S = 150.0


def _debate(owner, llm: FakeLLMServer, seats: int, rounds: int, timeout: int) -> Debate:
    personalities = ("bull", "bear", "analyst")[:seats]
    data = DebateInput(
        name="Hanging model",
        strategy=StrategyFactory(owner=owner).pk,
        symbol="BTCUSDT",
        max_rounds=rounds,
        participants=fake_llm_seats(owner, llm, personalities, timeout_seconds=timeout),
    )
    return debate_create(owner=owner, data=data)


def _busy_by_owner(owners: dict[int, str]) -> dict[str, tuple[Counter, int]]:
    """Return, for each worker, the owners of the debates whose steps it runs now, and
    how many processes or threads it has."""
    inspect = app.control.inspect(timeout=1.0)
    active, stats = inspect.active() or {}, inspect.stats() or {}
    return {
        worker: (
            Counter(owners.get(task["args"][0], "?") for task in tasks),
            stats[worker]["pool"]["max-concurrency"],
        )
        for worker, tasks in active.items()
        if worker in stats
    }


def test_a_hanging_model_holds_its_owners_share_and_another_users_debate_runs(user, other_user):
    # given the Procfile's workers, and user A's five debates of three seats each on a
    # model that answers after HANG_S: fifteen openings, more than A may have in flight,
    # more than the call worker has threads; A's calls hang, and its steps settled
    a, b = f"user:{user.pk}", f"user:{other_user.pk}"
    workers = start_procfile_workers({**worker_env(), "LOG_LEVEL": "WARNING"})
    try:
        with FakeLLMServer(latency_s=HANG_S) as hanging, FakeLLMServer() as prompt:
            wait_for(lambda: len(app.control.ping(timeout=0.5)) == len(workers), 60)
            hung = [_debate(user, hanging, 3, 2, 170) for _ in range(5)]
            for debate in hung:
                debate_start(debate_id=debate.pk)
            slots, share = model_slots(), settings.MODEL_CALLS_PER_USER
            wait_for(lambda: hanging.stats()["in_flight"] == share, 30)
            # (its steps waiting pile up while its calls move, then all but its share give
            # up once they are still)
            wait_for(lambda: slots.waiting().get(a, 0) > share, 30)
            wait_for(lambda: slots.waiting().get(a, 0) <= share, 30)

            # when user B starts a debate of two seats over two rounds (six calls)
            other = _debate(other_user, prompt, 2, 2, 10)
            owners = {d.pk: a for d in hung} | {other.pk: b}
            debate_start(debate_id=other.pk)
            busy = [_busy_by_owner(owners)]
            finished = wait_until_finished(other.pk, timeout=60)
            busy.append(_busy_by_owner(owners))

            # then B's debate completed while A's calls still hang, A holding its share
            # of the slots and of each worker's processes or threads, never all of them
            assert finished.status == "completed"
            assert slots.holders() == {a: share}
            assert slots.waiting().get(a, 0) <= share
            assert hanging.stats()["in_flight"] == share
            assert hanging.stats()["max_in_flight"] == share
            assert prompt.stats()["by_status"] == {"200": 6}
            for sample in busy:
                for worker, (owners_busy, size) in sample.items():
                    assert owners_busy[a] < size, (worker, owners_busy, size)
            assert Debate.objects.filter(pk__in=[d.pk for d in hung], status="running").count() == 5
    finally:
        stop_workers(*workers.values())
        model_slots().clear()  # the leases the killed workers held
