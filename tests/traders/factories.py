from decimal import Decimal

import factory

from tests.factories import UserFactory
from traders.models import Execution, HistoryEntry, Order, Position, Trader


class TraderFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Trader

    owner = factory.SubFactory(UserFactory)
    name = factory.Sequence(lambda n: f"Trader {n}")
    exchange = "paper"


class PositionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Position

    trader = factory.SubFactory(TraderFactory)
    symbol = "BTCUSDT"
    side = "long"
    quantity = Decimal("0.01")
    entry_price = Decimal("58000")
    leverage = 5


class HistoryEntryFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = HistoryEntry

    trader = factory.SubFactory(TraderFactory)
    kind = "position_closed"
    symbol = "BTCUSDT"
    message = "BTCUSDT long closed on the exchange (stop loss) at 56000, P&L -4.00 USDT"


class OrderFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Order

    trader = factory.SubFactory(TraderFactory)
    client_order_id = factory.Sequence(lambda n: f"arena{n:08d}")
    symbol = "BTCUSDT"
    side = "buy"
    type = "market"
    quantity = Decimal("0.01")


class ExecutionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Execution

    decision = factory.SubFactory("tests.debates.factories.DecisionFactory")
    trader = factory.SubFactory(
        TraderFactory, owner=factory.SelfAttribute("..decision.debate.owner")
    )
    client_order_id = factory.Sequence(lambda n: f"arenax{n:08d}")
    symbol = factory.SelfAttribute("decision.symbol")
    action = factory.SelfAttribute("decision.action")
