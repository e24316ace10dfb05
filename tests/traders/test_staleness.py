"""The staleness guard: a decision too old, or whose price moved too far since its
snapshot, is refused before anything is recorded; the check is kept on the execution."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from django.utils import timezone

from arena.exceptions import ApplicationError
from tests.debates.factories import DecisionFactory
from tests.fakes.exchange_server import FakeExchange
from tests.traders.factories import PositionFactory, TraderFactory
from traders.models import Execution, Trader
from traders.services import execution_request

pytestmark = pytest.mark.django_db

LAST = Decimal("57970.9")  # the fake exchange's BTCUSDT price (the dataset's last close)


def iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


def decision_at(user, at: datetime, price: Decimal):
    """A BTC long of a debate whose snapshot at ``at`` showed BTC at ``price``."""
    snapshot = {"as_of": iso(at), "coins": [{"symbol": "BTCUSDT", "price": float(price)}]}
    return DecisionFactory(debate__owner=user, debate__market_snapshot=snapshot)


@pytest.fixture
def live_trader(user, settings):
    """A paper trader on live prices, the live exchange being the fake one (BTC 57970.9)."""
    with FakeExchange() as fake:
        settings.MARKET_LIVE_API_URL = fake.url
        yield TraderFactory(owner=user, exchange="paper", market_source="live")


def request(user, decision, trader):
    return execution_request(owner=user, debate_id=decision.debate_id, trader_id=trader.pk)


@pytest.mark.parametrize(("drift", "refused"), [("1.01", True), ("0.99", False)])
def test_the_guard_refuses_a_price_moved_past_the_limit(user, live_trader, drift, refused):
    # given a decision 5 minutes old whose snapshot showed BTC ``drift`` % under the price now
    shown = (LAST / (1 + Decimal(drift) / 100)).quantize(Decimal("0.01"))
    decision = decision_at(user, timezone.now() - timedelta(minutes=5), shown)
    if refused:
        # when it is executed, then it is refused with the figures, and nothing is recorded
        with pytest.raises(ApplicationError) as caught:
            request(user, decision, live_trader)
        assert (caught.value.code, caught.value.status_code) == ("stale_decision", 409)
        assert caught.value.message == (
            f"The decision on BTCUSDT is stale: its price moved {drift}% from the snapshot's "
            f"{shown} to {LAST}, over the strategy's max_price_drift_pct of 1.000."
        )
        assert not Execution.objects.exists()
    else:
        # when it is executed, then it is recorded with the check's figures
        execution = request(user, decision, live_trader)
        check = execution.staleness
        assert (check["snapshot_price"], check["price"]) == (str(shown), str(LAST))
        assert check["drift_pct"] == pytest.approx(0.99, abs=0.0001)
        assert (check["max_drift_pct"], check["max_age_minutes"], check["note"]) == (
            "1.000",
            30,
            "",
        )
        assert 5 <= check["age_minutes"] < 6


@pytest.mark.parametrize(("minutes", "refused"), [(31, True), (29, False)])
def test_the_guard_refuses_a_decision_older_than_the_limit(user, live_trader, minutes, refused):
    # given a decision ``minutes`` old at the price of now
    decision = decision_at(user, timezone.now() - timedelta(minutes=minutes), LAST)
    if refused:
        with pytest.raises(ApplicationError) as caught:
            request(user, decision, live_trader)
        assert caught.value.code == "stale_decision"
        assert caught.value.message.startswith("The decision on BTCUSDT is stale: 31")
        assert "over the strategy's max_decision_age_minutes of 30." in caught.value.message
        assert not Execution.objects.exists()
    else:
        assert request(user, decision, live_trader).staleness["drift_pct"] == 0.0


def test_a_strategy_with_a_longer_age_limit_lets_it_through(user, live_trader):
    decision = decision_at(user, timezone.now() - timedelta(minutes=31), LAST)
    decision.debate.strategy.max_decision_age_minutes = 45
    decision.debate.strategy.save()
    assert request(user, decision, live_trader).staleness["max_age_minutes"] == 45


def test_in_a_replay_the_age_runs_to_the_paper_clock(user):
    # given a dataset paper trader holding a position, its clock 31 minutes after the
    # instant of a debate at 2024-08-06 08:00
    at = datetime(2024, 8, 6, 8, tzinfo=UTC)
    trader = TraderFactory(owner=user, exchange="paper", replay_as_of=at + timedelta(minutes=31))
    PositionFactory(trader=trader, symbol="ETHUSDT")
    decision = decision_at(user, at, Decimal("56000"))
    # when the debate is executed on it, then it is stale by the paper clock, not the wall's
    with pytest.raises(ApplicationError) as caught:
        request(user, decision, trader)
    assert caught.value.message.startswith(
        "The decision on BTCUSDT is stale: 31 minutes old (from the snapshot at "
        "2024-08-06T08:00:00Z to 2024-08-06T08:31:00Z)"
    )
    # and a flat account, whose clock goes back to the debate's instant, is not
    Trader.objects.filter(pk=trader.pk).update(replay_as_of=at + timedelta(days=2))
    trader.positions.all().delete()
    check = request(user, decision, trader).staleness
    assert (check["clock"], check["age_minutes"]) == ("2024-08-06T08:00:00Z", 0.0)


def test_the_api_answers_409_with_the_figures(api_client, user, live_trader):
    decision = decision_at(user, timezone.now() - timedelta(minutes=40), LAST)
    response = api_client.post(
        f"/api/debates/{decision.debate_id}/execute", {"trader": live_trader.pk}, format="json"
    )
    assert response.status_code == 409
    assert response.json()["code"] == "stale_decision"
    assert "40" in response.json()["message"] and not Execution.objects.exists()
