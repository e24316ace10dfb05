"""The market snapshot of a debate, built from its strategy, and its prompt renderings."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from django.conf import settings

from strategies.market.builder import SnapshotSpec, build_snapshot
from strategies.market.coins import CoinSelectionSpec, select_coins
from strategies.market.dataset import DATASET_END, DATASET_SYMBOLS, DATASET_WINDOWS
from strategies.market.exceptions import MarketDataError
from strategies.market.render import render_snapshot, render_summary
from strategies.market.snapshot import TIMEFRAME_MS, MarketSnapshot
from strategies.market.sources import MarketSource, source_for

if TYPE_CHECKING:
    from debates.models import Debate
    from strategies.models import Strategy


def replay_window(strategy: Strategy) -> tuple[datetime, datetime]:
    """Return the first and last instants a debate of ``strategy`` on the dataset can be at.

    The first is when every timeframe of the strategy has its rows of closed candles
    in the dataset; the last is the dataset's end.
    """
    starts = [
        DATASET_WINDOWS[tf].start
        + timedelta(milliseconds=TIMEFRAME_MS[tf] * strategy.rows_per_timeframe)
        for tf in strategy.timeframes
        if tf in DATASET_WINDOWS
    ]
    return max(starts, default=DATASET_WINDOWS["4h"].first_close), DATASET_END


def outside_replay_window(strategy: Strategy, as_of: datetime) -> str | None:
    """Return why ``as_of`` is outside the replay window of ``strategy``, or None."""
    first, last = replay_window(strategy)
    if first <= as_of <= last:
        return None
    return (
        f"Outside the dataset window of this strategy: {first.isoformat()} .. {last.isoformat()}."
    )


def unservable_symbol(strategy: Strategy, symbol: str) -> str | None:
    """Return why the market source of ``strategy`` cannot serve ``symbol``, or None.

    Only the bundled dataset is checked: its coins are known without a network call; a
    live exchange's coin is checked when the debate starts.
    """
    if strategy.market_source != "dataset" or symbol in DATASET_SYMBOLS:
        return None
    return f"The bundled dataset holds no {symbol}; one of {', '.join(DATASET_SYMBOLS)}."


def market_source(strategy: Strategy) -> MarketSource:
    """Return the market source a strategy reads (live sources can be pointed elsewhere).

    ``source_for`` keeps one instance per configuration in the process, so a live
    source's markets and short cache are shared by every debate.
    """
    if strategy.market_source == "live":
        return source_for(
            "live", exchange=strategy.exchange, api_urls=settings.MARKET_LIVE_API_URL or None
        )
    return source_for("dataset")


def debate_snapshot(debate: Debate) -> MarketSnapshot:
    """Select a debate's candidate coins and return the market snapshot they are seen in.

    Raise ``MarketDataError`` with a readable reason when the data cannot be had.
    """
    strategy = debate.strategy
    if strategy is None:
        raise MarketDataError("the debate's strategy was deleted")
    source = market_source(strategy)
    as_of = debate.as_of
    try:
        coin_spec = CoinSelectionSpec(
            coin_source="mixed" if debate.enable_oi_ranking else strategy.coin_source,
            static_coins=tuple(strategy.static_coins),
            excluded_coins=tuple(strategy.excluded_coins),
            pool_url=strategy.pool_url or None,
            max_coins=strategy.max_coins,
            oi_duration=debate.oi_duration if debate.enable_oi_ranking else strategy.oi_duration,
            oi_limit=debate.oi_ranking_limit,
            primary_symbol=debate.symbol or None,
        )
        selection = select_coins(coin_spec, source, as_of=as_of)
        spec = SnapshotSpec.from_selection(
            selection,
            timeframes=tuple(strategy.timeframes),
            rows=strategy.rows_per_timeframe,
            indicators=tuple(strategy.indicators),
            include_funding=strategy.include_funding,
            include_open_interest=strategy.include_open_interest,
            oi_duration=coin_spec.oi_duration,
            as_of=as_of,
        )
    except ValueError as exc:
        raise MarketDataError(str(exc)) from exc
    return build_snapshot(spec, source)


def market_text(snapshot: dict[str, Any]) -> str:
    """Return the prompt rendering of a stored snapshot."""
    return render_snapshot(MarketSnapshot.from_dict(snapshot))


def market_summary(snapshot: dict[str, Any]) -> str:
    """Return the compact rendering of a stored snapshot used by vote prompts."""
    return render_summary(MarketSnapshot.from_dict(snapshot))


def primary_move(
    strategy: Strategy, symbol: str, as_of: datetime | None
) -> tuple[float, float | None]:
    """Return the price of ``symbol`` at ``as_of`` (now when None) and its 1h ATR14.

    Raise ``MarketDataError`` when the data cannot be had.
    """
    spec = SnapshotSpec(
        coins=((symbol, "static"),),
        timeframes=("1h",),
        rows=1,
        indicators=("atr",),
        include_funding=False,
        include_open_interest=False,
        as_of=as_of,
    )
    coin = build_snapshot(spec, market_source(strategy)).coin(symbol)
    if coin is None:
        raise MarketDataError(f"no market data for {symbol}")
    view = coin.timeframe("1h")
    return coin.price, view.indicators.atr14 if view is not None else None
