import factory

from strategies.models import Strategy
from tests.factories import UserFactory


class StrategyFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Strategy

    owner = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"Strategy {n}")
    static_coins = factory.LazyFunction(lambda: ["BTCUSDT", "ETHUSDT", "SOLUSDT"])
    # Tests of the full debate see every round; the early stop's tests turn it on.
    early_stop = False
