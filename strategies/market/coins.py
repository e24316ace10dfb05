"""Coin selection: which candidate coins a debate looks at.

Coin sources (``CoinSelectionSpec.coin_source``):

- ``static``: the strategy's list, in its order.
- ``pool``: the coin-pool endpoint's ranking (``strategies.market.pool``). If the pool
  fails, times out or returns no usable coin, the static list is used instead.
- ``oi_top``: the ``oi_limit`` coins with the highest open-interest growth over
  ``oi_duration`` (``strategies.market.oi``). A source without open interest (the
  dataset) is a configuration error and raises ``CoinSelectionError``; a transient
  failure falls back to the static list.
- ``mixed``: the pool's coins first, then the open-interest ranking's, without
  duplicates; when neither yields a coin, the static list.

Excluded coins and coins the market source does not list are removed (when nothing is
left of the pool or ranking, the static list is the fallback), the debate's primary
symbol (when given) is put first, and the list is cut to ``max_coins`` (at most
``MAX_CANDIDATES``, 10). Each coin keeps the tag of where it came from (``static``,
``pool``, ``oi_top``; a primary symbol that no source produced is tagged ``static``).
Every fallback and removal is recorded in ``CoinSelection.notes`` for the snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from strategies.market.exceptions import (
    CoinSelectionError,
    MarketDataError,
    OpenInterestUnavailableError,
    PoolError,
)
from strategies.market.oi import OI_UNIVERSE_SIZE, check_duration, rank_open_interest_growth
from strategies.market.pool import DEFAULT_POOL_TIMEOUT_S, fetch_pool
from strategies.market.sources import MarketSource
from strategies.market.symbols import normalize_symbol, normalize_symbols

COIN_SOURCES: tuple[str, ...] = ("static", "pool", "oi_top", "mixed")
SOURCE_TAGS: tuple[str, ...] = ("static", "pool", "oi_top")
MAX_CANDIDATES = 10


@dataclass(frozen=True)
class CoinSelectionSpec:
    """A strategy's coin settings plus the debate's primary symbol; symbols normalised."""

    coin_source: str = "static"
    static_coins: tuple[str, ...] = ()
    excluded_coins: tuple[str, ...] = ()
    pool_url: str | None = None
    max_coins: int = MAX_CANDIDATES
    oi_duration: str = "1h"
    oi_limit: int = 10
    primary_symbol: str | None = None
    pool_timeout_s: float = DEFAULT_POOL_TIMEOUT_S

    def __post_init__(self) -> None:
        if self.coin_source not in COIN_SOURCES:
            known = ", ".join(COIN_SOURCES)
            raise ValueError(f"unknown coin source {self.coin_source!r}: expected one of {known}")
        if not 1 <= self.max_coins <= MAX_CANDIDATES:
            raise ValueError(
                f"max_coins must be between 1 and {MAX_CANDIDATES}, got {self.max_coins}"
            )
        if self.oi_limit < 1:
            raise ValueError(f"oi_limit must be at least 1, got {self.oi_limit}")
        check_duration(self.oi_duration)
        pool_url = (self.pool_url or "").strip() or None
        if self.coin_source == "pool" and pool_url is None:
            raise ValueError("coin source 'pool' needs a pool_url")
        object.__setattr__(self, "pool_url", pool_url)
        object.__setattr__(self, "static_coins", normalize_symbols(self.static_coins))
        object.__setattr__(self, "excluded_coins", normalize_symbols(self.excluded_coins))
        if self.primary_symbol is not None:
            object.__setattr__(self, "primary_symbol", normalize_symbol(self.primary_symbol))


@dataclass(frozen=True)
class SelectedCoin:
    """A candidate coin and how it was chosen (``static``, ``pool`` or ``oi_top``)."""

    symbol: str
    source_tag: str


@dataclass(frozen=True)
class CoinSelection:
    """The candidate coins, primary first, and the notes on fallbacks and removals."""

    coins: tuple[SelectedCoin, ...]
    notes: tuple[str, ...] = ()

    @property
    def symbols(self) -> list[str]:
        """Return the candidate symbols in order."""
        return [coin.symbol for coin in self.coins]


def select_coins(
    spec: CoinSelectionSpec, source: MarketSource, *, as_of: datetime | None = None
) -> CoinSelection:
    """Return the candidate coins for a debate, following ``spec`` (see the module doc).

    Raise ``CoinSelectionError`` when no coin remains, when the primary symbol is excluded
    or not listed by ``source``, or when ``oi_top`` is asked of a source without open
    interest.
    """
    notes: list[str] = []
    available = source.available_symbols()
    listed = set(available)
    candidates = _from_sources(spec, source, available, as_of, notes)
    candidates = _remove(candidates, spec.excluded_coins, listed, source.name, notes)
    if not candidates and spec.coin_source != "static":
        if spec.static_coins:
            notes.append(f"fell back to the static coins: {', '.join(spec.static_coins)}")
        else:
            notes.append("fell back to the static coins, but none are configured")
        static = [SelectedCoin(symbol, "static") for symbol in spec.static_coins]
        candidates = _remove(static, spec.excluded_coins, listed, source.name, notes)
    if spec.primary_symbol is not None:
        candidates = _primary_first(candidates, spec, listed, source.name)
    if len(candidates) > spec.max_coins:
        dropped = [coin.symbol for coin in candidates[spec.max_coins :]]
        notes.append(f"kept the first {spec.max_coins} coins, dropped {', '.join(dropped)}")
        candidates = candidates[: spec.max_coins]
    if not candidates:
        detail = "; ".join(notes) or "the coin source gave none"
        raise CoinSelectionError(f"no candidate coins ({spec.coin_source}): {detail}")
    return CoinSelection(tuple(candidates), tuple(notes))


def _from_sources(
    spec: CoinSelectionSpec,
    source: MarketSource,
    available: list[str],
    as_of: datetime | None,
    notes: list[str],
) -> list[SelectedCoin]:
    if spec.coin_source == "static":
        return [SelectedCoin(symbol, "static") for symbol in spec.static_coins]
    coins: list[SelectedCoin] = []
    if spec.coin_source in ("pool", "mixed"):
        coins += _pool_coins(spec, notes)
    if spec.coin_source in ("oi_top", "mixed"):
        seen = {coin.symbol for coin in coins}
        oi_coins = _oi_coins(spec, source, available, as_of, notes)
        coins += [coin for coin in oi_coins if coin.symbol not in seen]
    return coins


def _pool_coins(spec: CoinSelectionSpec, notes: list[str]) -> list[SelectedCoin]:
    if spec.pool_url is None:
        notes.append("coin pool skipped: no pool_url configured")
        return []
    try:
        result = fetch_pool(spec.pool_url, timeout_s=spec.pool_timeout_s)
    except PoolError as error:
        notes.append(f"coin pool failed: {error}")
        return []
    if result.skipped:
        notes.append(f"coin pool entries skipped: {result.skipped} could not be read as coins")
    if not result.symbols:
        notes.append(f"coin pool {spec.pool_url} returned no coins")
    return [SelectedCoin(symbol, "pool") for symbol in result.symbols]


def _oi_coins(
    spec: CoinSelectionSpec,
    source: MarketSource,
    available: list[str],
    as_of: datetime | None,
    notes: list[str],
) -> list[SelectedCoin]:
    universe = [symbol for symbol in available if symbol not in spec.excluded_coins]
    try:
        ranking = rank_open_interest_growth(
            source,
            duration=spec.oi_duration,
            limit=spec.oi_limit,
            as_of=as_of,
            universe=universe[:OI_UNIVERSE_SIZE],
        )
    except OpenInterestUnavailableError as error:
        if spec.coin_source == "oi_top":
            raise CoinSelectionError(
                f"coin source 'oi_top' needs open interest, which the {source.name} "
                f"source does not have: {error}"
            ) from error
        notes.append(f"open-interest ranking unavailable: {error}")
        return []
    except MarketDataError as error:
        notes.append(f"open-interest ranking failed: {error}")
        return []
    notes.extend(ranking.notes)
    return [SelectedCoin(symbol, "oi_top") for symbol in ranking.symbols]


def _remove(
    candidates: list[SelectedCoin],
    excluded: tuple[str, ...],
    available: set[str],
    source_name: str,
    notes: list[str],
) -> list[SelectedCoin]:
    kept: list[SelectedCoin] = []
    removed_excluded: list[str] = []
    unlisted: list[str] = []
    for coin in candidates:
        if coin.symbol in excluded:
            removed_excluded.append(coin.symbol)
        elif coin.symbol not in available:
            unlisted.append(coin.symbol)
        elif all(coin.symbol != other.symbol for other in kept):
            kept.append(coin)
    if removed_excluded:
        notes.append(f"excluded by the strategy: {', '.join(removed_excluded)}")
    if unlisted:
        notes.append(f"not available on the {source_name} source: {', '.join(unlisted)}")
    return kept


def _primary_first(
    candidates: list[SelectedCoin],
    spec: CoinSelectionSpec,
    available: set[str],
    source_name: str,
) -> list[SelectedCoin]:
    primary = spec.primary_symbol
    if primary in spec.excluded_coins:
        raise CoinSelectionError(f"the debate's symbol {primary} is excluded by the strategy")
    if primary not in available:
        raise CoinSelectionError(
            f"the debate's symbol {primary} is not available on the {source_name} source"
        )
    tag = next((coin.source_tag for coin in candidates if coin.symbol == primary), "static")
    return [SelectedCoin(primary, tag)] + [coin for coin in candidates if coin.symbol != primary]
