"""Creating, changing and deleting strategies (SPEC 9).

Every rule a debate's market snapshot relies on is checked here, when the strategy is
saved, so that a debate does not fail at start for a setting that could have been
refused: symbols are stored normalised (``BTCUSDT``, never the raw input), timeframes
and indicators come from the fixed sets the market code knows, at most
``MAX_CANDIDATES`` coins are listed, a pool source names its URL, which must obey the
outbound policy (``arena.outbound``) and carry no user name or password.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError as DjangoValidationError
from django.core.validators import URLValidator
from django.db import transaction

from arena.exceptions import Conflict, NotFound, ValidationError
from arena.outbound import OutboundRefused, check_no_user_info, check_url
from strategies.market.coins import MAX_CANDIDATES
from strategies.market.dataset import DATASET_SYMBOLS
from strategies.market.exceptions import InvalidSymbolError
from strategies.market.indicators import INDICATOR_NAMES
from strategies.market.snapshot import TIMEFRAMES
from strategies.market.symbols import normalize_symbol
from strategies.models import CoinSource, MarketSource, OIDuration, PromptVariant, Strategy

FIELDS = (
    "name",
    "coin_source",
    "static_coins",
    "excluded_coins",
    "pool_url",
    "max_coins",
    "oi_duration",
    "market_source",
    "exchange",
    "timeframes",
    "rows_per_timeframe",
    "indicators",
    "include_funding",
    "include_open_interest",
    "max_leverage_major",
    "max_leverage_other",
    "max_position_multiple",
    "min_confidence",
    "min_risk_reward",
    "max_open_positions",
    "min_order_usd",
    "review_horizon_minutes",
    "review_flat_pct",
    "max_decision_age_minutes",
    "max_price_drift_pct",
    "role_text",
    "custom_prompt",
    "prompt_variant",
    "early_stop",
    "quiet_atr_fraction",
    "gate_min_confidence",
)
# The exchanges a live strategy can read (the ones traders can trade on).
LIVE_EXCHANGES = ("binanceusdm", "bybit", "okx")
MAX_EXCLUDED = 100
MAX_TEXT = 10_000
POOL_SOURCES = (CoinSource.POOL, CoinSource.MIXED)
# Bounded integers: (low, high).
INTEGER_RANGES = {
    "max_coins": (1, MAX_CANDIDATES),
    "rows_per_timeframe": (1, 200),
    "max_leverage_major": (1, 20),
    "max_leverage_other": (1, 20),
    "min_confidence": (0, 100),
    "max_open_positions": (1, 100),
    "review_horizon_minutes": (15, 10_080),
    "max_decision_age_minutes": (1, 10_080),
}
# Decimals: (low, low is allowed, high, decimal places).
DECIMAL_RANGES = {
    "max_position_multiple": (Decimal("0"), False, Decimal("9999.99"), 2),
    "min_risk_reward": (Decimal("0"), True, Decimal("9999.99"), 2),
    "min_order_usd": (Decimal("0"), True, Decimal("9999999999.99"), 2),
    "review_flat_pct": (Decimal("0"), True, Decimal("100"), 3),
    "max_price_drift_pct": (Decimal("0"), False, Decimal("100"), 3),
}

# Bounded numbers: (low, high), both allowed.
FLOAT_RANGES = {
    "quiet_atr_fraction": (0.0, 10.0),
    "gate_min_confidence": (0.0, 100.0),
}

_http_url = URLValidator(schemes=["http", "https"])


class _Refusals(dict):
    """Messages per bad field."""

    def add(self, name: str, message: str) -> None:
        self.setdefault(name, []).append(message)


def _choice(refuse: _Refusals, name: str, value: Any, choices: Sequence[str]) -> None:
    if value not in choices:
        refuse.add(name, f"{value!r} is not one of: {', '.join(choices)}.")


def _symbols(refuse: _Refusals, name: str, raw: Any, *, limit: int) -> list[str]:
    """Return the normalised symbols of list ``raw``, refusing malformed and repeated ones."""
    if not isinstance(raw, list):
        refuse.add(name, "Must be a list of symbols.")
        return []
    if len(raw) > limit:
        refuse.add(name, f"At most {limit} coins; got {len(raw)}.")
    symbols: list[str] = []
    for index, item in enumerate(raw):
        try:
            symbol = normalize_symbol(item)
        except InvalidSymbolError as exc:
            refuse.add(f"{name}[{index}]", f"{exc}.")
            continue
        if symbol in symbols:
            refuse.add(f"{name}[{index}]", f"{symbol} is listed twice.")
            continue
        symbols.append(symbol)
    return symbols


def _names(refuse: _Refusals, name: str, raw: Any, known: Sequence[str], label: str) -> list[Any]:
    """Return list ``raw`` of names from ``known``, refusing unknown and repeated ones."""
    if not isinstance(raw, list):
        refuse.add(name, f"Must be a list of {label}s.")
        return []
    for index, item in enumerate(raw):
        if item not in known:
            refuse.add(f"{name}[{index}]", f"Unknown {label} {item!r}; one of {', '.join(known)}.")
        elif raw.index(item) != index:
            refuse.add(f"{name}[{index}]", f"{item} is listed twice.")
    return raw


def _text(refuse: _Refusals, values: dict[str, Any], name: str, limit: int, required: bool) -> None:
    value = values[name]
    if not isinstance(value, str):
        refuse.add(name, "Must be a string.")
        return
    values[name] = value.strip()
    if required and not values[name]:
        refuse.add(name, "Required.")
    elif len(values[name]) > limit:
        refuse.add(name, f"At most {limit} characters.")


def _decimal(refuse: _Refusals, values: dict[str, Any], name: str) -> None:
    low, low_allowed, high, places = DECIMAL_RANGES[name]
    value = values[name]
    try:
        number = Decimal(str(value)) if isinstance(value, int | float | str | Decimal) else None
    except InvalidOperation:
        number = None
    if isinstance(value, bool) or number is None or not number.is_finite():
        refuse.add(name, "Must be a decimal number.")
        return
    if number < low or (number == low and not low_allowed) or number > high:
        floor = f"at least {low}" if low_allowed else f"more than {low}"
        refuse.add(name, f"Must be {floor} and at most {high}; got {number}.")
    elif number != number.quantize(Decimal(1).scaleb(-places)):
        refuse.add(name, f"At most {places} decimal places.")
    values[name] = number


def _clean(values: dict[str, Any]) -> dict[str, Any]:
    """Return ``values`` ready to store, or raise ``ValidationError`` naming every bad field."""
    refuse = _Refusals()
    _text(refuse, values, "name", 100, required=True)
    _text(refuse, values, "role_text", MAX_TEXT, required=False)
    _text(refuse, values, "custom_prompt", MAX_TEXT, required=False)
    _text(refuse, values, "pool_url", 200, required=False)

    _choice(refuse, "coin_source", values["coin_source"], CoinSource.values)
    _choice(refuse, "oi_duration", values["oi_duration"], OIDuration.values)
    _choice(refuse, "market_source", values["market_source"], MarketSource.values)
    _choice(refuse, "prompt_variant", values["prompt_variant"], PromptVariant.values)
    _choice(refuse, "exchange", values["exchange"], LIVE_EXCHANGES)

    for name, (low, high) in INTEGER_RANGES.items():
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, int):
            refuse.add(name, "Must be an integer.")
        elif not low <= value <= high:
            refuse.add(name, f"Must be between {low} and {high}; got {value}.")
    for name in DECIMAL_RANGES:
        _decimal(refuse, values, name)
    for name, (low, high) in FLOAT_RANGES.items():
        value = values[name]
        if isinstance(value, bool) or not isinstance(value, int | float):
            refuse.add(name, "Must be a number.")
        elif not low <= value <= high:  # NaN and infinities too
            refuse.add(name, f"Must be between {low:g} and {high:g}; got {value}.")
        else:
            values[name] = float(value)
    for name in ("include_funding", "include_open_interest", "early_stop"):
        if not isinstance(values[name], bool):
            refuse.add(name, "Must be true or false.")

    values["static_coins"] = _symbols(
        refuse, "static_coins", values["static_coins"], limit=MAX_CANDIDATES
    )
    values["excluded_coins"] = _symbols(
        refuse, "excluded_coins", values["excluded_coins"], limit=MAX_EXCLUDED
    )
    values["timeframes"] = _names(
        refuse, "timeframes", values["timeframes"], TIMEFRAMES, "timeframe"
    )
    if values["timeframes"] == []:
        refuse.add("timeframes", "At least one timeframe.")
    values["indicators"] = _names(
        refuse, "indicators", values["indicators"], INDICATOR_NAMES, "indicator"
    )
    _check_sources(refuse, values)
    if refuse:
        raise ValidationError(fields=dict(refuse))
    return values


def _check_sources(refuse: _Refusals, values: dict[str, Any]) -> None:
    """Check the rules that tie the coin source to the other settings."""
    coin_source, pool_url = values["coin_source"], values["pool_url"]
    listed = values["static_coins"] or any(key.startswith("static_coins") for key in refuse)
    if coin_source == CoinSource.STATIC and not listed:
        refuse.add("static_coins", "The static coin source needs at least one coin.")
    static = values["static_coins"]
    if coin_source == CoinSource.STATIC and static and set(values["excluded_coins"]) >= set(static):
        refuse.add(
            "excluded_coins",
            "Excludes every static coin: the strategy would have no coin to debate.",
        )
    if coin_source in POOL_SOURCES and not pool_url:
        refuse.add("pool_url", f"Required for the {coin_source} coin source.")
    if isinstance(pool_url, str) and pool_url:
        try:
            _http_url(pool_url)
            check_no_user_info(pool_url)
            check_url(pool_url)
        except DjangoValidationError:
            refuse.add("pool_url", "Must be an http or https URL.")
        except OutboundRefused as exc:
            refuse.add("pool_url", str(exc))
    if values["market_source"] == MarketSource.DATASET:
        if coin_source == CoinSource.OI_TOP:
            refuse.add(
                "coin_source",
                "oi_top ranks coins by open interest, which the dataset market source "
                "does not have; use the live market source.",
            )
        for index, symbol in enumerate(values["static_coins"]):
            if symbol not in DATASET_SYMBOLS:
                refuse.add(
                    f"static_coins[{index}]",
                    f"{symbol} is not in the bundled dataset "
                    f"(it has {', '.join(DATASET_SYMBOLS)}).",
                )


def _unknown(data: Mapping[str, Any]) -> None:
    unknown = set(data) - set(FIELDS)
    if unknown:
        raise ValidationError(fields={name: ["Unknown field."] for name in sorted(unknown)})


def _owned(owner: AbstractBaseUser, strategy_id: int) -> Strategy:
    strategy = Strategy.objects.filter(owner=owner, pk=strategy_id).first()
    if strategy is None:
        raise NotFound("Strategy not found.")
    return strategy


def strategy_create(*, owner: AbstractBaseUser, data: Mapping[str, Any]) -> Strategy:
    """Create a strategy from ``data`` (unset fields take the model defaults)."""
    _unknown(data)
    defaults = {name: Strategy._meta.get_field(name).get_default() for name in FIELDS}
    values = _clean({**defaults, **data})
    return Strategy.objects.create(owner=owner, **values)


def strategy_update(
    *, owner: AbstractBaseUser, strategy_id: int, changes: Mapping[str, Any]
) -> Strategy:
    """Change the fields in ``changes``; the whole strategy is checked again."""
    _unknown(changes)
    strategy = _owned(owner, strategy_id)
    values = _clean({**{name: getattr(strategy, name) for name in FIELDS}, **changes})
    for name, value in values.items():
        setattr(strategy, name, value)
    strategy.save()
    return strategy


def strategy_delete(*, owner: AbstractBaseUser, strategy_id: int) -> None:
    """Delete a strategy no pending or running debate and no schedule uses (409 otherwise)."""
    from debates.models import ACTIVE_STATUSES, Debate, DebateStatus, Schedule

    strategy = _owned(owner, strategy_id)
    with transaction.atomic():
        in_use = Debate.objects.filter(
            strategy=strategy, status__in=(DebateStatus.PENDING, *ACTIVE_STATUSES)
        ).exists()
        if in_use:
            raise Conflict(
                f"Strategy {strategy.name!r} is used by a pending or running debate; "
                "wait for it to end or delete it first."
            )
        if Schedule.objects.filter(strategy=strategy).exists():
            raise Conflict(
                f"Strategy {strategy.name!r} is used by a schedule; "
                "change or delete the schedule first."
            )
        strategy.delete()
