import factory

from strategies.models import Strategy
from tests.factories import UserFactory


class StrategyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Strategy

    owner = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"Strategy {n}")
    static_coins = factory.LazyFunction(lambda: ["BTCUSDT", "ETHUSDT", "SOLUSDT"])
    # Tests of the full debate see every round and every schedule firing debated; the
    # tests of the early stop and of L0 turn them on.
    early_stop = False
    quiet_atr_fraction = 0.0


class OnAStrategyFactory(factory.django.DjangoModelFactory):
    """What a user runs on a strategy of their own: a debate, a schedule, a backtest."""

    class Meta:
        abstract = True

    owner = factory.SubFactory(UserFactory)
    strategy = factory.SubFactory(StrategyFactory, owner=factory.SelfAttribute("..owner"))
