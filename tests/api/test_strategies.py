"""Strategies over the API: symbols stored normalised, every rule refused with a 400
naming the field."""

from decimal import Decimal

import pytest

from arena.exceptions import ValidationError
from strategies.models import Strategy
from strategies.services import strategy_update
from tests.api.conftest import refusal
from tests.debates.factories import DebateFactory, ScheduleFactory
from tests.strategies.factories import StrategyFactory

pytestmark = pytest.mark.django_db

DATASET = "BTCUSDT, ETHUSDT, SOLUSDT, XRPUSDT, DOGEUSDT, AVAXUSDT, LINKUSDT"


def test_create_stores_symbols_normalised(api, user):
    # given coins written in several notations
    body = {
        "name": "Majors",
        "static_coins": ["btc", "ETH/USDT", "sol-usdt"],
        "excluded_coins": ["doge"],
        "timeframes": ["1h", "4h"],
        "indicators": ["rsi", "ema"],
        "max_position_multiple": "2.5",
        "min_confidence": 60,
    }
    # when the strategy is created
    response = api.post("/api/strategies", body, format="json")
    # then it stores and shows the normalised symbols, never the raw ones
    assert response.status_code == 201
    strategy = Strategy.objects.get()
    assert (strategy.owner, strategy.static_coins, strategy.excluded_coins) == (
        user,
        ["BTCUSDT", "ETHUSDT", "SOLUSDT"],
        ["DOGEUSDT"],
    )
    assert (strategy.max_position_multiple, strategy.min_confidence) == (Decimal("2.5"), 60)
    body = response.json()
    assert (body["static_coins"], body["timeframes"], body["max_position_multiple"]) == (
        ["BTCUSDT", "ETHUSDT", "SOLUSDT"],
        ["1h", "4h"],
        "2.50",
    )


def test_create_with_defaults(api):
    response = api.post("/api/strategies", {"name": "Defaults"}, format="json")
    assert response.status_code == 201
    body = response.json()
    assert {k: body[k] for k in ("coin_source", "static_coins", "timeframes", "max_coins")} == {
        "coin_source": "static",
        "static_coins": ["BTCUSDT", "ETHUSDT", "SOLUSDT"],
        "timeframes": ["15m", "1h", "4h"],
        "max_coins": 3,
    }


def test_the_selective_debate_settings_are_set_and_changed_through_the_api(api, user):
    # given a strategy made with its defaults
    created = api.post("/api/strategies", {"name": "Selective"}, format="json").json()
    assert (created["early_stop"], created["quiet_atr_fraction"]) == (True, 0.5)
    assert created["gate_min_confidence"] == 60.0
    # when its early stop is turned off and its L0 and L2 thresholds changed
    changes = {"early_stop": False, "quiet_atr_fraction": 0.25, "gate_min_confidence": 72}
    response = api.patch(f"/api/strategies/{created['id']}", changes, format="json")
    # then the strategy keeps them, and the service refuses them out of range too
    assert response.status_code == 200, response.json()
    stored = Strategy.objects.get(pk=created["id"])
    assert (stored.early_stop, stored.quiet_atr_fraction, stored.gate_min_confidence) == (
        False,
        0.25,
        72.0,
    )
    with pytest.raises(ValidationError) as refused:
        strategy_update(
            owner=user,
            strategy_id=stored.pk,
            changes={"quiet_atr_fraction": float("nan"), "gate_min_confidence": "high"},
        )
    assert refused.value.fields == {
        "quiet_atr_fraction": ["A valid number is required."],
        "gate_min_confidence": ["A valid number is required."],
    }


