from datetime import UTC, datetime, timedelta

import pytest

from strategies.market.builder import SnapshotSpec, build_snapshot
from strategies.market.dataset import DATASET_END, DATASET_SYMBOLS, DatasetSource
from strategies.market.exceptions import (
    MarketDataError,
    SourceUnavailableError,
    UnknownSymbolError,
)
from strategies.market.live import LiveSource
from strategies.market.sources import source_for
from tests.strategies.market.conftest import MID_WINDOW, every_coin_spec, read_funding

KLINES = "/fapi/v1/klines"


def _live(fake, **options) -> LiveSource:
    settings = {"min_request_interval_s": 0, "backoff_s": 0, **options}
    return LiveSource(api_urls=fake.url, **settings)


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


@pytest.mark.parametrize("now", [MID_WINDOW, DATASET_END], ids=["mid-window", "dataset-end"])
@pytest.mark.parametrize("forming_candle", [False, True], ids=["end-time", "forming-candle"])
def test_live_snapshot_equals_the_dataset_snapshot(fake_exchange, now, forming_candle):
    # given the fake exchange serving the dataset at ``now``, with or without the forming
    # candle in its klines answers
    fake_exchange.set_now(now)
    fake_exchange.ignore_end_time = forming_candle
    spec = every_coin_spec(12, now)
    # when the same snapshot is built live and from the dataset
    live = build_snapshot(spec, _live(fake_exchange))
    replay = build_snapshot(spec, DatasetSource())
    # then candles, indicators, prices and funding are the same
    assert live.coins == replay.coins
    assert live.as_of == replay.as_of == now.strftime("%Y-%m-%dT%H:%M:%SZ")
    assert (live.source, live.exchange, live.credit) == (
        "live",
        "binanceusdm",
        "Source: Binance USDⓈ-M",
    )
    assert (replay.source, replay.exchange, replay.credit) == (
        "dataset",
        "binance",
        "Source: Binance",
    )


def test_live_source_calls_only_the_binance_usdm_market_endpoints(fake_exchange):
    # given a live source on the fake exchange
    source = _live(fake_exchange)
    spec = SnapshotSpec(
        coins=(("BTC", "static"),), timeframes=("1h", "1d"), rows=5, as_of=MID_WINDOW
    )
    # when a full snapshot (funding and open interest included) is built
    build_snapshot(spec, source)
    # then these are the requests ccxt made, nothing else
    assert sorted(set(fake_exchange.paths())) == [
        "/fapi/v1/exchangeInfo",
        "/fapi/v1/klines",
        "/fapi/v1/openInterest",
        "/fapi/v1/premiumIndex",
        "/fapi/v1/ticker/24hr",
        "/futures/data/openInterestHist",
    ]
    klines = [r.params for r in fake_exchange.requests if r.path == KLINES]
    assert sorted(klines, key=lambda p: p["interval"]) == [
        {
            "interval": "1d",
            "limit": "106",
            "symbol": "BTCUSDT",
            "endTime": str(_ms(datetime(2024, 8, 31, tzinfo=UTC))),
        },
        {
            "interval": "1h",
            "limit": "106",
            "symbol": "BTCUSDT",
            "endTime": str(_ms(datetime(2024, 9, 1, 11, tzinfo=UTC))),
        },
    ]


def test_open_interest_growth_is_read_from_the_history(fake_exchange):
    # given the fake's hourly open interest at 12:00 and 24 hours earlier
    noon = _ms(datetime(2024, 9, 1, 12, tzinfo=UTC))
    latest, base = (
        float(f"{fake_exchange.open_interest_at('BTCUSDT', t):.8f}")
        for t in (noon, noon - 86_400_000)
    )
    spec = SnapshotSpec(coins=(("BTC", "static"),), timeframes=("1h",), rows=5, as_of=MID_WINDOW)
    # when a snapshot with open interest is built
    snapshot = build_snapshot(spec, _live(fake_exchange))
    # then the change over 24h is recorded and its span noted
    assert snapshot.coins[0].open_interest_change_pct == (latest - base) / base * 100.0
    assert snapshot.notes == ("open-interest change is over the last 24h",)


def test_the_forming_candle_is_dropped(fake_exchange):
    # given an exchange that answers klines up to now, the forming 12:00 candle included
    fake_exchange.ignore_end_time = True
    # when three closed 1h candles are fetched at 12:07:30
    candles = _live(fake_exchange).fetch_candles("BTCUSDT", "1h", 3, MID_WINDOW)
    # then the exchange did send the forming candle and the source dropped it
    assert [c.open_time for c in candles] == [
        _ms(datetime(2024, 9, 1, hour, tzinfo=UTC)) for hour in (9, 10, 11)
    ]
    assert [r.params["limit"] for r in fake_exchange.requests if r.path == KLINES] == ["4"]


