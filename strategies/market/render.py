"""Render a market snapshot into prompt text.

``render_snapshot`` is the one function that turns a ``MarketSnapshot`` into the market
section of every debate prompt: a header (instant, source, credit, candidate coins,
notes), then per coin its price, source tag, funding and open interest, and per timeframe
a compact candle table (UTC open time, open, high, low, close, volume; oldest first)
followed by the indicator values at the last closed candle. ``render_summary`` gives
the vote prompt one line per coin: price, change over about 24 hours, EMA trend, RSI and
funding.

Numbers are compact: prices keep 6 significant digits (``58,240.5``, ``131.91``,
``0.099362``), volumes use K/M/B suffixes, rates are percentages. Every formatted number
has a bounded width, notes are capped in number and length, so the text is bounded by
``max_render_chars(coins, timeframes, rows)``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from datetime import UTC, datetime

from strategies.market.snapshot import (
    TIMEFRAME_MS,
    Candle,
    CoinSnapshot,
    Indicators,
    MarketSnapshot,
    TimeframeView,
)
from strategies.market.symbols import MAX_SYMBOL_LENGTH

PRICE_DIGITS = 6
NUMBER_WIDTH = 16  # the widest format_price output: "-999,999,999,999"
VOLUME_WIDTH = 9  # "-1.23e+15"
PERCENT_WIDTH = 13  # "-999999.9999%"
MAX_NOTES = 8
NOTE_CHARS = 200
_TREND_TIMEFRAMES = ("4h", "1h", "1d", "15m")


def format_price(value: float | None, *, thousands: bool = True) -> str:
    """Return ``value`` with 6 significant digits, e.g. ``58,240.5``, ``0.099362``."""
    if value is None or not math.isfinite(value):
        return "n/a"
    magnitude = abs(value)
    if magnitude == 0:
        return "0"
    # 999,999,999,999.5 would round up to 13 digits: exponent form from there on.
    if magnitude >= 999_999_999_999.5 or magnitude < 1e-6:
        return f"{value:.{PRICE_DIGITS - 1}e}"
    decimals = max(0, PRICE_DIGITS - 1 - math.floor(math.log10(magnitude)))
    text = f"{value:,.{decimals}f}" if thousands else f"{value:.{decimals}f}"
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text


def format_volume(value: float | None) -> str:
    """Return ``value`` compactly: ``646.8``, ``12.3K``, ``1.23M``, ``4.56B``."""
    if value is None or not math.isfinite(value):
        return "n/a"
    magnitude = abs(value)
    if magnitude < 1000:
        return f"{value:.4g}" if magnitude >= 1e-3 or magnitude == 0 else f"{value:.1e}"
    for suffix, scale in (("K", 1e3), ("M", 1e6), ("B", 1e9), ("T", 1e12)):
        if magnitude < scale * 999.5:
            return f"{value / scale:.3g}{suffix}"
    return f"{value:.2e}"


def format_percent(value: float | None, decimals: int = 2) -> str:
    """Return ``value`` (already in percent) signed: ``+1.23%``, or ``+1.2e+07%`` when huge."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if abs(value) >= 1e6:
        return f"{value:+.1e}%"
    return f"{value:+.{decimals}f}%"


def format_funding(rate: float | None) -> str:
    """Return a funding rate per 8 hours as a percentage, e.g. ``+0.0100%``."""
    return "n/a" if rate is None else format_percent(rate * 100.0, decimals=4)


def render_snapshot(snapshot: MarketSnapshot) -> str:
    """Return the whole snapshot as prompt text (bounded by ``max_render_chars``)."""
    lines = _header(snapshot)
    for coin in snapshot.coins:
        lines.append("")
        lines.extend(_coin_lines(coin))
    return "\n".join(lines) + "\n"


def render_summary(snapshot: MarketSnapshot) -> str:
    """Return one line per coin (price, ~24h change, trend, RSI, funding) for the vote."""
    lines = [f"Market at {snapshot.as_of} ({snapshot.source}). {snapshot.credit}".rstrip()]
    as_of_ms = _parse_ms(snapshot.as_of)
    for coin in snapshot.coins:
        parts = [f"{coin.symbol} [{coin.source_tag}]: price {format_price(coin.price)}"]
        change = _change(coin, as_of_ms)
        if change is not None:
            parts.append(f"{change[0]} {format_percent(change[1])}")
        trend = _trend(coin)
        if trend is not None:
            parts.append(trend)
        if coin.funding_rate is not None:
            parts.append(f"funding {format_funding(coin.funding_rate)}/8h")
        if coin.open_interest_change_pct is not None:
            parts.append(f"OI {format_percent(coin.open_interest_change_pct)}")
        lines.append("- " + "; ".join(parts))
    return "\n".join(lines) + "\n"


