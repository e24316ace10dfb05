"""Fixtures of the REST API tests: clients that record every answer, stored secrets,
and a debate run to completion without workers."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from rest_framework.test import APIClient

from debates.models import Debate
from debates.services import consensus_finalize, debate_prepare, turn_run, vote_run
from debates.services.calls import StepDeferred
from tests.debates.conftest import llm  # noqa: F401 (the fake model server, for whole runs)
from tests.debates.factories import AIModelFactory
from tests.strategies.factories import StrategyFactory
from tests.traders.factories import TraderFactory

# Secrets stored by the tests; no answer of any endpoint may contain one of them.
MODEL_KEY = "sk-model-key-0123456789abcdef"
EXCHANGE_KEY = "exchange-key-fedcba9876543210"
EXCHANGE_SECRET = "exchange-secret-zyxwvutsrqp"
EXCHANGE_PASSPHRASE = "exchange-passphrase-31415"
SECRETS = (MODEL_KEY, EXCHANGE_KEY, EXCHANGE_SECRET, EXCHANGE_PASSPHRASE)

# The last instant of the bundled dataset minus a day: every coin has candles before it.
AS_OF = datetime(2024, 9, 4, 12, tzinfo=UTC)


class RecordingClient(APIClient):
    """An API client that keeps every answer it received, for the secret scan."""

    def __init__(self, answers: list[Any], **defaults: Any) -> None:
        super().__init__(**defaults)
        self.answers = answers

    def request(self, **kwargs: Any) -> Any:
        response = super().request(**kwargs)
        self.answers.append(response)
        return response


@pytest.fixture
def answers() -> Iterator[list[Any]]:
    """Every answer of the test's clients; after the test, none may hold a stored secret."""
    recorded: list[Any] = []
    yield recorded
    for response in recorded:
        body = response.content.decode(errors="replace")
        leaked = [secret for secret in SECRETS if secret in body]
        assert not leaked, f"{response.request['PATH_INFO']} answered a secret"


@pytest.fixture
def client_for(answers) -> Callable[..., RecordingClient]:
    """Return a recording client authenticated as a given user (or anonymous)."""

    def make(user: Any = None) -> RecordingClient:
        client = RecordingClient(answers)
        if user is not None:
            client.force_authenticate(user)
        return client

    return make


@pytest.fixture
def api(client_for, user) -> RecordingClient:
    """A recording client authenticated as ``user``."""
    return client_for(user)


@pytest.fixture
def anon(client_for) -> RecordingClient:
    """A recording client with no credentials."""
    return client_for()


@pytest.fixture
def seeded(user) -> dict[str, Any]:
    """What a debate needs, owned by ``user``: a dataset strategy, two simulated models,
    a keyed model, a paper trader and a real-exchange trader with credentials."""
    return {
        "strategy": StrategyFactory(owner=user, static_coins=["BTCUSDT", "ETHUSDT"]),
        "models": [
            AIModelFactory(owner=user, name="Sim A"),
            AIModelFactory(owner=user, name="Sim B"),
        ],
        "keyed_model": AIModelFactory(
            owner=user,
            name="Keyed",
            provider="openai",
            model_name="gpt-6.1-terra",
            api_key=MODEL_KEY,
        ),
        "trader": TraderFactory(owner=user, name="Paper"),
        "real_trader": TraderFactory(
            owner=user,
            name="Real",
            exchange="okx",
            api_key=EXCHANGE_KEY,
            api_secret=EXCHANGE_SECRET,
            api_passphrase=EXCHANGE_PASSPHRASE,
        ),
    }


def refusal(fields: dict[str, Any]) -> dict[str, Any]:
    """Return the body of a 400 refusing input, naming each bad field with its messages."""
    return {"code": "validation_error", "message": "Invalid input.", "fields": fields}


def debate_body(seeded: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """Return a valid create body for a debate of ``seeded`` objects."""
    body = {
        "name": "BTC today",
        "strategy": seeded["strategy"].pk,
        "symbol": "btc",
        "max_rounds": 2,
        "participants": [
            {"ai_model": seeded["models"][0].pk, "personality": "bull"},
            {"ai_model": seeded["models"][1].pk, "personality": "bear"},
        ],
        "as_of": AS_OF.isoformat(),
    }
    body.update(fields)
    return body


def run_steps(debate_id: int) -> Debate:
    """Run every remaining step of a started debate in this process, as workers would.

    A step deferred for want of a model slot (another test run holds them) is asked
    again until it runs.
    """
    debate = Debate.objects.get(pk=debate_id)
    seats = list(debate.participants.order_by("speak_order").values_list("pk", flat=True))

    def until_done(step: Callable[[], None]) -> None:
        for _ in range(2000):
            try:
                step()
                return
            except StepDeferred:
                continue
        raise AssertionError("a step stayed deferred")

    debate_prepare(debate_id=debate_id)
    for round_number in range(1, debate.max_rounds + 1):
        for seat in seats:
            until_done(
                lambda r=round_number, s=seat: turn_run(
                    debate_id=debate_id, round_number=r, participant_id=s, holder="api-tests"
                )
            )
    for seat in seats:
        until_done(lambda s=seat: vote_run(debate_id=debate_id, participant_id=s, holder="t"))
    consensus_finalize(debate_id=debate_id)
    return Debate.objects.get(pk=debate_id)
