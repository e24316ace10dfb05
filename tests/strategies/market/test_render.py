import pytest

from strategies.market.dataset import DATASET_SYMBOLS
from strategies.market.render import (
    NUMBER_WIDTH,
    PERCENT_WIDTH,
    VOLUME_WIDTH,
    format_funding,
    format_percent,
    format_price,
    format_volume,
    max_render_chars,
    render_snapshot,
    render_summary,
)
from strategies.market.snapshot import (
    TIMEFRAME_MS,
    TIMEFRAMES,
    Candle,
    CoinSnapshot,
    Indicators,
    MarketSnapshot,
    TimeframeView,
)
from tests.strategies.market.conftest import dataset_snapshot


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (57970.9, "57,970.9"),
        (58130.99, "58,131"),
        (100000.0, "100,000"),
        (2477.74, "2,477.74"),
        (131.91, "131.91"),
        (0.10234, "0.10234"),
        (0.0993621, "0.0993621"),
        (0.0000123456, "0.0000123456"),
        (-150.2974, "-150.297"),
        (0.0, "0"),
        (None, "n/a"),
        (float("nan"), "n/a"),
        (1e-9, "1.00000e-09"),
        (999_999_999_999.6, "1.00000e+12"),
    ],
)
def test_format_price_keeps_six_significant_digits(value, text):
    # given a price of some magnitude
    # when it is formatted
    # then it keeps the digits that matter for that magnitude
    assert format_price(value) == text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (646.79339, "646.8"),
        (12345.0, "12.3K"),
        (1_234_567.0, "1.23M"),
        (4.56e9, "4.56B"),
        (999_600.0, "1M"),
        (0.0, "0"),
        (1e16, "1.00e+16"),
    ],
)
def test_format_volume_is_compact(value, text):
    # given a volume
    # when it is formatted
    # then it uses a K/M/B suffix
    assert format_volume(value) == text


def test_funding_and_percentages_are_signed():
    # given a funding rate per 8 h and percentages
    # when they are formatted
    # then the sign is always shown
    assert format_funding(0.0001) == "+0.0100%"
    assert format_funding(-0.0000147) == "-0.0015%"
    assert format_funding(None) == "n/a"
    assert format_percent(12.345) == "+12.35%"
    assert format_percent(-2.5e7) == "-2.5e+07%"


@pytest.mark.parametrize(
    "value",
    [-999_999_999_999.4, 999_999_999_999.6, -123456.789, -0.000001234567, 1e300, -1e-300, 5e-7],
)
def test_formatted_numbers_stay_within_their_widths(value):
    # given extreme values
    # when they are formatted
    # then no text is wider than the renderer's bound assumes
    assert len(format_price(value)) <= NUMBER_WIDTH
    assert len(format_price(value, thousands=False)) <= NUMBER_WIDTH
    assert len(format_volume(value)) <= VOLUME_WIDTH
    assert len(format_percent(value)) <= PERCENT_WIDTH
    assert len(format_funding(value)) <= PERCENT_WIDTH


def _extreme_snapshot(coins: int, rows: int) -> MarketSnapshot:
    """Return a synthetic snapshot whose every number is as wide as it can be."""
    wide = -999_999_999_999.4
    indicators = Indicators(
        ema20=wide,
        ema50=wide,
        macd=wide,
        macd_signal=wide,
        macd_hist=wide,
        rsi14=100.0,
        atr14=wide,
        bb_upper=wide,
        bb_middle=wide,
        bb_lower=wide,
        volume_change=-999_999.99,
    )
    views = tuple(
        TimeframeView(
            timeframe=timeframe,
            candles=tuple(
                Candle(i * TIMEFRAME_MS[timeframe], wide, wide, wide, wide, -1.23e15)
                for i in range(rows)
            ),
            indicators=indicators,
        )
        for timeframe in TIMEFRAMES
    )
    return MarketSnapshot(
        source="live",
        exchange="binanceusdm",
        as_of="2024-09-05T00:00:00Z",
        coins=tuple(
            CoinSnapshot(
                symbol=f"{i:016d}USDT",
                source_tag="oi_top",
                price=wide,
                timeframes=views,
                funding_rate=-9999.9999,
                open_interest=-1.23e15,
                open_interest_change_pct=-999_999.99,
            )
            for i in range(coins)
        ),
        credit="Source: Binance USDⓈ-M",
        notes=tuple("n" * 500 for _ in range(20)),
    )


@pytest.mark.parametrize("rows", [1, 20, 200])
def test_rendering_is_bounded_for_ten_coins_and_four_timeframes(rows):
    # given a synthetic 10-coin, 4-timeframe snapshot with the widest possible numbers
    snapshot = _extreme_snapshot(10, rows)
    # when it is rendered
    text = render_snapshot(snapshot)
    # then it fits the bound computed for those settings
    assert len(text) <= max_render_chars(10, 4, rows)


def test_render_bound_for_the_default_settings():
    # given 10 coins, 4 timeframes and 20 rows
    # when the bound is computed
    # then it is this many characters (about 23k tokens at most)
    assert max_render_chars(10, 4, 20) == 91_148