def max_render_chars(coins: int, timeframes: int, rows: int) -> int:
    """Return the most characters ``render_snapshot`` can produce for these settings."""
    number = "9" * NUMBER_WIDTH
    header = len("\n".join(_header_template(coins))) + 1
    notes = len("Notes:\n") + (MAX_NOTES + 1) * (len("- ") + NOTE_CHARS + 1)
    percent = "9" * PERCENT_WIDTH
    head = _coin_head(
        "X" * MAX_SYMBOL_LENGTH, "oi_top", number, percent, "9" * VOLUME_WIDTH, percent
    )
    coin_lines = len("\n".join(head)) + 2
    timeframe_head = len(_timeframe_head("15m", rows)) + 1
    row = len(_row("09-01 12:00", *[number] * 4, "9" * VOLUME_WIDTH)) + 1
    indicators = len(_indicator_line({key: number for key in _INDICATOR_LABELS})) + 1
    per_timeframe = timeframe_head + rows * row + indicators
    return header + notes + coins * (coin_lines + timeframes * per_timeframe)


# building blocks (each used by both the renderer and the size bound)

_INDICATOR_LABELS = (
    "ema20",
    "ema50",
    "macd",
    "macd_signal",
    "macd_hist",
    "rsi14",
    "atr14",
    "bb_upper",
    "bb_middle",
    "bb_lower",
    "volume_change",
)


def _header_template(coins: int) -> list[str]:
    return [
        "MARKET DATA at 9999-99-99T99:99:99Z, source " + "x" * 12 + " (" + "x" * 40 + "), "
        "closed candles only. " + "x" * 60,
        f"Candidate coins ({coins}): " + ", ".join(["X" * MAX_SYMBOL_LENGTH] * coins),
    ]


def _header(snapshot: MarketSnapshot) -> list[str]:
    lines = [
        f"MARKET DATA at {snapshot.as_of[:20]}, source {snapshot.source[:12]} "
        f"({snapshot.exchange[:40]}), closed candles only. {snapshot.credit[:60]}".rstrip(),
        f"Candidate coins ({len(snapshot.coins)}): "
        + ", ".join(coin.symbol for coin in snapshot.coins),
    ]
    if snapshot.notes:
        lines.append("Notes:")
        for note in snapshot.notes[:MAX_NOTES]:
            lines.append("- " + (note if len(note) <= NOTE_CHARS else note[: NOTE_CHARS - 1] + "…"))
        if len(snapshot.notes) > MAX_NOTES:
            lines.append(f"- ({len(snapshot.notes) - MAX_NOTES} more notes)")
    return lines


def _coin_lines(coin: CoinSnapshot) -> list[str]:
    lines = _coin_head(
        coin.symbol,
        coin.source_tag,
        format_price(coin.price),
        format_funding(coin.funding_rate),
        format_volume(coin.open_interest),
        format_percent(coin.open_interest_change_pct),
    )
    for view in coin.timeframes:
        lines.extend(_timeframe_lines(view))
    return lines


def _coin_head(
    symbol: str, tag: str, price: str, funding: str, open_interest: str, oi_change: str
) -> list[str]:
    return [
        f"## {symbol} (chosen by: {tag})",
        f"price {price} | funding {funding} per 8h | open interest {open_interest} "
        f"contracts, change {oi_change}",
    ]


def _timeframe_head(timeframe: str, rows: int) -> str:
    return (
        f"{timeframe}: last {rows} closed candles, oldest first "
        "(UTC open time, open, high, low, close, volume)"
    )


def _timeframe_lines(view: TimeframeView) -> list[str]:
    lines = [_timeframe_head(view.timeframe, len(view.candles))]
    daily = TIMEFRAME_MS.get(view.timeframe, 0) >= TIMEFRAME_MS["1d"]
    lines.extend(_candle_row(candle, daily) for candle in view.candles)
    values = _indicator_values(view.indicators)
    if values:
        lines.append(_indicator_line(values))
    return lines


