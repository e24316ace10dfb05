from datetime import UTC, datetime

import pytest

from strategies.market.coins import (
    MAX_CANDIDATES,
    CoinSelection,
    CoinSelectionSpec,
    SelectedCoin,
    select_coins,
)
from strategies.market.dataset import DATASET_END, DatasetSource
from strategies.market.exceptions import CoinSelectionError, InvalidSymbolError
from strategies.market.live import LiveSource

MANY = tuple(f"COIN{i}USDT" for i in range(15))


class ListedSource(DatasetSource):
    """The dataset source listing 15 more coins, for caps beyond the dataset's seven."""

    def available_symbols(self) -> list[str]:
        return [*super().available_symbols(), *MANY]


def _static(*symbols: str) -> tuple[SelectedCoin, ...]:
    return tuple(SelectedCoin(symbol, "static") for symbol in symbols)


def test_static_coins_are_normalised_and_tagged():
    # given a static strategy with coins in user spellings
    spec = CoinSelectionSpec(static_coins=("btc", "ETH/USDT", "sol-usdt"))
    # when coins are selected
    selection = select_coins(spec, DatasetSource())
    # then they are normalised, in order, tagged static, with nothing to note
    assert selection == CoinSelection(_static("BTCUSDT", "ETHUSDT", "SOLUSDT"), ())


def test_spec_holds_only_normalised_symbols():
    # given raw symbols in a spec
    spec = CoinSelectionSpec(
        static_coins=("btc", "btcusdt"), excluded_coins=(" doge ",), primary_symbol="eth"
    )
    # when it is built
    # then nothing raw is kept
    assert spec.static_coins == ("BTCUSDT",)
    assert spec.excluded_coins == ("DOGEUSDT",)
    assert spec.primary_symbol == "ETHUSDT"


def test_excluded_and_unlisted_coins_are_removed_with_notes():
    # given static coins including an excluded one and one the dataset lacks
    spec = CoinSelectionSpec(static_coins=("BTC", "DOGE", "PEPE", "ETH"), excluded_coins=("DOGE",))
    # when coins are selected
    selection = select_coins(spec, DatasetSource())
    # then both are gone and the notes say why
    assert selection == CoinSelection(
        _static("BTCUSDT", "ETHUSDT"),
        (
            "excluded by the strategy: DOGEUSDT",
            "not available on the dataset source: PEPEUSDT",
        ),
    )


def test_primary_symbol_comes_first_keeping_its_tag():
    # given a static list and a primary coin inside it
    spec = CoinSelectionSpec(static_coins=("BTC", "ETH", "SOL"), primary_symbol="sol")
    # when coins are selected
    selection = select_coins(spec, DatasetSource())
    # then the primary leads
    assert selection.symbols == ["SOLUSDT", "BTCUSDT", "ETHUSDT"]
    assert selection.coins[0] == SelectedCoin("SOLUSDT", "static")


def test_primary_symbol_outside_the_list_is_added_first():
    # given a static list and a primary coin not in it
    # when coins are selected
    selection = select_coins(
        CoinSelectionSpec(static_coins=("BTC", "ETH"), primary_symbol="LINK"), DatasetSource()
    )
    # then the primary is prepended, tagged static
    assert selection.coins == _static("LINKUSDT", "BTCUSDT", "ETHUSDT")


def test_excluded_or_unlisted_primary_is_refused():
    # given a primary that the strategy excludes, or that the source lacks
    excluded = CoinSelectionSpec(
        static_coins=("BTC",), excluded_coins=("ETH",), primary_symbol="ETH"
    )
    unlisted = CoinSelectionSpec(static_coins=("BTC",), primary_symbol="PEPE")
    # when coins are selected
    # then each is refused with the reason
    with pytest.raises(CoinSelectionError) as caught:
        select_coins(excluded, DatasetSource())
    assert str(caught.value) == "the debate's symbol ETHUSDT is excluded by the strategy"
    with pytest.raises(CoinSelectionError) as caught:
        select_coins(unlisted, DatasetSource())
    assert (
        str(caught.value) == "the debate's symbol PEPEUSDT is not available on the dataset source"
    )


