"""Technical indicators, computed with TA-Lib, at the last closed candle of a series.

The indicators a strategy can select (``INDICATOR_NAMES``) and the values they fill in
``Indicators``:

- ``ema``: EMA 20 and EMA 50 of the close.
- ``macd``: MACD (12, 26, 9) line, signal and histogram.
- ``rsi``: RSI 14.
- ``atr``: ATR 14 (Wilder), in price units.
- ``bollinger``: Bollinger bands (20, 2 standard deviations, SMA middle).
- ``volume_change``: volume of the last closed candle against the mean volume of the
  ``VOLUME_CHANGE_WINDOW`` (20) candles before it, in percent: +50.0 means half as much
  again as usual, -50.0 half the usual volume.

EMA, MACD, RSI and ATR are recursive, so their value depends on how much history they
start from. The snapshot builder therefore fetches ``WARMUP_ROWS`` (100) more candles than
it shows (``history_rows``), where the data allows, and computes on all of them. A value
that the series is too short for is None.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import talib

from strategies.market.snapshot import Candle, Indicators

INDICATOR_NAMES: tuple[str, ...] = ("ema", "macd", "rsi", "atr", "bollinger", "volume_change")
WARMUP_ROWS = 100
VOLUME_CHANGE_WINDOW = 20


def history_rows(rows: int) -> int:
    """Return how many candles to fetch to show ``rows`` with warmed-up indicators."""
    return rows + WARMUP_ROWS


def check_indicators(names: Iterable[str]) -> tuple[str, ...]:
    """Return ``names`` as a tuple without duplicates; refuse unknown indicator names."""
    result: list[str] = []
    for name in names:
        if name not in INDICATOR_NAMES:
            known = ", ".join(INDICATOR_NAMES)
            raise ValueError(f"unknown indicator {name!r}: expected some of {known}")
        if name not in result:
            result.append(name)
    return tuple(result)


def compute_indicators(
    candles: Sequence[Candle], selection: Iterable[str] = INDICATOR_NAMES
) -> Indicators:
    """Return the selected indicators at the last candle of ``candles`` (oldest first)."""
    selected = check_indicators(selection)
    if not candles or not selected:
        return Indicators()
    series = _Series.of(candles)
    values: dict[str, float | None] = {}
    for name in selected:
        values.update(_COMPUTE[name](series))
    return Indicators(**values)


@dataclass(frozen=True)
class _Series:
    """The columns of a candle series that the indicators read."""

    close: np.ndarray
    high: np.ndarray
    low: np.ndarray
    volumes: list[float]

    @classmethod
    def of(cls, candles: Sequence[Candle]) -> _Series:
        """Return the columns of ``candles`` (oldest first)."""

        def column(name: str) -> np.ndarray:
            return np.array([getattr(candle, name) for candle in candles], dtype=np.float64)

        volumes = [candle.volume for candle in candles]
        return cls(close=column("close"), high=column("high"), low=column("low"), volumes=volumes)


def _ema(series: _Series) -> dict[str, float | None]:
    return {
        "ema20": _last(talib.EMA(series.close, timeperiod=20)),
        "ema50": _last(talib.EMA(series.close, timeperiod=50)),
    }


def _macd(series: _Series) -> dict[str, float | None]:
    macd, signal, hist = talib.MACD(series.close, fastperiod=12, slowperiod=26, signalperiod=9)
    return {"macd": _last(macd), "macd_signal": _last(signal), "macd_hist": _last(hist)}


def _rsi(series: _Series) -> dict[str, float | None]:
    return {"rsi14": _last(talib.RSI(series.close, timeperiod=14))}


def _atr(series: _Series) -> dict[str, float | None]:
    return {"atr14": _last(talib.ATR(series.high, series.low, series.close, timeperiod=14))}


def _bollinger(series: _Series) -> dict[str, float | None]:
    upper, middle, lower = talib.BBANDS(
        series.close, timeperiod=20, nbdevup=2.0, nbdevdn=2.0, matype=talib.MA_Type.SMA
    )
    return {"bb_upper": _last(upper), "bb_middle": _last(middle), "bb_lower": _last(lower)}


def _volume_change(series: _Series) -> dict[str, float | None]:
    return {"volume_change": volume_change(series.volumes)}


# Each indicator a strategy can select and the values it fills in ``Indicators``.
_COMPUTE: dict[str, Callable[[_Series], dict[str, float | None]]] = {
    "ema": _ema,
    "macd": _macd,
    "rsi": _rsi,
    "atr": _atr,
    "bollinger": _bollinger,
    "volume_change": _volume_change,
}


def volume_change(volumes: Sequence[float], window: int = VOLUME_CHANGE_WINDOW) -> float | None:
    """Return the last volume against the mean of the ``window`` before it, in percent.

    None when there are fewer than ``window + 1`` volumes or the earlier mean is zero.
    """
    if len(volumes) < window + 1:
        return None
    mean = sum(volumes[-window - 1 : -1]) / window
    if mean <= 0:
        return None
    return (volumes[-1] / mean - 1.0) * 100.0


def _last(series: np.ndarray) -> float | None:
    value = float(series[-1])
    return None if math.isnan(value) else value
