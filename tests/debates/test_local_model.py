"""A whole debate answered by a real language model: the local model of
``scripts/local-model`` (llama.cpp's server with a 0.5B instruction model), through the
``openai_compatible`` provider and the real Celery canvas.

The model's trading judgement is not what is tested (a 0.5B model's facts are
unreliable); the plumbing and the output contract are: every answer is stored raw with
its parse status, the token usage comes from the server, and every coin gets a usable
ballot or a recorded abstention.
"""

from __future__ import annotations

import os
import subprocess
from datetime import UTC, datetime

import pytest
from django.conf import settings

from debates.models import Ballot, Message, Vote
from debates.services import DebateInput, debate_create, debate_start
from tests.debates.conftest import wait_until_finished
from tests.debates.factories import AIModelFactory
from tests.strategies.factories import StrategyFactory

# The suite's 300 s per test would cut short the debate's own 600 s on a busy host (a 0.5B
# model answering on the same 2 cores as the rest of the run).
pytestmark = [
    pytest.mark.slow,
    pytest.mark.local_model,
    pytest.mark.long,
    pytest.mark.django_db(transaction=True),
    pytest.mark.timeout(660),
]

SCRIPT = settings.BASE_DIR / "scripts" / "local-model"


@pytest.fixture(scope="session")
def local_model_url():
    """The base URL of the local model, installed and started if needed (and stopped again
    when this run started it)."""
    running = subprocess.run([SCRIPT, "status"], capture_output=True, text=True)
    # Run alone, a model this test starts has both cores to itself: two threads took 150 s
    # for this debate, one 257 s. Under pytest-xdist the other workers' tests share the
    # cores, and one thread is the faster (the script's default: two ran three times slower
    # beside other work).
    alone = "PYTEST_XDIST_WORKER" not in os.environ
    threads = {"LOCAL_MODEL_THREADS": os.environ.get("LOCAL_MODEL_THREADS", "2" if alone else "1")}
    started = subprocess.run(
        [SCRIPT, "start"],
        capture_output=True,
        text=True,
        timeout=900,
        env={**os.environ, **threads},
    )
    assert started.returncode == 0, started.stderr[-2000:]
    yield started.stdout.strip().splitlines()[-1]
    if running.returncode != 0:
        subprocess.run([SCRIPT, "stop"], capture_output=True, check=False)


def test_a_two_by_two_debate_on_the_local_model_completes_and_parses(
    celery_worker, user, local_model_url
):
    # given two seats of the local model, asked for the contract's json_schema form, on
    # a strategy whose prompts stay small (one coin, 1h candles, 6 rows)
    model = AIModelFactory(
        owner=user,
        provider="openai_compatible",
        model_name="qwen2.5-coder-0.5b-instruct",
        base_url=local_model_url,
        output_mode="json_schema",
        temperature=0.3,
        max_tokens=400,
        timeout_seconds=180,
    )
    strategy = StrategyFactory(
        owner=user,
        static_coins=["BTCUSDT"],
        max_coins=1,
        timeframes=["1h"],
        rows_per_timeframe=6,
    )
    debate = debate_create(
        owner=user,
        data=DebateInput(
            name="Local model debate",
            strategy=strategy.pk,
            symbol="BTCUSDT",
            max_rounds=2,
            participants=[
                {"ai_model": model.pk, "personality": "bull"},
                {"ai_model": model.pk, "personality": "bear"},
            ],
            as_of=datetime(2024, 8, 5, 12, tzinfo=UTC),
        ),
    )

    # when it runs on the worker
    debate_start(debate_id=debate.pk)
    finished = wait_until_finished(debate.pk, timeout=600)

    # then it completed, every turn is stored raw with its parse status and the usage the
    # server reported
    assert finished.status == "completed", finished.error
    messages = list(Message.objects.filter(debate=debate))
    assert len(messages) == 4
    for stored in [*messages, *Ballot.objects.filter(debate=debate)]:
        assert stored.status == "ok", stored.error
        assert stored.content.strip()
        assert stored.parse_status in {"ok", "partial", "failed"}
        assert stored.prompt_tokens > 0
        assert stored.completion_tokens > 0
        assert not stored.request_id.startswith("sim-")
    # and each voter has, for the coin, a usable vote or an abstention saying why
    votes = list(Vote.objects.filter(debate=debate))
    assert len(votes) == 2
    for vote in votes:
        assert vote.symbol == "BTCUSDT"
        assert (vote.action != "") or (vote.abstained and vote.abstain_reason)
    assert finished.decisions.get().symbol == "BTCUSDT"