def test_at_most_max_coins_are_kept():
    # given 15 static coins and a strategy maximum of 4
    spec = CoinSelectionSpec(static_coins=MANY, max_coins=4)
    # when coins are selected
    selection = select_coins(spec, ListedSource())
    # then the first 4 are kept and the rest noted
    assert selection.symbols == list(MANY[:4])
    assert selection.notes == ("kept the first 4 coins, dropped " + ", ".join(MANY[4:]),)


def test_never_more_than_ten_candidates():
    # given 15 static coins, a primary outside them and the default maximum
    spec = CoinSelectionSpec(static_coins=MANY, primary_symbol="BTC")
    # when coins are selected
    selection = select_coins(spec, ListedSource())
    # then 10 remain, primary first
    assert MAX_CANDIDATES == 10
    assert selection.symbols == ["BTCUSDT", *MANY[:9]]


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"max_coins": 11}, "max_coins must be between 1 and 10, got 11"),
        ({"max_coins": 0}, "max_coins must be between 1 and 10, got 0"),
        ({"coin_source": "random"}, "unknown coin source 'random'"),
        ({"coin_source": "pool"}, "coin source 'pool' needs a pool_url"),
        ({"coin_source": "pool", "pool_url": "  "}, "coin source 'pool' needs a pool_url"),
        ({"oi_duration": "2h"}, "unknown open-interest duration '2h'"),
        ({"oi_limit": 0}, "oi_limit must be at least 1, got 0"),
    ],
)
def test_invalid_specs_are_refused(settings, message):
    # given invalid coin settings
    # when a spec is built
    # then it is refused, naming the setting
    with pytest.raises(ValueError, match=message):
        CoinSelectionSpec(**settings)


def test_malformed_static_coin_is_refused():
    # given a malformed static coin
    # when a spec is built
    # then it is refused, not stored raw
    with pytest.raises(InvalidSymbolError, match="'BTC\\$'"):
        CoinSelectionSpec(static_coins=("ETH", "BTC$"))


def test_pool_coins_are_tagged_pool(fake_pool):
    # given a pool ranking three dataset coins and one the dataset lacks
    fake_pool.body = {"data": ["SOLUSDT", "PEPEUSDT", "DOGEUSDT", "BTCUSDT"]}
    spec = CoinSelectionSpec(coin_source="pool", pool_url=fake_pool.url, static_coins=("ETH",))
    # when coins are selected
    selection = select_coins(spec, DatasetSource())
    # then the pool's coins come in its order, tagged pool
    assert selection == CoinSelection(
        (
            SelectedCoin("SOLUSDT", "pool"),
            SelectedCoin("DOGEUSDT", "pool"),
            SelectedCoin("BTCUSDT", "pool"),
        ),
        ("not available on the dataset source: PEPEUSDT",),
    )


@pytest.mark.parametrize(
    ("status", "delay_s", "body", "note"),
    [
        (500, 0.0, [], "coin pool failed: coin pool {url} answered HTTP 500"),
        (200, 1.0, ["SOLUSDT"], "coin pool failed: coin pool {url} timed out after 0.2 s"),
        (200, 0.0, b"not json", "coin pool failed: coin pool {url} answered invalid JSON"),
        (200, 0.0, [], "coin pool {url} returned no coins"),
    ],
)
def test_pool_failure_falls_back_to_static(fake_pool, status, delay_s, body, note):
    # given a pool that fails, times out, answers garbage or nothing
    fake_pool.status, fake_pool.delay_s, fake_pool.body = status, delay_s, body
    spec = CoinSelectionSpec(
        coin_source="pool", pool_url=fake_pool.url, static_coins=("ETH", "BTC"), pool_timeout_s=0.2
    )
    # when coins are selected
    selection = select_coins(spec, DatasetSource())
    # then the static coins are used and the fallback is noted
    assert selection == CoinSelection(
        _static("ETHUSDT", "BTCUSDT"),
        (note.format(url=fake_pool.url), "fell back to the static coins: ETHUSDT, BTCUSDT"),
    )