def test_real_snapshot_renders_well_below_the_bound():
    # given the seven dataset coins on all timeframes with 20 rows
    snapshot = dataset_snapshot(
        *((symbol, "static") for symbol in DATASET_SYMBOLS), timeframes=TIMEFRAMES, rows=20
    )
    # when it is rendered
    text = render_snapshot(snapshot)
    # then it is shorter than the bound and has a table row per candle
    assert len(text) < max_render_chars(7, 4, 20)
    assert len(text.splitlines()) == 2 + 2 + 7 * (1 + 2 + 4 * (1 + 20 + 1))


def test_render_snapshot_text():
    # given a two-coin, one-timeframe snapshot at the dataset end
    snapshot = dataset_snapshot(("BTC", "static"), ("DOGE", "pool"), timeframes=("1h",), rows=2)
    # when it is rendered
    text = render_snapshot(snapshot)
    # then this is the prompt text
    assert text == (
        "MARKET DATA at 2024-09-05T00:00:00Z, source dataset (binance), closed candles only. "
        "Source: Binance\n"
        "Candidate coins (2): BTCUSDT, DOGEUSDT\n"
        "Notes:\n"
        "- open-interest growth not available on the dataset source for BTCUSDT, DOGEUSDT\n"
        "\n"
        "## BTCUSDT (chosen by: static)\n"
        "price 57,970.9 | funding -0.0015% per 8h | open interest n/a contracts, change n/a\n"
        "1h: last 2 closed candles, oldest first (UTC open time, open, high, low, close, volume)\n"
        "09-04 22:00 58100 58390 58041.1 58131 465.3\n"
        "09-04 23:00 58131 58232 57889.8 57970.9 416.2\n"
        "indicators: EMA20 57635 EMA50 57750 | MACD(12,26,9) 150.297 signal 1.30981 "
        "hist 148.987 | RSI14 55.9 | ATR14 442.246 | BB(20,2) 58773.3/57269.5/55765.6 | "
        "volume -68.0% vs 20-candle mean\n"
        "\n"
        "## DOGEUSDT (chosen by: pool)\n"
        "price 0.098 | funding -0.0043% per 8h | open interest n/a contracts, change n/a\n"
        "1h: last 2 closed candles, oldest first (UTC open time, open, high, low, close, volume)\n"
        "09-04 22:00 0.09837 0.09877 0.09814 0.09834 7.91M\n"
        "09-04 23:00 0.09835 0.09857 0.09785 0.098 5.25M\n"
        "indicators: EMA20 0.0974591 EMA50 0.0975071 | MACD(12,26,9) 0.000344458 "
        "signal 0.000132327 hist 0.000212131 | RSI14 54.3 | ATR14 0.00100476 | "
        "BB(20,2) 0.099646/0.096933/0.09422 | volume -76.2% vs 20-candle mean\n"
    )


def test_daily_rows_show_the_date():
    # given a daily view
    snapshot = dataset_snapshot(("ETH", "static"), timeframes=("1d",), rows=1)
    # when it is rendered
    text = render_snapshot(snapshot)
    # then the row is labelled with the full date
    assert "\n2024-09-04 2425.28 2490 2306.65 2450.71 384K\n" in text


def test_notes_are_capped():
    # given a snapshot with 20 notes
    snapshot = _extreme_snapshot(1, 1)
    # when it is rendered
    lines = render_snapshot(snapshot).splitlines()
    # then 8 notes are shown, each cut to 200 characters, and the rest counted
    notes = lines[lines.index("Notes:") + 1 : lines.index("Notes:") + 10]
    assert notes[:8] == ["- " + "n" * 199 + "…"] * 8
    assert notes[8] == "- (12 more notes)"


def test_render_summary_gives_one_line_per_coin():
    # given two coins with 25 hourly rows (24 hours back)
    snapshot = dataset_snapshot(
        ("BTC", "static"), ("DOGE", "pool"), timeframes=("15m", "1h", "4h"), rows=25
    )
    # when the vote summary is rendered
    text = render_summary(snapshot)
    # then each coin has price, 24h change, trend, RSI and funding
    assert text == (
        "Market at 2024-09-05T00:00:00Z (dataset). Source: Binance\n"
        "- BTCUSDT [static]: price 57,970.9; 24h +0.84%; trend 4h down (close < EMA20 < EMA50); "
        "RSI14 4h 47.6; funding -0.0015%/8h\n"
        "- DOGEUSDT [pool]: price 0.098; 24h +1.27%; trend 4h mixed (EMA20 <= EMA50); "
        "RSI14 4h 48.8; funding -0.0043%/8h\n"
    )


def test_render_summary_labels_a_shorter_span():
    # given only eight 15m rows (two hours)
    snapshot = dataset_snapshot(("BTC", "static"), timeframes=("15m",), rows=8)
    # when the vote summary is rendered
    text = render_summary(snapshot)
    # then the change is labelled with the span it really covers
    assert text.splitlines()[1] == (
        "- BTCUSDT [static]: price 57,970.9; 2h -0.69%; trend 15m mixed (EMA20 > EMA50); "
        "RSI14 15m 51.1; funding -0.0015%/8h"
    )