def test_price_funding_and_open_interest_are_the_exchange_values(fake_exchange):
    # given a live source on the fake exchange at 12:07:30
    source = _live(fake_exchange)
    rates = dict(read_funding("ETHUSDT"))
    # when price, funding and open interest are asked for
    price = source.fetch_price("ETHUSDT", MID_WINDOW)
    funding = source.fetch_funding_rate("ETHUSDT", MID_WINDOW)
    interest = source.fetch_open_interest("ETHUSDT", MID_WINDOW)
    # then they are the fake's answers: last 15m close, last settled rate, made-up OI
    assert price == DatasetSource().fetch_price("ETHUSDT", MID_WINDOW) == 2477.74
    assert funding == rates[_ms(datetime(2024, 9, 1, 8, tzinfo=UTC))]
    assert interest == round(fake_exchange.open_interest_at("ETHUSDT", _ms(MID_WINDOW)), 3)


@pytest.mark.parametrize(
    ("options", "faults", "attempts"),
    [
        pytest.param(
            {"attempts": 5},
            [
                ("fail_next", {"status": 503, "times": 2}),
                ("drop_next", {}),
                ("fail_next", {"status": 429}),
            ],
            5,
            id="network-errors",
        ),
        pytest.param(
            {"timeout_s": 0.2},
            [("delay_next", {"seconds": 0.6})],
            2,
            id="timeouts",
        ),
    ],
)
def test_network_errors_and_timeouts_are_retried(fake_exchange, options, faults, attempts):
    """Klines failing twice with 503, once dropped, then a 429, are answered at the fifth
    attempt; a first answer slower than the 0.2 s timeout, at the retry."""
    # given klines failing so, then answering
    source = _live(fake_exchange, **options)
    for fault, arguments in faults:
        getattr(fake_exchange, fault)(KLINES, **arguments)
    # when candles are fetched
    candles = source.fetch_candles("SOLUSDT", "4h", 2, MID_WINDOW)
    # then the last attempt answers
    assert len(candles) == 2
    assert fake_exchange.paths().count(KLINES) == attempts


def test_persistent_failure_is_source_unavailable_after_the_attempts(fake_exchange):
    # given an exchange answering 503 to every klines request
    source = _live(fake_exchange, attempts=3)
    fake_exchange.fail_next(KLINES, status=503, times=10)
    # when candles are fetched
    with pytest.raises(SourceUnavailableError) as caught:
        source.fetch_candles("SOLUSDT", "4h", 2, MID_WINDOW)
    # then three attempts were made and the error says so
    assert str(caught.value) == (
        "binanceusdm SOLUSDT 4h candles: no answer after 3 attempts (OperationFailed: "
        'binanceusdm {"code": -1001, "msg": "Internal error; unable to process your request."})'
    )
    assert fake_exchange.paths().count(KLINES) == 3


def test_a_bad_request_is_not_retried(fake_exchange):
    # given an exchange refusing the klines request as malformed
    source = _live(fake_exchange)
    fake_exchange.fail_next(KLINES, status=400)
    # when candles are fetched
    with pytest.raises(MarketDataError) as caught:
        source.fetch_candles("SOLUSDT", "4h", 2, MID_WINDOW)
    # then one request was made and the error is terminal
    assert not isinstance(caught.value, SourceUnavailableError)
    assert fake_exchange.paths().count(KLINES) == 1


def test_candles_are_cached_per_coin_and_timeframe(fake_exchange):
    # given a live source with the default 15 s cache
    source = _live(fake_exchange)
    # when the same candles, then fewer of them, are fetched twice
    first = source.fetch_candles("BTCUSDT", "1h", 50, MID_WINDOW)
    again = source.fetch_candles("BTCUSDT", "1h", 50, MID_WINDOW + timedelta(minutes=5))
    fewer = source.fetch_candles("BTCUSDT", "1h", 10, MID_WINDOW)
    # then the exchange was asked once
    assert again == first
    assert fewer == first[-10:]
    assert fake_exchange.paths().count(KLINES) == 1


