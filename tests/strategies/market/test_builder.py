import dataclasses
import json
from datetime import UTC, datetime

import pytest

from strategies.market.builder import MAX_ROWS, SnapshotSpec, build_snapshot
from strategies.market.coins import CoinSelection, SelectedCoin
from strategies.market.dataset import DATASET_END, DatasetSource
from strategies.market.exceptions import OutsideWindowError, UnknownSymbolError
from strategies.market.indicators import compute_indicators
from strategies.market.snapshot import Indicators, MarketSnapshot


def test_dataset_snapshot_at_the_end():
    # given two coins, three timeframes with different row counts, at the default instant
    spec = SnapshotSpec(
        coins=(("BTC", "static"), SelectedCoin("ethusdt", "pool")),
        timeframes=("4h", "15m", "1h"),
        rows={"15m": 4, "1h": 6, "4h": 3},
    )
    # when the snapshot is built from the dataset
    snapshot = build_snapshot(spec, DatasetSource())
    # then it records source, instant, credit, coins in order, rows per timeframe
    assert (snapshot.source, snapshot.exchange, snapshot.as_of, snapshot.credit) == (
        "dataset",
        "binance",
        "2024-09-05T00:00:00Z",
        "Source: Binance",
    )
    assert [(c.symbol, c.source_tag) for c in snapshot.coins] == [
        ("BTCUSDT", "static"),
        ("ETHUSDT", "pool"),
    ]
    btc = snapshot.coins[0]
    assert [(v.timeframe, len(v.candles)) for v in btc.timeframes] == [
        ("15m", 4),
        ("1h", 6),
        ("4h", 3),
    ]
    assert btc.price == 57970.9
    assert btc.funding_rate == -0.0000147
    assert btc.open_interest is None
    assert btc.open_interest_change_pct is None
    assert snapshot.notes == (
        "open-interest growth not available on the dataset source for BTCUSDT, ETHUSDT",
    )


def test_indicators_use_the_warmup_beyond_the_rows_shown():
    # given a snapshot showing 5 rows of 1h
    spec = SnapshotSpec(coins=(("SOL", "static"),), timeframes=("1h",), rows=5)
    # when it is built
    view = build_snapshot(spec, DatasetSource()).coins[0].timeframes[0]
    # then its indicators are those of the 105 candles fetched, not of the 5 shown
    history = DatasetSource().fetch_candles("SOLUSDT", "1h", 105, DATASET_END)
    assert view.candles == tuple(history[-5:])
    assert view.indicators == compute_indicators(history)
    assert view.indicators.ema50 is not None


def test_indicator_selection_reaches_the_snapshot():
    # given only EMA selected
    spec = SnapshotSpec(coins=(("BTC", "static"),), timeframes=("4h",), indicators=("ema",))
    # when the snapshot is built
    indicators = build_snapshot(spec, DatasetSource()).coins[0].timeframes[0].indicators
    # then the other indicators are absent
    assert indicators == Indicators(ema20=indicators.ema20, ema50=indicators.ema50)


def test_funding_and_open_interest_can_be_left_out():
    # given a spec without funding and open interest
    spec = SnapshotSpec(
        coins=(("BTC", "static"),), include_funding=False, include_open_interest=False
    )
    # when the snapshot is built
    snapshot = build_snapshot(spec, DatasetSource())
    # then neither is there, and nothing is noted
    assert snapshot.coins[0].funding_rate is None
    assert snapshot.notes == ()


def test_short_history_shortens_the_warmup_with_a_note():
    # given an instant one month into the 4h window and 10 daily rows
    as_of = datetime(2024, 2, 1, tzinfo=UTC)
    spec = SnapshotSpec(
        coins=(("BTC", "static"), ("ETH", "static")),
        timeframes=("1d",),
        rows=10,
        include_open_interest=False,
        as_of=as_of,
    )
    # when the snapshot is built
    snapshot = build_snapshot(spec, DatasetSource())
    # then the 31 days that exist are used and the note says so
    assert len(snapshot.coins[0].timeframes[0].candles) == 10
    assert snapshot.notes == (
        "indicator warm-up shortened by the data window: 1d (31 candles) for BTCUSDT, ETHUSDT",
    )


def test_selection_notes_come_first():
    # given a coin selection with a fallback note
    selection = CoinSelection((SelectedCoin("BTCUSDT", "static"),), ("coin pool failed: x",))
    # when a snapshot spec is made from it and built
    spec = SnapshotSpec.from_selection(selection, include_open_interest=False, timeframes=("1h",))
    snapshot = build_snapshot(spec, DatasetSource())
    # then the note is carried
    assert snapshot.notes == ("coin pool failed: x",)


