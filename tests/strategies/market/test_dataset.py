import random
from bisect import bisect_right
from datetime import UTC, datetime, timedelta

import pytest

from strategies.market.builder import build_snapshot
from strategies.market.dataset import (
    DATASET_END,
    DATASET_SYMBOLS,
    DATASET_WINDOWS,
    FUNDING_START,
    DatasetSource,
    dataset_window,
)
from strategies.market.exceptions import (
    OpenInterestUnavailableError,
    OutsideWindowError,
    UnknownSymbolError,
)
from strategies.market.snapshot import TIMEFRAME_MS
from tests.strategies.market.conftest import every_coin_spec, read_funding, read_rows

DAY_MS = TIMEFRAME_MS["1d"]


def _ms(moment: datetime) -> int:
    return int(moment.timestamp() * 1000)


@pytest.mark.parametrize("symbol", DATASET_SYMBOLS)
@pytest.mark.parametrize("timeframe", ["15m", "1h", "4h"])
def test_window_constants_match_the_files(symbol, timeframe):
    # given a dataset file
    rows = read_rows(symbol, timeframe)
    # when its first and last rows are read
    first_open, last_open = int(rows[0][0]), int(rows[-1][0])
    # then the declared window is exactly the file's
    window = dataset_window(timeframe)
    assert first_open == _ms(window.start)
    assert last_open + TIMEFRAME_MS[timeframe] == _ms(window.end) == _ms(DATASET_END)


@pytest.mark.parametrize("symbol", DATASET_SYMBOLS)
def test_funding_window_matches_the_files(symbol):
    # given a funding file
    rates = read_funding(symbol)
    # when its first and last settlements are read
    # then the first is FUNDING_START and the last the documented 2024-09-04 16:00
    assert rates[0][0] == _ms(FUNDING_START)
    assert rates[-1][0] == _ms(datetime(2024, 9, 4, 16, tzinfo=UTC))
    assert len(rates) == 744


def test_dataset_end_is_the_last_close():
    # given the dataset
    # when its end and windows are read
    # then they are the documented instants
    assert datetime(2024, 9, 5, tzinfo=UTC) == DATASET_END
    assert {tf: str(window) for tf, window in DATASET_WINDOWS.items()} == {
        "15m": "2024-08-05T00:00Z..2024-09-05T00:00Z",
        "1h": "2024-05-08T00:00Z..2024-09-05T00:00Z",
        "4h": "2024-01-01T00:00Z..2024-09-05T00:00Z",
        "1d": "2024-01-01T00:00Z..2024-09-05T00:00Z",
    }


def test_daily_candles_aggregate_six_4h_candles_from_midnight():
    # given the 4h rows of 2024-03-14 for BTC (the day of the 73,777 high)
    day = _ms(datetime(2024, 3, 14, tzinfo=UTC))
    rows = [row for row in read_rows("BTCUSDT", "4h") if day <= int(row[0]) < day + DAY_MS]
    # when the 1d candle closing at the next midnight is fetched
    candles = DatasetSource().fetch_candles("BTCUSDT", "1d", 1, datetime(2024, 3, 15, tzinfo=UTC))
    # then it is the first open, highest high, lowest low, last close and summed volume
    assert len(rows) == 6
    candle = candles[0]
    assert candle.open_time == day
    assert candle.open == float(rows[0][1])
    assert candle.high == max(float(row[2]) for row in rows) == 73777.0
    assert candle.low == min(float(row[3]) for row in rows)
    assert candle.close == float(rows[-1][4])
    assert candle.volume == sum(float(row[5]) for row in rows)


def test_daily_candles_cover_every_complete_day():
    # given the whole 4h history (2024-01-01 .. 2024-09-04)
    # when every closed 1d candle at the end is fetched
    candles = DatasetSource().fetch_candles("ETHUSDT", "1d", 1000, DATASET_END, min_rows=1)
    # then there is one per day, midnight-aligned
    assert len(candles) == 248
    assert candles[0].open_time == _ms(datetime(2024, 1, 1, tzinfo=UTC))
    assert candles[-1].open_time == _ms(datetime(2024, 9, 4, tzinfo=UTC))
    assert all(candle.open_time % DAY_MS == 0 for candle in candles)