def test_pool_of_only_excluded_coins_falls_back_to_static(fake_pool):
    # given a pool whose only coin is excluded
    fake_pool.body = ["DOGEUSDT"]
    spec = CoinSelectionSpec(
        coin_source="pool", pool_url=fake_pool.url, static_coins=("BTC",), excluded_coins=("DOGE",)
    )
    # when coins are selected
    selection = select_coins(spec, DatasetSource())
    # then the static list is the fallback
    assert selection == CoinSelection(
        _static("BTCUSDT"),
        ("excluded by the strategy: DOGEUSDT", "fell back to the static coins: BTCUSDT"),
    )


def test_pool_failure_without_static_coins_is_an_error(fake_pool):
    # given a failing pool and no static coins
    fake_pool.status = 503
    spec = CoinSelectionSpec(coin_source="pool", pool_url=fake_pool.url)
    # when coins are selected
    with pytest.raises(CoinSelectionError) as caught:
        select_coins(spec, DatasetSource())
    # then the error tells the whole story
    assert str(caught.value) == (
        f"no candidate coins (pool): coin pool failed: coin pool {fake_pool.url} answered "
        "HTTP 503; fell back to the static coins, but none are configured"
    )


def test_oi_top_on_the_dataset_is_a_clear_error():
    # given a pure oi_top strategy on the dataset, which has no open interest
    spec = CoinSelectionSpec(coin_source="oi_top", static_coins=("BTC",))
    # when coins are selected
    with pytest.raises(CoinSelectionError) as caught:
        select_coins(spec, DatasetSource())
    # then it is refused, naming the reason
    assert str(caught.value) == (
        "coin source 'oi_top' needs open interest, which the dataset source does not have: "
        "the dataset source has no open-interest data"
    )


def test_mixed_on_the_dataset_uses_the_pool(fake_pool):
    # given a mixed strategy on the dataset with a working pool
    fake_pool.body = ["XRP", "AVAX"]
    spec = CoinSelectionSpec(coin_source="mixed", pool_url=fake_pool.url, static_coins=("BTC",))
    # when coins are selected
    selection = select_coins(spec, DatasetSource())
    # then the pool's coins are used and the missing OI ranking noted
    assert selection == CoinSelection(
        (SelectedCoin("XRPUSDT", "pool"), SelectedCoin("AVAXUSDT", "pool")),
        ("open-interest ranking unavailable: the dataset source has no open-interest data",),
    )


def test_mixed_on_the_dataset_with_a_failing_pool_falls_back_to_static(fake_pool):
    # given a mixed strategy whose pool fails, on a source without open interest
    fake_pool.status = 500
    spec = CoinSelectionSpec(
        coin_source="mixed", pool_url=fake_pool.url, static_coins=("BTC", "ETH")
    )
    # when coins are selected
    selection = select_coins(spec, DatasetSource())
    # then pool, then OI, then static: every step is noted
    assert selection == CoinSelection(
        _static("BTCUSDT", "ETHUSDT"),
        (
            f"coin pool failed: coin pool {fake_pool.url} answered HTTP 500",
            "open-interest ranking unavailable: the dataset source has no open-interest data",
            "fell back to the static coins: BTCUSDT, ETHUSDT",
        ),
    )


def _oi_fake_source(fake_exchange, growth: dict[str, float]) -> LiveSource:
    """Give each coin a known OI growth on the fake exchange at 12:00."""
    fake_exchange.set_now(datetime(2024, 9, 1, 12, tzinfo=UTC))
    latest = int(datetime(2024, 9, 1, 12, tzinfo=UTC).timestamp() * 1000)
    fake_exchange.open_interest_at = lambda symbol, t: (
        100.0 + (growth[symbol] if t >= latest else 0.0)
    )
    return LiveSource(api_urls=fake_exchange.url, min_request_interval_s=0, backoff_s=0)


GROWTH = {
    "BTCUSDT": 1.0,
    "ETHUSDT": 7.5,
    "SOLUSDT": -3.0,
    "XRPUSDT": 12.0,
    "DOGEUSDT": 7.5,
    "AVAXUSDT": 0.0,
    "LINKUSDT": 2.0,
}


