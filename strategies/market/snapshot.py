"""The market snapshot: what every participant of a debate looks at.

A snapshot is built once when a debate starts, stored on the debate as JSON,
rendered into prompt text by ``strategies.market.render`` and handed to the
simulated model provider in this structured form. Plain dataclasses, no Django.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

TIMEFRAMES: tuple[str, ...] = ("15m", "1h", "4h", "1d")
TIMEFRAME_MS: dict[str, int] = {
    "15m": 15 * 60_000,
    "1h": 60 * 60_000,
    "4h": 4 * 60 * 60_000,
    "1d": 24 * 60 * 60_000,
}


@dataclass(frozen=True)
class Candle:
    """One closed candle; ``open_time`` is the open instant in ms since the epoch (UTC)."""

    open_time: int
    open: float
    high: float
    low: float
    close: float
    volume: float


@dataclass(frozen=True)
class Indicators:
    """Indicator values at the last closed candle of a timeframe (None: not enough data)."""

    ema20: float | None = None
    ema50: float | None = None
    macd: float | None = None
    macd_signal: float | None = None
    macd_hist: float | None = None
    rsi14: float | None = None
    atr14: float | None = None
    bb_upper: float | None = None
    bb_middle: float | None = None
    bb_lower: float | None = None
    volume_change: float | None = None


@dataclass(frozen=True)
class TimeframeView:
    """The candles shown for one timeframe, oldest first, and its indicators."""

    timeframe: str
    candles: tuple[Candle, ...]
    indicators: Indicators


@dataclass(frozen=True)
class CoinSnapshot:
    """Everything known about one candidate coin at ``as_of``.

    ``source_tag`` says how the coin was chosen: ``static``, ``pool`` or ``oi_top``.
    ``funding_rate`` is per 8 hours (0.0001 = 0.01 %); ``open_interest`` in contracts.
    """

    symbol: str
    source_tag: str
    price: float
    timeframes: tuple[TimeframeView, ...]
    funding_rate: float | None = None
    open_interest: float | None = None
    open_interest_change_pct: float | None = None

    def timeframe(self, name: str) -> TimeframeView | None:
        """Return the view of timeframe ``name``, or None when it is not in the snapshot."""
        for view in self.timeframes:
            if view.timeframe == name:
                return view
        return None


@dataclass(frozen=True)
class MarketSnapshot:
    """The market at ``as_of`` (ISO 8601, UTC) for the candidate coins, primary coin first."""

    source: str
    exchange: str
    as_of: str
    coins: tuple[CoinSnapshot, ...]
    credit: str = ""
    notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def symbols(self) -> list[str]:
        """Return the candidate symbols in snapshot order."""
        return [coin.symbol for coin in self.coins]

    def coin(self, symbol: str) -> CoinSnapshot | None:
        """Return the snapshot of ``symbol``, or None."""
        for coin in self.coins:
            if coin.symbol == symbol:
                return coin
        return None

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict; ``from_dict`` reverses it exactly.

        Written out rather than ``dataclasses.asdict``, which deep-copies every value
        and takes milliseconds on a snapshot's thousands of candle fields.
        """
        return {
            "source": self.source,
            "exchange": self.exchange,
            "as_of": self.as_of,
            "coins": [
                {
                    "symbol": coin.symbol,
                    "source_tag": coin.source_tag,
                    "price": coin.price,
                    "timeframes": [
                        {
                            "timeframe": view.timeframe,
                            "candles": [vars(candle).copy() for candle in view.candles],
                            "indicators": vars(view.indicators).copy(),
                        }
                        for view in coin.timeframes
                    ],
                    "funding_rate": coin.funding_rate,
                    "open_interest": coin.open_interest,
                    "open_interest_change_pct": coin.open_interest_change_pct,
                }
                for coin in self.coins
            ],
            "credit": self.credit,
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MarketSnapshot:
        """Rebuild a snapshot from ``to_dict`` output."""
        coins = tuple(
            CoinSnapshot(
                symbol=coin["symbol"],
                source_tag=coin["source_tag"],
                price=coin["price"],
                funding_rate=coin.get("funding_rate"),
                open_interest=coin.get("open_interest"),
                open_interest_change_pct=coin.get("open_interest_change_pct"),
                timeframes=tuple(
                    TimeframeView(
                        timeframe=view["timeframe"],
                        candles=tuple(Candle(**candle) for candle in view["candles"]),
                        indicators=Indicators(**view["indicators"]),
                    )
                    for view in coin["timeframes"]
                ),
            )
            for coin in data["coins"]
        )
        return cls(
            source=data["source"],
            exchange=data["exchange"],
            as_of=data["as_of"],
            coins=coins,
            credit=data.get("credit", ""),
            notes=tuple(data.get("notes", ())),
        )