def test_a_day_becomes_visible_only_when_it_closes():
    # given an instant one millisecond before midnight
    before = datetime(2024, 9, 4, 23, 59, 59, 999000, tzinfo=UTC)
    # when the last closed daily candle is fetched then and at midnight
    source = DatasetSource()
    last_before = source.fetch_candles("BTCUSDT", "1d", 1, before)[0]
    last_at = source.fetch_candles("BTCUSDT", "1d", 1, DATASET_END)[0]
    # then the day of 09-04 only appears at midnight
    assert last_before.open_time == _ms(datetime(2024, 9, 3, tzinfo=UTC))
    assert last_at.open_time == _ms(datetime(2024, 9, 4, tzinfo=UTC))


def test_no_look_ahead_at_random_instants():
    """Every candle shown closed by as_of, and each last close is the CSV row before it."""
    # given 25 seeded random instants (ms precision) where every timeframe has data
    rng = random.Random(20240905)
    start = _ms(datetime(2024, 8, 6, tzinfo=UTC))
    instants = [rng.randrange(start, _ms(DATASET_END) + 1) for _ in range(25)]
    files = {(s, tf): read_rows(s, tf) for s in DATASET_SYMBOLS for tf in ("15m", "1h", "4h")}
    funding = {symbol: read_funding(symbol) for symbol in DATASET_SYMBOLS}
    source = DatasetSource()
    for as_of_ms in instants:
        as_of = datetime.fromtimestamp(as_of_ms / 1000, tz=UTC)
        # when a snapshot is built at that instant
        snapshot = build_snapshot(every_coin_spec(8, as_of), source)
        # then nothing in it closed after as_of (to the second the snapshot records)
        cutoff = as_of_ms // 1000 * 1000
        for coin in snapshot.coins:
            for view in coin.timeframes:
                step = TIMEFRAME_MS[view.timeframe]
                assert len(view.candles) == 8
                assert all(c.open_time + step <= cutoff for c in view.candles)
                # and the last close is the dataset's last row closed by then
                if view.timeframe == "1d":
                    rows = files[(coin.symbol, "4h")]
                    last_day = cutoff // DAY_MS * DAY_MS - DAY_MS
                    expected = next(r for r in rows if int(r[0]) == last_day + 5 * 4 * 3_600_000)
                else:
                    rows = files[(coin.symbol, view.timeframe)]
                    expected = [r for r in rows if int(r[0]) + step <= cutoff][-1]
                assert view.candles[-1].close == float(expected[4])
            last_15m = [r for r in files[(coin.symbol, "15m")] if int(r[0]) + 900_000 <= cutoff]
            assert coin.price == float(last_15m[-1][4])
            times = [t for t, _ in funding[coin.symbol]]
            assert coin.funding_rate == funding[coin.symbol][bisect_right(times, cutoff) - 1][1]


def test_candles_at_the_first_possible_instant_and_one_ms_earlier():
    # given the 1h window start and 30 rows wanted
    source = DatasetSource()
    earliest = DATASET_WINDOWS["1h"].start + timedelta(hours=30)
    # when fetched exactly when the 30th candle closes
    candles = source.fetch_candles("SOLUSDT", "1h", 30, earliest)
    # then all 30 are there
    assert len(candles) == 30
    assert candles[0].open_time == _ms(DATASET_WINDOWS["1h"].start)
    # and one millisecond earlier it is an error naming symbol, timeframe and window
    with pytest.raises(OutsideWindowError) as caught:
        source.fetch_candles("SOLUSDT", "1h", 30, earliest - timedelta(milliseconds=1))
    assert str(caught.value) == (
        "SOLUSDT 1h: 30 closed candles wanted at 2024-05-09T05:59:59Z, the dataset has 29 by "
        "then (window 2024-05-08T00:00Z..2024-09-05T00:00Z; the earliest as_of for 30 candles "
        "is 2024-05-09T06:00Z)"
    )


def test_min_rows_allows_a_shorter_history():
    # given an instant 12 hours into the 1h window
    as_of = datetime(2024, 5, 8, 12, tzinfo=UTC)
    # when 100 rows are asked for but 10 are enough
    candles = DatasetSource().fetch_candles("BTCUSDT", "1h", 100, as_of, min_rows=10)
    # then the 12 that exist are returned
    assert len(candles) == 12


AFTER_THE_END = DATASET_END + timedelta(minutes=15)


