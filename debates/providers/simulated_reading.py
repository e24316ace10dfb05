"""What the simulated model reads of one coin in a market snapshot.

The reading comes from the coin's main timeframe (1h, else 4h, 15m, 1d, else the first
there is): a score from -1 (short) to 1 (long) summing what each signal says (the trend
of EMA20 against EMA50, RSI, the MACD histogram, funding, the higher timeframe's trend),
the figures it cites, and the volatility its stop-loss distance is built from.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from strategies.market.snapshot import CoinSnapshot, TimeframeView

_MAIN_TIMEFRAMES = ("1h", "4h", "15m", "1d")
_HIGHER = {"15m": "1h", "1h": "4h", "4h": "1d"}


@dataclass(frozen=True)
class Reading:
    """What the simulated model takes from one coin's snapshot."""

    score: float
    citation: str
    stop_loss: float
    fields: dict[str, str]


def read_coin(coin: CoinSnapshot) -> Reading | None:
    """Return the coin's reading from its main timeframe, None when it has none."""
    view = _main_view(coin)
    if view is None:
        return None
    ind = view.indicators
    price = coin.price
    parts = [f"{coin.symbol} {view.timeframe}: price {fmt_price(price)}"]
    score = 0.0
    for signal in _SIGNALS:
        read = signal(coin, view)
        if read is not None:
            score += read[0]
            parts.append(read[1])
    return Reading(
        score=max(-1.0, min(1.0, score)),
        citation=", ".join(parts) + ".",
        stop_loss=ind.atr14 / price if ind.atr14 and price > 0 else 0.02,
        fields={
            "ema50": fmt_price(ind.ema50 if ind.ema50 is not None else price),
            "bb_upper": fmt_price(ind.bb_upper if ind.bb_upper is not None else price * 1.02),
        },
    )


def _main_view(coin: CoinSnapshot) -> TimeframeView | None:
    """Return the first of the main timeframes the coin has, else its first one."""
    for name in _MAIN_TIMEFRAMES:
        view = coin.timeframe(name)
        if view is not None:
            return view
    return coin.timeframes[0] if coin.timeframes else None


# Each signal reads one thing of a coin's snapshot and returns how far it leans the coin
# long (above 0) or short, with the words that cite it; None when the snapshot lacks it.
Signal = Callable[[CoinSnapshot, TimeframeView], "tuple[float, str] | None"]


def _ema_trend(coin: CoinSnapshot, view: TimeframeView) -> tuple[float, str] | None:
    """Lean with EMA20 against EMA50, half as much when price is back through EMA20."""
    ind = view.indicators
    if ind.ema20 is None or ind.ema50 is None:
        return None
    above = ind.ema20 > ind.ema50
    trend = 1.0 if above else -1.0
    if (coin.price >= ind.ema20) != above:
        trend /= 2  # price already back through the fast average: a weaker trend
    side = "above" if above else "below"
    return 0.4 * trend, f"EMA20 {fmt_price(ind.ema20)} {side} EMA50 {fmt_price(ind.ema50)}"


def _rsi(coin: CoinSnapshot, view: TimeframeView) -> tuple[float, str] | None:
    """Lean with RSI: long when oversold or rising healthily, short when stretched or weak."""
    rsi = view.indicators.rsi14
    if rsi is None:
        return None
    if rsi <= 30 or 55 <= rsi < 70:  # oversold bounce, or healthy momentum
        lean = 0.1
    elif rsi >= 70 or rsi <= 45:  # overbought, or weak
        lean = -0.1
    else:
        lean = 0.0
    return lean, f"RSI {rsi:.1f}"


def _macd(coin: CoinSnapshot, view: TimeframeView) -> tuple[float, str] | None:
    """Lean with the sign of the MACD histogram."""
    hist = view.indicators.macd_hist
    if hist is None:
        return None
    lean = 0.25 if hist > 0 else -0.25 if hist < 0 else 0.0
    return lean, f"MACD histogram {hist:+,.4g}"


def _funding(coin: CoinSnapshot, view: TimeframeView) -> tuple[float, str] | None:
    """Lean against the side that pays a high funding rate: it is crowded."""
    rate = coin.funding_rate
    if rate is None:
        return None
    lean = -0.1 if rate >= 0.0005 else 0.1 if rate <= -0.0003 else 0.0
    return lean, f"funding {rate:+.4%}/8h"


def _higher_trend(coin: CoinSnapshot, view: TimeframeView) -> tuple[float, str] | None:
    """Lean with the trend of the next timeframe up."""
    higher = coin.timeframe(_HIGHER.get(view.timeframe, ""))
    word = _trend_word(higher)
    if higher is None or not word:
        return None
    return (0.15 if word == "up" else -0.15), f"{higher.timeframe} trend {word}"


_SIGNALS: tuple[Signal, ...] = (_ema_trend, _rsi, _macd, _funding, _higher_trend)


def _trend_word(view: TimeframeView | None) -> str:
    if view is None:
        return ""
    ind = view.indicators
    if ind.ema20 is None or ind.ema50 is None or ind.ema20 == ind.ema50:
        return ""
    return "up" if ind.ema20 > ind.ema50 else "down"


def fmt_price(value: float) -> str:
    """Return ``value`` with thousands separators and about five significant digits."""
    if value == 0 or not math.isfinite(value):
        return f"{value:.1f}"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(1, 4 - magnitude)
    return f"{value:,.{decimals}f}"
