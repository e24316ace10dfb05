"""The staleness guard: no decision is executed once its market has moved on.

Before an execution is recorded, manual or automatic, the decision is refused with
``stale_decision`` (409) when it is older than its strategy's
``max_decision_age_minutes`` or its coin's price has moved more than
``max_price_drift_pct`` from the price its debate's snapshot showed.

The age runs from the snapshot's instant to the instant the order would fill at: now,
for a trader on live prices or a real exchange; in a replay (a paper trader on the
dataset), the paper clock. A dataset paper clock meets the debate's instant before
trading (``traders.services.paper``), so that clock is the instant itself, unless the
account holds open positions at a later instant, where its clock stays (and the age
is the distance). The price is the one the order would fill at: the exchange's, or the
paper trader's at that clock.

The check and its figures are stored on the execution (``Execution.staleness``). A
debate without a readable snapshot instant, or a snapshot without the coin's price,
cannot be judged: the check records why and lets it through (runs always store both).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from django.utils import timezone

from debates.models import Debate, Decision
from strategies.market.exceptions import MarketDataError
from strategies.models import Strategy
from traders.exceptions import NotExecutable, StaleDecision
from traders.exchanges import exchange_for
from traders.exchanges.base import ExchangeError
from traders.exchanges.paper import paper_source
from traders.models import Exchange, Position, PositionStatus, Trader

DEFAULT_MAX_AGE_MINUTES = Strategy._meta.get_field("max_decision_age_minutes").default
DEFAULT_MAX_DRIFT_PCT = Strategy._meta.get_field("max_price_drift_pct").default


@dataclass(frozen=True)
class StalenessCheck:
    """What the guard measured for an execution it let through, and what it could not
    judge (``note``; empty when both the age and the drift were checked)."""

    instant: str | None
    clock: str | None
    age_minutes: float | None
    max_age_minutes: int
    snapshot_price: str | None
    price: str | None
    drift_pct: float | None
    max_drift_pct: str
    note: str

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        return asdict(self)


def _iso(at: datetime | None) -> str | None:
    return at.isoformat().replace("+00:00", "Z") if at else None


def _instant(debate: Debate) -> datetime | None:
    """Return the snapshot's instant; None when there is none or it cannot be read."""
    stamp = (debate.market_snapshot or {}).get("as_of")
    try:
        return datetime.fromisoformat(str(stamp).replace("Z", "+00:00")) if stamp else None
    except ValueError:
        return None


def _replays(trader: Trader) -> bool:
    return trader.exchange == Exchange.PAPER and trader.market_source != "live"


def _clock(trader: Trader, instant: datetime) -> datetime:
    """Return the instant an order of ``trader`` for a decision at ``instant`` fills at."""
    if not _replays(trader):
        return timezone.now()
    clock = trader.replay_as_of
    if clock is None or clock <= instant:
        return instant
    held = Position.objects.filter(trader=trader, status=PositionStatus.OPEN).exists()
    return clock if held else instant


def _price(trader: Trader, symbol: str, clock: datetime) -> Decimal:
    if trader.exchange == Exchange.PAPER:
        return Decimal(str(paper_source(trader).fetch_fill_price(symbol, clock)))
    return exchange_for(trader).price(symbol)


def staleness_check(*, decision: Decision, debate: Debate, trader: Trader) -> StalenessCheck:
    """Return the check of ``decision`` before it executes on ``trader``; raise
    ``StaleDecision`` with the figures when it is stale."""
    strategy = debate.strategy
    max_age = strategy.max_decision_age_minutes if strategy else DEFAULT_MAX_AGE_MINUTES
    max_drift = strategy.max_price_drift_pct if strategy else DEFAULT_MAX_DRIFT_PCT
    instant = _instant(debate)
    blank = {
        "instant": _iso(instant),
        "clock": None,
        "age_minutes": None,
        "max_age_minutes": max_age,
        "snapshot_price": None,
        "price": None,
        "drift_pct": None,
        "max_drift_pct": str(max_drift),
    }
    if instant is None:
        return StalenessCheck(**blank, note="not judged: no readable snapshot instant")
    clock = _clock(trader, instant)
    age = round((clock - instant).total_seconds() / 60, 2)
    timed = {**blank, "clock": _iso(clock), "age_minutes": age}
    if age > max_age:
        raise StaleDecision(
            f"The decision on {decision.symbol} is stale: {age:g} minutes old (from the "
            f"snapshot at {_iso(instant)} to {_iso(clock)}), over the strategy's "
            f"max_decision_age_minutes of {max_age}."
        )
    shown = {c.get("symbol"): c.get("price") for c in debate.market_snapshot.get("coins", [])}
    if shown.get(decision.symbol) is None:
        return StalenessCheck(**timed, note="price drift not judged: no snapshot price")
    before = Decimal(str(shown[decision.symbol]))
    try:
        now_price = _price(trader, decision.symbol, clock)
    except (ExchangeError, MarketDataError) as exc:
        raise NotExecutable(
            f"The price of {decision.symbol} could not be read to check that the decision "
            f"is not stale: {exc}"
        ) from exc
    drift = abs(now_price - before) / before * 100
    priced = {
        **timed,
        "snapshot_price": str(before),
        "price": str(now_price),
        "drift_pct": round(float(drift), 4),
    }
    if drift > max_drift:
        raise StaleDecision(
            f"The decision on {decision.symbol} is stale: its price moved {drift:.2f}% "
            f"from the snapshot's {before} to {now_price}, over the strategy's "
            f"max_price_drift_pct of {max_drift}."
        )
    return StalenessCheck(**priced, note="")