def _candle_row(candle: Candle, daily: bool) -> str:
    moment = datetime.fromtimestamp(candle.open_time / 1000, tz=UTC)
    label = moment.strftime("%Y-%m-%d" if daily else "%m-%d %H:%M")
    prices = (candle.open, candle.high, candle.low, candle.close)
    return _row(
        label, *(format_price(p, thousands=False) for p in prices), format_volume(candle.volume)
    )


def _row(label: str, open_: str, high: str, low: str, close: str, volume: str) -> str:
    return f"{label} {open_} {high} {low} {close} {volume}"


def _indicator_values(indicators: Indicators) -> dict[str, str]:
    values: dict[str, str] = {}
    for key in _INDICATOR_LABELS:
        value = getattr(indicators, key)
        if value is None:
            continue
        if key == "rsi14":
            values[key] = f"{value:.1f}"
        elif key == "volume_change":
            values[key] = format_percent(value, decimals=1)
        else:
            values[key] = format_price(value, thousands=False)
    return values


# Each part of the indicator line: the values that show it, and its text ("n/a" for a
# value missing beside them).
_INDICATOR_PARTS = (
    (("ema20", "ema50"), "EMA20 {ema20} EMA50 {ema50}"),
    (("macd",), "MACD(12,26,9) {macd} signal {macd_signal} hist {macd_hist}"),
    (("rsi14",), "RSI14 {rsi14}"),
    (("atr14",), "ATR14 {atr14}"),
    (("bb_middle",), "BB(20,2) {bb_upper}/{bb_middle}/{bb_lower}"),
    (("volume_change",), "volume {volume_change} vs 20-candle mean"),
)


def _indicator_line(values: dict[str, str]) -> str:
    shown = defaultdict(lambda: "n/a", values)
    parts = [
        text.format_map(shown)
        for keys, text in _INDICATOR_PARTS
        if any(key in values for key in keys)
    ]
    return "indicators: " + " | ".join(parts)


def _change(coin: CoinSnapshot, as_of_ms: int | None) -> tuple[str, float] | None:
    """Return (span label, percent) of the price against the close about 24 hours earlier.

    The reference is the latest close at least 24 hours before ``as_of`` in any timeframe
    shown, else the earliest close shown; the label gives the real span (``24h``, ``36h``).
    """
    closes = _closes(coin)
    if as_of_ms is None or not closes:
        return None
    before = [item for item in closes if item[0] <= as_of_ms - TIMEFRAME_MS["1d"]]
    close_time, reference = max(before) if before else min(closes)
    if reference <= 0 or close_time >= as_of_ms:
        return None
    hours = round((as_of_ms - close_time) / 3_600_000)
    return (f"{hours}h" if hours >= 1 else "<1h"), (coin.price / reference - 1.0) * 100.0


def _closes(coin: CoinSnapshot) -> list[tuple[int, float]]:
    """Return (close time in ms, close) of every candle shown of ``coin``."""
    return [
        (candle.open_time + TIMEFRAME_MS[view.timeframe], candle.close)
        for view in coin.timeframes
        if view.timeframe in TIMEFRAME_MS
        for candle in view.candles
    ]


def _parse_ms(as_of: str) -> int | None:
    try:
        moment = datetime.fromisoformat(as_of.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)


def _trend(coin: CoinSnapshot) -> str | None:
    """Return EMA trend and RSI of the first timeframe that has them (4h, 1h, 1d, 15m)."""
    views = {view.timeframe: view for view in coin.timeframes}
    for timeframe in _TREND_TIMEFRAMES:
        view = views.get(timeframe)
        if view is None or not view.candles:
            continue
        ind = view.indicators
        if ind.ema20 is None or ind.ema50 is None:
            continue
        text = f"trend {timeframe} {_ema_trend(view.candles[-1].close, ind.ema20, ind.ema50)}"
        if ind.rsi14 is not None:
            text += f"; RSI14 {timeframe} {ind.rsi14:.1f}"
        return text
    return None


def _ema_trend(close: float, ema20: float, ema50: float) -> str:
    """Return the trend the close and the two EMAs show, with why."""
    if close > ema20 > ema50:
        return "up (close > EMA20 > EMA50)"
    if close < ema20 < ema50:
        return "down (close < EMA20 < EMA50)"
    return "mixed (EMA20 " + (">" if ema20 > ema50 else "<=") + " EMA50)"