def test_a_failing_secondary_coin_is_dropped_with_a_note():
    # given a second coin the dataset lacks
    spec = SnapshotSpec(
        coins=(("BTC", "static"), ("PEPE", "pool")), timeframes=("1h",), include_open_interest=False
    )
    # when the snapshot is built
    snapshot = build_snapshot(spec, DatasetSource())
    # then it is dropped and noted
    assert snapshot.symbols == ["BTCUSDT"]
    assert snapshot.notes == (
        "PEPEUSDT dropped: PEPEUSDT is not in the dataset (it has BTCUSDT, ETHUSDT, SOLUSDT, "
        "XRPUSDT, DOGEUSDT, AVAXUSDT, LINKUSDT)",
    )


def test_a_failing_primary_coin_fails_the_snapshot():
    # given a first coin the dataset lacks
    spec = SnapshotSpec(coins=(("PEPE", "static"), ("BTC", "static")), timeframes=("1h",))
    # when the snapshot is built
    # then the error is raised
    with pytest.raises(UnknownSymbolError, match="PEPEUSDT is not in the dataset"):
        build_snapshot(spec, DatasetSource())


def test_outside_the_window_fails_the_snapshot():
    # given an instant before the 15m window
    spec = SnapshotSpec(
        coins=(("BTC", "static"),),
        timeframes=("15m",),
        rows=4,
        as_of=datetime(2024, 8, 1, tzinfo=UTC),
    )
    # when the snapshot is built
    with pytest.raises(OutsideWindowError) as caught:
        build_snapshot(spec, DatasetSource())
    # then the error names symbol, timeframe and window
    assert str(caught.value) == (
        "BTCUSDT 15m: 4 closed candles wanted at 2024-08-01T00:00Z, the dataset has 0 by then "
        "(window 2024-08-05T00:00Z..2024-09-05T00:00Z; the earliest as_of for 4 candles is "
        "2024-08-05T01:00Z)"
    )


def test_snapshot_round_trips_through_json():
    # given a full dataset snapshot
    spec = SnapshotSpec(
        coins=(("DOGE", "static"), ("XRP", "pool")), timeframes=("15m", "1d"), rows=3
    )
    snapshot = build_snapshot(spec, DatasetSource())
    # when it is stored as JSON and read back
    restored = MarketSnapshot.from_dict(json.loads(json.dumps(snapshot.to_dict())))
    # then nothing changed, and every field of every part was stored
    assert restored == snapshot
    assert json.loads(json.dumps(snapshot.to_dict())) == json.loads(
        json.dumps(dataclasses.asdict(snapshot))
    )


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"coins": ()}, "a snapshot needs 1 to 10 coins, got 0"),
        (
            {"coins": tuple((f"C{i}", "static") for i in range(11))},
            "a snapshot needs 1 to 10 coins, got 11",
        ),
        (
            {"coins": (("BTC", "static"), ("btcusdt", "pool"))},
            "duplicate coins in BTCUSDT, BTCUSDT",
        ),
        ({"coins": (("BTC", "manual"),)}, "unknown source tag 'manual' for BTC"),
        ({"timeframes": ("1h", "5m")}, "timeframes must be some of 15m, 1h, 4h, 1d"),
        ({"timeframes": ()}, "timeframes must be some of 15m, 1h, 4h, 1d"),
        ({"rows": 0}, f"rows for 15m must be between 1 and {MAX_ROWS}, got 0"),
        (
            {"rows": {"1h": MAX_ROWS + 1}},
            f"rows for 1h must be between 1 and {MAX_ROWS}, got {MAX_ROWS + 1}",
        ),
        ({"indicators": ("ema", "vwap")}, "unknown indicator 'vwap'"),
        ({"oi_duration": "7d"}, "unknown open-interest duration '7d'"),
        ({"as_of": datetime(2024, 9, 1)}, "as_of must be timezone-aware"),
    ],
)
def test_invalid_snapshot_specs_are_refused(settings, message):
    # given invalid snapshot settings
    values = {"coins": (("BTC", "static"),), **settings}
    # when a spec is built
    # then it is refused, naming the setting
    with pytest.raises(ValueError, match=message):
        SnapshotSpec(**values)


def test_spec_orders_timeframes_and_fills_rows():
    # given timeframes out of order and rows for one of them
    spec = SnapshotSpec(coins=(("BTC", "static"),), timeframes=("1d", "15m"), rows={"1d": 7})
    # when it is built
    # then timeframes are in canonical order and each has a row count
    assert spec.timeframes == ("15m", "1d")
    assert (spec.rows_for("15m"), spec.rows_for("1d")) == (20, 7)
