"""A trader's connection check: a few cheap real calls that say, in one line, what is
wrong with the account, or what it is.

The check reads the balance (the key works), the position mode (hedge or one-way) and a
market's own minimums, exactly as an execution will; it places nothing. The API, the
admin action and ``manage.py check_venue --trader ID`` all run it (an AI model's check:
``debates.services.checks``).
"""

from __future__ import annotations

from typing import Any

from arena.queries import owned_by, owned_or_404
from debates.services.checks import VenueCheck
from traders.exchanges import exchange_for
from traders.exchanges.base import AccessRefused, ExchangeUnavailable, OrderRejected
from traders.models import Exchange, Trader

CHECKED_MARKET = "BTCUSDT"


def trader_check(
    *, trader_id: int, owner: Any | None = None, symbol: str = CHECKED_MARKET
) -> VenueCheck:
    """Check trader ``trader_id``'s account on its exchange, on market ``symbol``."""
    trader = owned_or_404(owned_by(Trader.objects.all(), owner), trader_id, "Trader")
    venue = f"{trader.exchange}{' (practice account)' if trader.sandbox else ''}"
    adapter = exchange_for(trader)
    try:
        funds = adapter.balance()
        hedged = adapter.hedged(symbol)
        market = adapter.market(symbol)
    except AccessRefused as exc:
        return VenueCheck(False, f"{venue} refused the key: {exc}")
    except ExchangeUnavailable as exc:
        return VenueCheck(False, f"{venue} could not be reached: {exc}")
    except OrderRejected as exc:
        return VenueCheck(False, f"{venue} refused the check: {exc}")
    available = "unknown" if funds.available is None else f"{funds.available:,.2f} USDT"
    minimum = (
        f"{symbol} takes orders from {market.min_notional:,.2f} USDT"
        if market.min_notional is not None
        else f"{symbol} lists no minimum order value"
    )
    mode = "hedge mode" if hedged else "one-way mode"
    access = "" if trader.exchange == Exchange.PAPER else "key accepted, "
    return VenueCheck(True, f"{venue}: {access}{available} available, {mode}; {minimum}.")