def test_a_live_pool_strategy(api):
    body = {
        "name": "Pool",
        "coin_source": "mixed",
        "pool_url": "https://pool.example.com/coins",
        "static_coins": [],
        "market_source": "live",
        "exchange": "bybit",
    }
    response = api.post("/api/strategies", body, format="json")
    assert response.status_code == 201
    assert Strategy.objects.get().pool_url == "https://pool.example.com/coins"


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        (
            {"timeframes": ["1h", "2h"]},
            {"timeframes[1]": ["'2h' is not one of: 15m, 1h, 4h, 1d."]},
        ),
        ({"timeframes": []}, {"timeframes": ["At least one timeframe."]}),
        ({"timeframes": ["1h", "1h"]}, {"timeframes[1]": ["1h is listed twice."]}),
        (
            {"coin_source": "static", "static_coins": []},
            {"static_coins": ["The static coin source needs at least one coin."]},
        ),
        (
            {
                "coin_source": "static",
                "static_coins": ["BTC", "ETH"],
                "excluded_coins": ["ETH", "BTC"],
            },
            {
                "excluded_coins": [
                    "Excludes every static coin: the strategy would have no coin to debate."
                ]
            },
        ),
        (
            {
                "market_source": "live",
                "static_coins": [f"COIN{i}" for i in range(11)],
            },
            {"static_coins": ["At most 10 coins; got 11."]},
        ),
        (
            {"static_coins": ["BTC", "BTC/ETH", "eth-usdt-x"]},
            {
                "static_coins[1]": ["unsupported symbol 'BTC/ETH': only USDT pairs are traded."],
                "static_coins[2]": ["malformed symbol 'eth-usdt-x': use BTC, BTCUSDT or BTC/USDT."],
            },
        ),
        (
            {"static_coins": ["BTC", "btcusdt"]},
            {"static_coins[1]": ["BTCUSDT is listed twice."]},
        ),
        (
            {"static_coins": ["BTC", "PEPE"]},
            {"static_coins[1]": [f"PEPEUSDT is not in the bundled dataset (it has {DATASET})."]},
        ),
        (
            {"indicators": ["rsi", "ichimoku"]},
            {
                "indicators[1]": [
                    "'ichimoku' is not one of: ema, macd, rsi, atr, bollinger, volume_change."
                ]
            },
        ),
        ({"coin_source": "pool"}, {"pool_url": ["Required for the pool coin source."]}),
        ({"coin_source": "mixed"}, {"pool_url": ["Required for the mixed coin source."]}),
        (
            {"coin_source": "pool", "pool_url": "file:///etc/passwd"},
            {"pool_url": ["Must be an http or https URL."]},
        ),
        (
            {"coin_source": "oi_top"},
            {
                "coin_source": [
                    "oi_top ranks coins by open interest, which the dataset market source "
                    "does not have; use the live market source."
                ]
            },
        ),
        ({"max_coins": 0}, {"max_coins": ["Ensure this value is greater than or equal to 1."]}),
        ({"max_coins": 11}, {"max_coins": ["Ensure this value is less than or equal to 10."]}),
        (
            {"max_leverage_major": 21, "min_confidence": 101},
            {
                "max_leverage_major": ["Ensure this value is less than or equal to 20."],
                "min_confidence": ["Ensure this value is less than or equal to 100."],
            },
        ),
        (
            {"max_position_multiple": "0"},
            {"max_position_multiple": ["Ensure this value is greater than or equal to 0.01."]},
        ),
        (
            {"exchange": "kraken"},
            {"exchange": ["'kraken' is not one of: binanceusdm, bybit, okx."]},
        ),
        (
            {"early_stop": "yes", "quiet_atr_fraction": -0.1, "gate_min_confidence": 100.5},
            {
                "early_stop": ["Must be true or false."],
                "quiet_atr_fraction": ["Ensure this value is greater than or equal to 0."],
                "gate_min_confidence": ["Ensure this value is less than or equal to 100."],
            },
        ),
    ],
    ids=[
        "unknown-timeframe",
        "no-timeframe",
        "repeated-timeframe",
        "static-without-coins",
        "every-static-coin-excluded",
        "eleven-coins",
        "malformed-symbols",
        "repeated-symbol",
        "coin-not-in-dataset",
        "unknown-indicator",
        "pool-without-url",
        "mixed-without-url",
        "pool-url-not-http",
        "oi-top-on-dataset",
        "max-coins-low",
        "max-coins-high",
        "risk-limits",
        "position-multiple-zero",
        "unknown-exchange",
        "selective-debate-settings",
    ],
)
def test_create_refuses_bad_input_naming_each_field(api, body, fields):
    response = api.post("/api/strategies", {"name": "S", **body}, format="json")
    assert response.status_code == 400
    assert response.json() == refusal(fields)
    assert Strategy.objects.count() == 0


def test_list_shows_own_strategies_newest_first(api, user, other_user):
    older, newer = StrategyFactory(owner=user), StrategyFactory(owner=user)
    StrategyFactory(owner=other_user)
    response = api.get("/api/strategies")
    assert [s["id"] for s in response.json()["results"]] == [newer.pk, older.pk]


def test_detail(api, user):
    strategy = StrategyFactory(owner=user, name="Mine")
    response = api.get(f"/api/strategies/{strategy.pk}")
    assert (response.status_code, response.json()["name"]) == (200, "Mine")


def test_update_checks_the_whole_strategy_again(api, user):
    # given a static strategy
    strategy = StrategyFactory(owner=user)
    # when its source becomes a pool without a URL, then with one
    refused = api.patch(f"/api/strategies/{strategy.pk}", {"coin_source": "pool"}, format="json")
    accepted = api.patch(
        f"/api/strategies/{strategy.pk}",
        {"coin_source": "pool", "pool_url": "https://pool.example.com"},
        format="json",
    )
    # then the first is refused and changes nothing, the second is stored
    assert refused.status_code == 400
    assert refused.json()["fields"] == {"pool_url": ["Required for the pool coin source."]}
    assert accepted.status_code == 200
    strategy.refresh_from_db()
    assert (strategy.coin_source, strategy.static_coins) == (
        "pool",
        ["BTCUSDT", "ETHUSDT", "SOLUSDT"],
    )


def test_update_normalises_symbols(api, user):
    strategy = StrategyFactory(owner=user)
    response = api.patch(
        f"/api/strategies/{strategy.pk}", {"static_coins": ["link", "avax"]}, format="json"
    )
    assert response.json()["static_coins"] == ["LINKUSDT", "AVAXUSDT"]


def test_delete(api, user):
    strategy = StrategyFactory(owner=user)
    DebateFactory(owner=user, strategy=strategy, status="completed")
    response = api.delete(f"/api/strategies/{strategy.pk}")
    assert response.status_code == 204
    assert Strategy.objects.count() == 0


@pytest.mark.parametrize(
    ("make_user", "message"),
    [
        (
            lambda s: DebateFactory(owner=s.owner, strategy=s, status="running"),
            "Strategy 'S' is used by a pending or running debate; wait for it to end or "
            "delete it first.",
        ),
        (
            lambda s: ScheduleFactory(owner=s.owner, strategy=s),
            "Strategy 'S' is used by a schedule; change or delete the schedule first.",
        ),
    ],
    ids=["running-debate", "schedule"],
)
def test_delete_refuses_a_strategy_in_use(api, user, make_user, message):
    strategy = StrategyFactory(owner=user, name="S")
    make_user(strategy)
    response = api.delete(f"/api/strategies/{strategy.pk}")
    assert response.status_code == 409
    assert response.json() == {"code": "conflict", "message": message, "fields": {}}
    assert Strategy.objects.filter(pk=strategy.pk).exists()