@pytest.mark.parametrize(
    ("ask", "error", "message"),
    [
        pytest.param(
            lambda source: source.fetch_candles("BTCUSDT", "15m", 10, AFTER_THE_END),
            OutsideWindowError,
            "BTCUSDT 15m: as_of 2024-09-05T00:15Z is after the dataset end 2024-09-05T00:00Z "
            "(window 2024-08-05T00:00Z..2024-09-05T00:00Z)",
            id="candles-after-the-end",
        ),
        pytest.param(
            lambda source: source.fetch_price("BTCUSDT", AFTER_THE_END),
            OutsideWindowError,
            "BTCUSDT price: as_of 2024-09-05T00:15Z is after the dataset end "
            "2024-09-05T00:00Z (window 2024-01-01T00:00Z..2024-09-05T00:00Z)",
            id="price-after-the-end",
        ),
        pytest.param(
            lambda source: source.fetch_funding_rate("BTCUSDT", AFTER_THE_END),
            OutsideWindowError,
            "BTCUSDT funding: as_of 2024-09-05T00:15Z is after the dataset end "
            "2024-09-05T00:00Z (window 2024-01-01T00:00Z..2024-09-05T00:00Z)",
            id="funding-after-the-end",
        ),
        pytest.param(
            # before the first 4h candle closes
            lambda source: source.fetch_price("BTCUSDT", datetime(2024, 1, 1, 3, tzinfo=UTC)),
            OutsideWindowError,
            "BTCUSDT: no price at 2024-01-01T03:00Z, before the first closed candle "
            "(window 2024-01-01T00:00Z..2024-09-05T00:00Z)",
            id="price-before-any-candle",
        ),
        pytest.param(
            lambda source: source.fetch_candles("pepe", "1h", 5, DATASET_END),
            UnknownSymbolError,
            "PEPEUSDT is not in the dataset (it has BTCUSDT, ETHUSDT, SOLUSDT, XRPUSDT, "
            "DOGEUSDT, AVAXUSDT, LINKUSDT)",
            id="unknown-symbol",
        ),
        pytest.param(
            lambda source: source.fetch_candles("BTCUSDT", "1h", 5, datetime(2024, 9, 1)),
            ValueError,
            "as_of must be timezone-aware (UTC), got naive 2024-09-01T00:00:00",
            id="naive-instant",
        ),
        pytest.param(
            lambda source: source.fetch_candles("BTCUSDT", "5m", 5, DATASET_END),
            ValueError,
            "unknown timeframe '5m': expected one of 15m, 1h, 4h, 1d",
            id="unknown-timeframe",
        ),
    ],
)
def test_what_the_dataset_cannot_answer_is_refused_with_the_reason(ask, error, message):
    # given the dataset source
    source = DatasetSource()
    # when candles, a price or funding it has not are asked for
    # then each is a clear error
    with pytest.raises(error) as caught:
        ask(source)
    assert str(caught.value) == message


def test_price_falls_back_to_the_finest_timeframe_with_data():
    # given an instant before the 15m and 1h windows
    as_of = datetime(2024, 3, 1, 2, tzinfo=UTC)
    rows = read_rows("XRPUSDT", "4h")
    # when the price is asked for
    price = DatasetSource().fetch_price("xrp", as_of)
    # then it is the close of the last closed 4h candle (00:00-04:00 is still open)
    expected = next(r for r in rows if int(r[0]) == _ms(datetime(2024, 2, 29, 20, tzinfo=UTC)))
    assert price == float(expected[4])


def test_funding_is_the_last_settled_rate():
    # given the settlement at 2024-09-04 16:00
    settled = datetime(2024, 9, 4, 16, tzinfo=UTC)
    rates = dict(read_funding("BTCUSDT"))
    source = DatasetSource()
    # when funding is asked for at, just before and after it
    at = source.fetch_funding_rate("BTCUSDT", settled)
    before = source.fetch_funding_rate("BTCUSDT", settled - timedelta(milliseconds=1))
    after = source.fetch_funding_rate("BTCUSDT", DATASET_END)
    # then settlement counts from its instant on
    assert at == rates[_ms(settled)] == -0.0000147
    assert before == rates[_ms(settled - timedelta(hours=8))]
    assert after == at


def test_open_interest_is_absent_from_the_dataset():
    # given the dataset source
    source = DatasetSource()
    # when open interest is asked for
    # then the value is None and the history a clear error
    assert source.fetch_open_interest("BTCUSDT", DATASET_END) is None
    with pytest.raises(OpenInterestUnavailableError) as caught:
        source.fetch_open_interest_history("BTCUSDT", "1h", 25, DATASET_END)
    assert str(caught.value) == "the dataset source has no open-interest data"
