"""Exchange adapters: the paper exchange and real exchanges through ccxt.

``exchange_for(trader)`` returns the adapter of a trader's account. Real exchanges are
reached at their public API hosts, or, when the ``TRADER_EXCHANGE_API_URL`` setting names
a base URL (a local fake exchange in tests), at that host with the same paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from traders.exchanges.base import ExchangeAdapter

if TYPE_CHECKING:
    from traders.models import Trader


def exchange_for(trader: Trader) -> ExchangeAdapter:
    """Return the exchange adapter of ``trader``'s account."""
    # Imported here, so that the pure modules of this package (fills, book) load no Django.
    from django.conf import settings

    if trader.exchange == "paper":
        from traders.exchanges.paper import PaperExchange

        return PaperExchange(trader.pk)
    # Imported here: ccxt costs half a second and 75 MB, which paper trading never needs.
    from traders.exchanges.ccxt_exchange import CcxtExchange

    return CcxtExchange(
        trader.exchange,
        api_key=trader.api_key,
        secret=trader.api_secret,
        password=trader.api_passphrase,
        sandbox=trader.sandbox,
        api_url=settings.TRADER_EXCHANGE_API_URL or None,
    )