def test_oi_top_ranks_by_open_interest_growth(fake_exchange):
    # given a live source whose coins grew by known amounts over the last hour
    source = _oi_fake_source(fake_exchange, GROWTH)
    spec = CoinSelectionSpec(
        coin_source="oi_top", oi_duration="1h", oi_limit=4, excluded_coins=("XRP",)
    )
    # when coins are selected
    selection = select_coins(spec, source, as_of=datetime(2024, 9, 1, 12, tzinfo=UTC))
    # then the highest growth comes first (ties by symbol), the excluded coin is never ranked
    assert selection == CoinSelection(
        (
            SelectedCoin("DOGEUSDT", "oi_top"),
            SelectedCoin("ETHUSDT", "oi_top"),
            SelectedCoin("LINKUSDT", "oi_top"),
            SelectedCoin("BTCUSDT", "oi_top"),
        ),
        (),
    )
    hist = [r for r in fake_exchange.requests if r.path == "/futures/data/openInterestHist"]
    assert {r.params["symbol"] for r in hist} == set(GROWTH) - {"XRPUSDT"}
    assert {(r.params["period"], r.params["limit"]) for r in hist} == {("5m", "13")}


def test_mixed_puts_pool_coins_before_oi_coins(fake_exchange, fake_pool):
    # given a pool ranking SOL and ETH, and the OI ranking above
    source = _oi_fake_source(fake_exchange, GROWTH)
    fake_pool.body = ["SOL", "ETH"]
    spec = CoinSelectionSpec(
        coin_source="mixed", pool_url=fake_pool.url, oi_duration="1h", oi_limit=3, max_coins=4
    )
    # when coins are selected
    selection = select_coins(spec, source, as_of=datetime(2024, 9, 1, 12, tzinfo=UTC))
    # then pool coins lead, OI coins follow without duplicates, each with its tag
    assert selection.coins == (
        SelectedCoin("SOLUSDT", "pool"),
        SelectedCoin("ETHUSDT", "pool"),
        SelectedCoin("XRPUSDT", "oi_top"),
        SelectedCoin("DOGEUSDT", "oi_top"),
    )


def test_mixed_with_a_failing_pool_uses_the_oi_ranking(fake_exchange, fake_pool):
    # given a failing pool and a live source with open interest
    source = _oi_fake_source(fake_exchange, GROWTH)
    fake_pool.status = 502
    spec = CoinSelectionSpec(
        coin_source="mixed", pool_url=fake_pool.url, oi_duration="1h", oi_limit=2
    )
    # when coins are selected
    selection = select_coins(spec, source, as_of=datetime(2024, 9, 1, 12, tzinfo=UTC))
    # then the OI ranking stands in, and the pool failure is noted
    assert selection == CoinSelection(
        (SelectedCoin("XRPUSDT", "oi_top"), SelectedCoin("DOGEUSDT", "oi_top")),
        (f"coin pool failed: coin pool {fake_pool.url} answered HTTP 502",),
    )


def test_oi_top_network_failure_falls_back_to_static(fake_exchange):
    # given a live source whose OI history endpoint keeps failing
    source = _oi_fake_source(fake_exchange, GROWTH)
    fake_exchange.fail_next("/futures/data/openInterestHist", status=503, times=100)
    spec = CoinSelectionSpec(coin_source="oi_top", static_coins=("BTC",), oi_duration="1h")
    # when coins are selected
    selection = select_coins(spec, source, as_of=datetime(2024, 9, 1, 12, tzinfo=UTC))
    # then the static list stands in
    assert selection.coins == _static("BTCUSDT")
    assert selection.notes == (
        "open-interest ranking failed: no open interest could be fetched for 7 symbols, "
        "e.g. binanceusdm BTCUSDT open-interest history: no answer after 3 attempts "
        '(OperationFailed: binanceusdm {"code": -1001, "msg": "Internal error; unable to '
        'process your request."})',
        "fell back to the static coins: BTCUSDT",
    )


def test_dataset_end_is_the_default_instant_for_selection():
    # given the dataset source
    # when no instant is given
    # then the dataset end is used
    assert DatasetSource().default_as_of() == DATASET_END
