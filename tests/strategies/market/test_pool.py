import pytest

from strategies.market.exceptions import PoolError
from strategies.market.pool import PoolResult, fetch_pool, parse_pool
from tests.fakes.pool_server import FakePool


@pytest.mark.parametrize(
    "body",
    [
        ["BTCUSDT", "eth", "SOL/USDT"],
        [{"symbol": "BTCUSDT", "score": 9}, {"symbol": "ETHUSDT"}, {"pair": "sol-usdt"}],
        {"data": ["BTCUSDT", "ETHUSDT", "SOLUSDT"]},
        {"coins": [{"symbol": "BTC"}, {"symbol": "ETH"}, {"symbol": "SOL"}]},
        {
            "success": True,
            "data": {"coins": [{"pair": "BTCUSDT"}, {"pair": "ETHUSDT"}, {"pair": "SOLUSDT"}]},
        },
    ],
)
def test_every_accepted_shape_gives_the_ranked_symbols(fake_pool, body):
    # given a pool answering one of the accepted shapes
    fake_pool.body = body
    # when it is fetched
    result = fetch_pool(fake_pool.url)
    # then the symbols come back normalised, in rank order
    assert result == PoolResult(("BTCUSDT", "ETHUSDT", "SOLUSDT"))
    assert fake_pool.requests == ["/pool"]


def test_unreadable_entries_are_skipped_and_reported():
    # given a pool list with junk among the coins
    body = ["BTCUSDT", "BTC/USDC", 42, {"name": "x"}, "btc", "ETHUSDT"]
    # when it is parsed
    result = parse_pool(body)
    # then good coins are kept once and the rest counted (not repeated: the pool's text)
    assert result == PoolResult(("BTCUSDT", "ETHUSDT"), 3)


def test_http_500_is_a_pool_error(fake_pool):
    # given a pool answering 500
    fake_pool.status = 500
    # when it is fetched
    with pytest.raises(PoolError) as caught:
        fetch_pool(fake_pool.url)
    # then the error says so
    assert str(caught.value) == f"coin pool {fake_pool.url} answered HTTP 500"


def test_timeout_is_a_pool_error(fake_pool):
    # given a pool slower than the timeout
    fake_pool.delay_s = 1.0
    # when it is fetched with a 0.2 s timeout
    with pytest.raises(PoolError) as caught:
        fetch_pool(fake_pool.url, timeout_s=0.2)
    # then the error says it timed out
    assert str(caught.value) == f"coin pool {fake_pool.url} timed out after 0.2 s"


def test_invalid_json_is_a_pool_error(fake_pool):
    # given a pool answering HTML
    fake_pool.body = b"<html>oops</html>"
    # when it is fetched
    with pytest.raises(PoolError) as caught:
        fetch_pool(fake_pool.url)
    # then the error says the JSON is invalid
    assert str(caught.value) == f"coin pool {fake_pool.url} answered invalid JSON"


def test_unknown_shape_is_a_pool_error(fake_pool):
    # given a pool answering an object without a list
    fake_pool.body = {"result": ["BTCUSDT"]}
    # when it is fetched
    with pytest.raises(PoolError, match="answered an unknown shape"):
        fetch_pool(fake_pool.url)


def test_unreachable_pool_is_a_pool_error():
    # given a pool that has stopped
    pool = FakePool().start()
    url = pool.url
    pool.stop()
    # when it is fetched
    with pytest.raises(PoolError) as caught:
        fetch_pool(url, timeout_s=1.0)
    # then the error names the transport failure
    assert str(caught.value).startswith(f"coin pool {url} failed: ConnectError")
