"""The paper exchange's fill arithmetic, and the candles its clock walks through."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from strategies.market.dataset import DatasetSource
from strategies.market.snapshot import TIMEFRAME_MS
from traders.exchanges.fills import crossing, fill_fee, realized_pnl
from traders.services import candles_between

D = Decimal


@pytest.mark.parametrize(
    ("side", "low", "high", "expected"),
    [
        ("long", "97", "103", None),
        ("long", "95", "103", ("stop_loss", D("95"))),
        ("long", "97", "110", ("take_profit", D("110"))),
        ("long", "90", "120", ("stop_loss", D("95"))),
        ("short", "97", "103", None),
        ("short", "97", "105", ("stop_loss", D("105"))),
        ("short", "90", "103", ("take_profit", D("90"))),
        ("short", "80", "120", ("stop_loss", D("105"))),
    ],
)
def test_a_candle_crossing_a_price_fills_it_and_the_stop_wins_when_both_are_crossed(
    side, low, high, expected
):
    # given a position with its stop 5 % away and its target 10 % away from 100
    stop, target = (D("95"), D("110")) if side == "long" else (D("105"), D("90"))
    # when a candle with this low and high is checked
    # then the price it crossed fills (the stop when both are: conservative)
    assert crossing(side, stop, target, D(low), D(high)) == expected


def test_fees_and_pnl_are_rounded_half_up_to_eight_places():
    # given a fill of 0.021094 BTC at 59257.66 and a fee rate of 0.04 %
    # when the fee and the loss of a long closed 3 % lower are computed
    fee = fill_fee(D("59257.66"), D("0.021094"), D("0.0004"))
    pnl = realized_pnl("long", D("59257.66"), D("57479.9302"), D("0.021094"))
    # then both are exact to 8 places
    assert fee == D("0.49999243")
    assert pnl == D("-37.49943240")


def test_a_short_gains_when_the_price_falls():
    # given a short entered at 100
    # when it closes at 90
    # then it gained 10 per unit
    assert realized_pnl("short", D("100"), D("90"), D("2")) == D("20.00000000")


def test_candles_between_use_the_finest_timeframe_covering_each_stretch():
    # given the dataset, whose 15m candles start on 2024-08-05 (1h ones earlier)
    source = DatasetSource()
    start = datetime(2024, 8, 4, 22, tzinfo=UTC)
    end = datetime(2024, 8, 5, 0, 30, tzinfo=UTC)
    # when the candles from 22:00 to 00:30 are asked
    candles = candles_between(source, "BTCUSDT", start, end)
    # then two hourly candles lead up to midnight and two 15m candles follow
    opens = [datetime.fromtimestamp(c.open_time / 1000, UTC).strftime("%d %H:%M") for c in candles]
    assert opens == ["04 22:00", "04 23:00", "05 00:00", "05 00:15"]
    hourly = source.fetch_candles("BTCUSDT", "1h", 1, datetime(2024, 8, 5, tzinfo=UTC))[0]
    assert candles[1] == hourly
    assert candles[2].open_time + TIMEFRAME_MS["15m"] == candles[3].open_time


def test_candles_between_leave_out_candles_closed_by_the_start():
    # given a start at a quarter past, inside an hour
    source = DatasetSource()
    start = datetime(2024, 8, 5, 10, 15, tzinfo=UTC)
    end = datetime(2024, 8, 5, 10, 45, tzinfo=UTC)
    # when the candles are asked
    candles = candles_between(source, "BTCUSDT", start, end)
    # then only the 15m candles closing after 10:15 and by 10:45 are there
    opens = [datetime.fromtimestamp(c.open_time / 1000, UTC).strftime("%H:%M") for c in candles]
    assert opens == ["10:15", "10:30"]
