"""Errors raised by the market-data modules.

Every error is a ``MarketDataError``, so a caller that only wants to know "the market data
could not be had" catches one class. The subclasses say why, and whether waiting helps:
``SourceUnavailableError`` and ``PoolError`` are transient (network, timeouts, 5xx);
the others are permanent for the same input.
"""

from __future__ import annotations


class MarketDataError(Exception):
    """Base class of every market-data error."""


class InvalidSymbolError(MarketDataError, ValueError):
    """A user-given symbol is malformed or not a USDT pair."""


class UnknownSymbolError(MarketDataError):
    """A well-formed symbol that the market source does not have."""


class OutsideWindowError(MarketDataError):
    """The dataset has no data for the requested symbol, timeframe and instant."""


class SourceUnavailableError(MarketDataError):
    """A live source did not answer (network error, timeout, 5xx), retries included."""


class OpenInterestUnavailableError(MarketDataError):
    """The source has no open-interest data (the dataset source never has any)."""


class PoolError(MarketDataError):
    """The coin-pool endpoint failed, timed out or answered something unusable."""


class CoinSelectionError(MarketDataError):
    """No candidate coins could be selected, or the selection contradicts the strategy."""