def test_a_newly_closed_candle_bypasses_the_cache(fake_exchange):
    # given cached 1h candles at 12:07:30
    source = _live(fake_exchange)
    source.fetch_candles("BTCUSDT", "1h", 5, MID_WINDOW)
    fake_exchange.set_now(MID_WINDOW + timedelta(hours=1))
    # when candles are fetched after the 12:00 candle closed, or more than were cached
    later = source.fetch_candles("BTCUSDT", "1h", 5, MID_WINDOW + timedelta(hours=1))
    source.fetch_candles("BTCUSDT", "1h", 8, MID_WINDOW + timedelta(hours=1))
    # then each goes to the exchange
    assert later[-1].open_time == _ms(datetime(2024, 9, 1, 12, tzinfo=UTC))
    assert fake_exchange.paths().count(KLINES) == 3


def test_a_zero_ttl_disables_the_cache(fake_exchange):
    # given a live source without cache
    source = _live(fake_exchange, cache_ttl_s=0)
    # when the same candles are fetched twice
    source.fetch_candles("BTCUSDT", "1h", 5, MID_WINDOW)
    source.fetch_candles("BTCUSDT", "1h", 5, MID_WINDOW)
    # then both reach the exchange
    assert fake_exchange.paths().count(KLINES) == 2


def test_available_symbols_are_usdt_perpetuals_by_quote_volume(fake_exchange):
    # given an exchange that also lists a USDC perpetual and a quarterly future
    source = _live(fake_exchange)
    # when the symbols are listed twice
    symbols = source.available_symbols()
    source.available_symbols()
    # then only USDT perpetuals come back, most traded first, markets loaded once
    assert symbols == [
        "BTCUSDT",
        "ETHUSDT",
        "SOLUSDT",
        "XRPUSDT",
        "AVAXUSDT",
        "DOGEUSDT",
        "LINKUSDT",
    ]
    assert fake_exchange.paths() == ["/fapi/v1/exchangeInfo", "/fapi/v1/ticker/24hr"]


def test_unknown_symbol_is_refused_without_a_request(fake_exchange):
    # given a live source whose exchange does not list PEPE
    source = _live(fake_exchange)
    # when its candles are asked for
    with pytest.raises(UnknownSymbolError) as caught:
        source.fetch_candles("pepe", "1h", 5, MID_WINDOW)
    # then it is refused after loading the markets only
    assert (
        str(caught.value)
        == "PEPEUSDT (PEPE/USDT:USDT) is not an active USDT perpetual on binanceusdm"
    )
    assert fake_exchange.paths() == ["/fapi/v1/exchangeInfo"]


def test_requests_for_several_coins_run_concurrently(fake_exchange):
    # given every klines answer delayed by 50 ms
    source = _live(fake_exchange, max_concurrency=4)
    fake_exchange.delay_next(KLINES, seconds=0.05, times=8)
    spec = SnapshotSpec(
        coins=tuple((s, "static") for s in DATASET_SYMBOLS[:4]),
        timeframes=("1h", "4h"),
        rows=5,
        include_funding=False,
        include_open_interest=False,
        as_of=MID_WINDOW,
    )
    # when a snapshot of four coins is built
    build_snapshot(spec, source)
    # then the exchange served several requests at once, never more than four
    assert 2 <= fake_exchange.max_in_flight <= 4


def test_source_for_shares_one_live_source_per_configuration(fake_exchange):
    # given the factory
    # when the same live source is asked for twice, and a private one
    first = source_for("live", api_urls=fake_exchange.url, min_request_interval_s=0)
    second = source_for("live", api_urls=fake_exchange.url, min_request_interval_s=0)
    private = source_for("live", api_urls=fake_exchange.url, shared=False)
    # then the shared one is reused
    assert first is second
    assert private is not first
    assert isinstance(first, LiveSource)
    assert isinstance(source_for("dataset"), DatasetSource)


def test_api_urls_mapping_overrides_single_entries(fake_exchange):
    # given only the fapiPublic and fapiData entries pointed at the fake
    source = LiveSource(
        api_urls={
            "fapiPublic": f"{fake_exchange.url}/fapi/v1",
            "fapiData": f"{fake_exchange.url}/futures/data",
        },
        min_request_interval_s=0,
    )
    # when candles are fetched
    candles = source.fetch_candles("BTCUSDT", "4h", 3, MID_WINDOW)
    # then the fake answered
    assert len(candles) == 3
    assert fake_exchange.paths() == ["/fapi/v1/exchangeInfo", KLINES]


@pytest.mark.parametrize(
    ("name", "exchange", "message"),
    [
        ("replay", "binanceusdm", "unknown market source 'replay'"),
        ("live", "nosuchexchange", "unknown ccxt exchange 'nosuchexchange'"),
    ],
)
def test_unknown_sources_are_refused(name, exchange, message):
    # given a source or exchange name that does not exist
    # when a source is asked for
    # then it is refused
    with pytest.raises(ValueError, match=message):
        source_for(name, exchange=exchange, shared=False)
