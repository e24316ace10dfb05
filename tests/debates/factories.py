from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import factory

from debates.models import (
    AIModel,
    Ballot,
    Debate,
    Decision,
    JudgeCall,
    JudgeScore,
    Message,
    Participant,
    Schedule,
    Vote,
)
from tests.factories import UserFactory
from tests.fakes.llm_server import FakeLLMServer
from tests.strategies.factories import OnAStrategyFactory


class AIModelFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = AIModel

    owner = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"Model {n}")
    provider = "simulated"
    model_name = "simulated-v1"


class FakeLLMModelFactory(AIModelFactory):
    """A model answered by the fake model server ``llm`` (tests/fakes/llm_server.py)."""

    class Params:
        llm = None

    provider = "openai_compatible"
    model_name = "fake-model"
    base_url = factory.LazyAttribute(lambda model: f"{model.llm.url}/v1")
    timeout_seconds = 10


def fake_llm_seats(
    owner: Any, llm: FakeLLMServer, personalities: Iterable[str] = ("bull", "bear"), **fields: Any
) -> list[dict[str, Any]]:
    """Return the participants of a debate's input: a seat per personality, each on a model
    of its own answered by ``llm`` (``fields`` set on the models)."""
    return [
        {
            "ai_model": FakeLLMModelFactory(owner=owner, llm=llm, **fields).pk,
            "personality": personality,
        }
        for personality in personalities
    ]


class DebateFactory(OnAStrategyFactory):
    class Meta:
        model = Debate

    name = factory.Sequence(lambda n: f"Debate {n}")
    symbol = "BTCUSDT"
    symbols = factory.LazyFunction(lambda: ["BTCUSDT", "ETHUSDT", "SOLUSDT"])
    schedule = None
    backtest = None
    # Where it came from, as the services say it: the schedule or backtest it names.
    origin = factory.LazyAttribute(
        lambda debate: (
            "schedule" if debate.schedule else "backtest" if debate.backtest else "manual"
        )
    )


class ParticipantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Participant

    debate = factory.SubFactory(DebateFactory)
    ai_model = factory.SubFactory(AIModelFactory, owner=factory.SelfAttribute("..debate.owner"))
    personality = "bull"
    speak_order = factory.Sequence(lambda n: n % 6)


class SeatRowFactory(factory.django.DjangoModelFactory):
    """A row of one participant of a debate: a message, a ballot, a judge's score."""

    class Meta:
        abstract = True

    participant = factory.SubFactory(ParticipantFactory)
    debate = factory.SelfAttribute("participant.debate")


class MessageFactory(SeatRowFactory):
    class Meta:
        model = Message

    round = 1
    message_type = "analysis"
    content = "<reasoning>Trend up.</reasoning><decision>[]</decision>"
    parse_status = "ok"


class BallotFactory(SeatRowFactory):
    class Meta:
        model = Ballot

    parse_status = "ok"


class VoteFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Vote

    ballot = factory.SubFactory(BallotFactory)
    participant = factory.SelfAttribute("ballot.participant")
    debate = factory.SelfAttribute("ballot.debate")
    symbol = "BTCUSDT"
    action = "open_long"
    confidence = 70.0
    leverage = 5
    position_pct = 0.2


class DecisionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Decision

    debate = factory.SubFactory(DebateFactory, status="completed")
    symbol = "BTCUSDT"
    action = "open_long"
    confidence = 75.0
    leverage = 5
    position_pct = 0.25
    stop_loss = 0.03
    take_profit = 0.06
    scores = factory.LazyFunction(lambda: {"open_long": 1.5})
    is_primary = True


class ScheduleFactory(OnAStrategyFactory):
    class Meta:
        model = Schedule

    name = factory.Sequence(lambda n: f"Schedule {n}")
    interval_minutes = 60


class JudgeCallFactory(factory.django.DjangoModelFactory):
    """A stored round summary of round 1 by the first judge."""

    class Meta:
        model = JudgeCall

    debate = factory.SubFactory(DebateFactory)
    kind = "round_summary"
    round = 1
    judge = 0
    temperature = 0.7
    content = "<points>P1 is long.</points>"
    parse_status = "partial"
    result = factory.LazyFunction(
        lambda: {"text": "Points made: P1 is long.", "tally": {"BTCUSDT": {"open_long": 1}}}
    )


class JudgeScoreFactory(SeatRowFactory):
    class Meta:
        model = JudgeScore

    score = 0.7
    items = factory.LazyFunction(
        lambda: {
            name: {"value": 7.0, "reason": "one sentence"}
            for name in ("market_data", "answers", "consistency")
        }
    )
    judges = 1
