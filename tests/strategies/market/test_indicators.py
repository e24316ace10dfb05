from datetime import UTC, datetime

import numpy as np
import pytest
import talib

from strategies.market.dataset import DatasetSource
from strategies.market.indicators import (
    WARMUP_ROWS,
    compute_indicators,
    history_rows,
    volume_change,
)
from strategies.market.snapshot import TIMEFRAME_MS, Candle, Indicators
from tests.strategies.market.conftest import read_rows

AS_OF = datetime(2024, 8, 20, 9, 30, tzinfo=UTC)


@pytest.mark.parametrize(
    ("symbol", "timeframe"), [("BTCUSDT", "1h"), ("DOGEUSDT", "15m"), ("LINKUSDT", "4h")]
)
def test_indicators_equal_talib_on_the_csv_series(symbol, timeframe):
    # given the candles the builder would fetch to show 20 rows, and the same CSV rows
    candles = DatasetSource().fetch_candles(symbol, timeframe, history_rows(20), AS_OF)
    as_of_ms = int(AS_OF.timestamp() * 1000)
    rows = [
        r for r in read_rows(symbol, timeframe) if int(r[0]) + TIMEFRAME_MS[timeframe] <= as_of_ms
    ]
    rows = rows[-history_rows(20) :]
    high, low, close, volume = (np.array([float(r[i]) for r in rows]) for i in (2, 3, 4, 5))
    # when the indicators are computed
    indicators = compute_indicators(candles)
    # then each equals TA-Lib's own output at the last row
    macd, signal, hist = talib.MACD(close, 12, 26, 9)
    upper, middle, lower = talib.BBANDS(close, 20, 2.0, 2.0, 0)
    assert len(candles) == 120 == len(rows)
    assert indicators == Indicators(
        ema20=float(talib.EMA(close, 20)[-1]),
        ema50=float(talib.EMA(close, 50)[-1]),
        macd=float(macd[-1]),
        macd_signal=float(signal[-1]),
        macd_hist=float(hist[-1]),
        rsi14=float(talib.RSI(close, 14)[-1]),
        atr14=float(talib.ATR(high, low, close, 14)[-1]),
        bb_upper=float(upper[-1]),
        bb_middle=float(middle[-1]),
        bb_lower=float(lower[-1]),
        volume_change=(volume[-1] / volume[-21:-1].mean() - 1) * 100,
    )


def test_history_rows_adds_the_warmup():
    # given 12 rows shown
    # when the fetch size is asked for
    # then 100 warm-up rows are added
    assert WARMUP_ROWS == 100
    assert history_rows(12) == 112


def test_selection_computes_only_the_chosen_indicators():
    # given 120 candles
    candles = DatasetSource().fetch_candles("ETHUSDT", "1h", 120, AS_OF)
    # when only RSI and ATR are selected
    indicators = compute_indicators(candles, ["rsi", "atr"])
    # then the others are None
    full = compute_indicators(candles)
    assert indicators == Indicators(rsi14=full.rsi14, atr14=full.atr14)


def test_short_series_give_none_where_talib_has_no_value():
    # given 30 candles: enough for EMA20, RSI and Bollinger, not for EMA50 or the MACD signal
    candles = DatasetSource().fetch_candles("SOLUSDT", "4h", 30, AS_OF)
    # when the indicators are computed
    indicators = compute_indicators(candles)
    # then what cannot be computed is None
    assert indicators.ema20 is not None
    assert indicators.ema50 is None
    assert indicators.macd is None
    assert indicators.macd_signal is None
    assert indicators.rsi14 is not None
    assert indicators.bb_middle is not None
    assert indicators.volume_change is not None


def test_no_candles_give_empty_indicators():
    # given no candles
    # when the indicators are computed
    # then every value is None
    assert compute_indicators([]) == Indicators()


def test_unknown_indicator_is_refused():
    # given a selection with a typo
    # when the indicators are computed
    # then it is an error naming the bad name
    candle = Candle(0, 1.0, 1.0, 1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="unknown indicator 'stoch'"):
        compute_indicators([candle], ["rsi", "stoch"])


@pytest.mark.parametrize(
    ("volumes", "expected"),
    [
        ([10.0] * 20 + [15.0], 50.0),
        ([10.0] * 20 + [5.0], -50.0),
        ([99.0] + [10.0] * 20 + [10.0], 0.0),
        ([10.0] * 20, None),
        ([0.0] * 20 + [5.0], None),
    ],
)
def test_volume_change_is_the_last_volume_against_the_previous_20(volumes, expected):
    # given a volume series
    # when the volume change is computed
    # then it compares the last volume with the mean of the 20 before it, in percent
    assert volume_change(volumes) == expected
