"""The built-in ``simulated`` model: no network, deterministic, reads the real snapshot.

It reads the structured market snapshot per coin (trend from price, EMA20 and EMA50,
RSI, MACD histogram, funding, the higher timeframe's trend), leans by personality and
answers in the one output contract: a ``<reasoning>`` block citing the numbers it used,
then a ``<decision>`` block with a JSON array holding one decision per candidate coin (or,
in the ``json_schema`` output mode, the same as one JSON object).
The same (snapshot, personality, round, seed, kind, symbols, prior actions) always give
the same text. An artificial latency for demos comes from the Django setting
``SIMULATED_MODEL_LATENCY_S`` (default 0) when Django is configured.
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import time
from dataclasses import dataclass
from typing import Any

from debates.engine.contract import JSON_SCHEMA, TAGGED
from debates.providers.base import (
    JUDGE_KINDS,
    DeadlineExceeded,
    ModelRequest,
    ModelResponse,
    ProviderConfig,
    TerminalProviderError,
)
from strategies.market.snapshot import CoinSnapshot, MarketSnapshot, TimeframeView

PROVIDER = "simulated"
_MAIN_TIMEFRAMES = ("1h", "4h", "15m", "1d")
_HIGHER = {"15m": "1h", "1h": "4h", "4h": "1d"}


@dataclass(frozen=True)
class _Profile:
    """How one personality turns a market reading into a decision."""

    title: str
    bias: float
    threshold: float
    may_long: bool
    may_short: bool
    leverage: int
    position: tuple[float, float]
    stop_mult: float
    reward_risk: float
    max_confidence: int


_PROFILES = {
    "bull": _Profile("Bull", 0.35, 0.2, True, False, 8, (0.3, 0.5), 1.5, 2.5, 90),
    "bear": _Profile("Bear", -0.35, 0.2, False, True, 6, (0.25, 0.4), 1.3, 2.2, 90),
    "analyst": _Profile("Analyst", 0.0, 0.25, True, True, 5, (0.2, 0.35), 1.5, 2.0, 90),
    "contrarian": _Profile("Contrarian", 0.0, 0.2, True, True, 4, (0.15, 0.3), 1.4, 2.0, 75),
    "risk_manager": _Profile("Risk manager", 0.0, 0.4, True, True, 2, (0.1, 0.2), 1.0, 2.0, 75),
}

_LEANS = {
    "bull": (
        "Trend continuation is the base case; dips toward EMA50 {ema50} are support.",
        "Momentum favours buyers; I want to be long while price holds above {ema50}.",
    ),
    "bear": (
        "I see the risk first: resistance near {bb_upper} and crowded positioning.",
        "Rallies into {bb_upper} look sellable; the downside is under-priced.",
    ),
    "analyst": (
        "Weighing the readings evenly, the net signal is {net}.",
        "The indicators add up to a {net} reading; I follow the data.",
    ),
    "contrarian": (
        "The obvious reading is {net}; I look at what the crowd is overlooking.",
        "When everyone agrees the move is usually priced in; I take the other side.",
    ),
    "risk_manager": (
        "Small size, stop at {stop_pct}: capital preservation before conviction.",
        "Reward/risk must stay near {rr}:1; size is kept small until the trend confirms.",
    ),
}

_WAITS = (
    "The {net} reading gives me no edge worth taking at this price.",
    "Nothing here fits my book yet; staying out costs nothing.",
)


@dataclass(frozen=True)
class _Reading:
    """What the simulated model takes from one coin's snapshot."""

    score: float
    citation: str
    stop_loss: float
    fields: dict[str, str]


def complete_simulated(
    config: ProviderConfig, request: ModelRequest, *, deadline: float
) -> ModelResponse:
    """Answer ``request`` as the simulated model, without any network call.

    ``deadline`` is a ``time.monotonic()`` instant; an artificial latency that would
    pass it ends in ``DeadlineExceeded`` at the deadline, as a real provider would.
    """
    started = time.monotonic()
    text, request_id = render_answer(request, config.output_mode, temperature=config.temperature)
    delay = _artificial_latency_s()
    if delay > 0:
        remaining = deadline - time.monotonic()
        if delay > remaining:
            time.sleep(max(0.0, remaining))
            raise DeadlineExceeded("simulated: artificial latency passed the call deadline")
        time.sleep(delay)
    return ModelResponse(
        text=text,
        prompt_tokens=_tokens(request.system) + _tokens(request.user),
        completion_tokens=_tokens(text),
        latency_ms=round((time.monotonic() - started) * 1000),
        request_id=request_id,
        provider=PROVIDER,
        model=config.effective_model,
        attempts=1,
        simulated=True,
        finish_reason="stop",
    )


def render_answer(
    request: ModelRequest, output_mode: str = TAGGED, *, temperature: float | None = None
) -> tuple[str, str]:
    """Return the simulated answer text for ``request`` and its ``sim-`` request id, in the
    contract's ``output_mode`` form. A judge's answer also depends on ``temperature``, so
    three judges at spread temperatures answer differently (a debater's does not).

    Raise ``TerminalProviderError`` (``bad_request``) when the snapshot cannot be read.
    """
    digest = _digest(request)
    rng = random.Random(int(digest[:16], 16))
    if request.kind in JUDGE_KINDS:
        rng = random.Random(f"{digest}:{temperature}")
        return _judge_answer(request, rng, output_mode), f"sim-{digest[:16]}"
    profile = _PROFILES.get(request.personality, _PROFILES["analyst"])
    snapshot = _load_snapshot(request.snapshot)
    symbols = list(request.symbols) or (snapshot.symbols if snapshot else [])

    stage = (
        f"final vote after {request.max_rounds} rounds"
        if request.kind == "vote"
        else f"turn in round {request.round}/{request.max_rounds}"
    )
    source = f", reading the {snapshot.source} snapshot as of {snapshot.as_of}" if snapshot else ""
    # The personality's own argument comes first, coin by coin; the market reading it
    # rests on, the same for every participant, after it.
    arguments: list[str] = []
    readings = [f"Simulated {profile.title} model, {stage}{source}."]
    decisions = []
    for symbol in symbols:
        coin = snapshot.coin(symbol) if snapshot else None
        reading = _read_coin(coin) if coin else None
        prior = tuple(request.prior_actions.get(symbol, ()))
        decision, comment = _decide(request.personality, profile, symbol, reading, prior, rng)
        decisions.append(decision)
        if reading is None:
            arguments.append(f"{symbol}: no market data in the snapshot; {comment}")
        else:
            arguments.append(f"{symbol}: {comment}")
            readings.append(f"- {reading.citation}")
        if prior:
            arguments.append(f"  The others so far on {symbol}: {_summarise(prior)}.")
    lines = [*arguments, "", *readings]
    if output_mode == JSON_SCHEMA:
        answer = {"reasoning": "\n".join(lines), "decisions": decisions}
        return json.dumps(answer, indent=2, ensure_ascii=False), f"sim-{digest[:16]}"
    text = (
        "<reasoning>\n"
        + "\n".join(lines)
        + "\n</reasoning>\n<decision>\n"
        + json.dumps(decisions, indent=2, ensure_ascii=False)
        + "\n</decision>\n"
    )
    return text, f"sim-{digest[:16]}"


def _decide(
    personality: str,
    profile: _Profile,
    symbol: str,
    reading: _Reading | None,
    prior: tuple[str, ...],
    rng: random.Random,
) -> tuple[dict[str, Any], str]:
    score = reading.score if reading else 0.0
    if personality == "contrarian":
        majority = _majority(prior)
        # Against the previous majority when there is one, else against the data trend.
        lean = -majority * (0.5 + 0.3 * abs(score)) if majority else -score
    else:
        lean = score + profile.bias if reading else 0.0
    strength = min(1.0, abs(lean))
    if lean >= profile.threshold and profile.may_long:
        action = "open_long"
    elif lean <= -profile.threshold and profile.may_short:
        action = "open_short"
    else:
        action = "wait"

    stop_loss = round(
        min(0.08, max(0.005, (reading.stop_loss if reading else 0.02) * profile.stop_mult)), 4
    )
    take_profit = round(stop_loss * profile.reward_risk, 4)
    if reading is None:
        confidence = 50
        leverage, position_pct = 1, profile.position[0]
    elif action == "wait":
        confidence = 55 + round(20 * (1 - strength)) + rng.randint(0, 4)
        leverage, position_pct = 1, profile.position[0]
    else:
        confidence = min(profile.max_confidence, 50 + round(40 * strength) + rng.randint(0, 4))
        leverage = max(1, round(profile.leverage * (0.5 + 0.5 * strength)))
        low, high = profile.position
        position_pct = round(low + (high - low) * strength, 2)

    fields = dict(reading.fields) if reading else {}
    fields.update(
        net="bullish" if score > 0.15 else "bearish" if score < -0.15 else "mixed",
        stop_pct=f"{stop_loss:.1%}",
        rr=f"{profile.reward_risk:g}",
    )
    if reading is None:
        comment = f"nothing to read, so I {action} (confidence {confidence})."
    else:
        lines = _WAITS if action == "wait" else _LEANS.get(personality, _LEANS["analyst"])
        comment = rng.choice(lines).format(**fields)
        comment += f" Decision: {action} at confidence {confidence}."
    decision = {
        "symbol": symbol,
        "action": action,
        "confidence": confidence,
        "leverage": leverage,
        "position_pct": position_pct,
        "stop_loss": stop_loss,
        "take_profit": take_profit,
        "reasoning": _short_reason(action, reading, fields["net"]),
    }
    return decision, comment


def _read_coin(coin: CoinSnapshot) -> _Reading | None:
    view = next(
        (v for name in _MAIN_TIMEFRAMES if (v := coin.timeframe(name)) is not None),
        coin.timeframes[0] if coin.timeframes else None,
    )
    if view is None:
        return None
    ind = view.indicators
    price = coin.price
    parts = [f"{coin.symbol} {view.timeframe}: price {fmt_price(price)}"]
    score = 0.0
    if ind.ema20 is not None and ind.ema50 is not None:
        above = ind.ema20 > ind.ema50
        trend = 1.0 if above else -1.0
        if (price >= ind.ema20) != above:
            trend /= 2  # price already back through the fast average: a weaker trend
        score += 0.4 * trend
        parts.append(
            f"EMA20 {fmt_price(ind.ema20)} {'above' if above else 'below'} "
            f"EMA50 {fmt_price(ind.ema50)}"
        )
    if ind.rsi14 is not None:
        rsi = ind.rsi14
        if rsi <= 30 or 55 <= rsi < 70:  # oversold bounce, or healthy momentum
            score += 0.1
        elif rsi >= 70 or rsi <= 45:  # overbought, or weak
            score -= 0.1
        parts.append(f"RSI {rsi:.1f}")
    if ind.macd_hist is not None:
        score += 0.25 if ind.macd_hist > 0 else -0.25 if ind.macd_hist < 0 else 0.0
        parts.append(f"MACD histogram {ind.macd_hist:+,.4g}")
    if coin.funding_rate is not None:
        if coin.funding_rate >= 0.0005:
            score -= 0.1
        elif coin.funding_rate <= -0.0003:
            score += 0.1
        parts.append(f"funding {coin.funding_rate:+.4%}/8h")
    higher = coin.timeframe(_HIGHER.get(view.timeframe, ""))
    higher_trend = _trend_word(higher)
    if higher_trend:
        score += 0.15 if higher_trend == "up" else -0.15
        parts.append(f"{higher.timeframe} trend {higher_trend}")
    atr_fraction = ind.atr14 / price if ind.atr14 and price > 0 else 0.02
    bb_upper = fmt_price(ind.bb_upper) if ind.bb_upper is not None else fmt_price(price * 1.02)
    fields = {
        "ema50": fmt_price(ind.ema50) if ind.ema50 is not None else fmt_price(price),
        "bb_upper": bb_upper,
    }
    return _Reading(
        score=max(-1.0, min(1.0, score)),
        citation=", ".join(parts) + ".",
        stop_loss=atr_fraction,
        fields=fields,
    )


def _load_snapshot(data: dict[str, Any] | None) -> MarketSnapshot | None:
    if not data:
        return None
    try:
        return MarketSnapshot.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise TerminalProviderError(
            f"simulated: unreadable market snapshot ({type(exc).__name__}: {exc})",
            code="bad_request",
        ) from None


def _trend_word(view: TimeframeView | None) -> str:
    if view is None:
        return ""
    ind = view.indicators
    if ind.ema20 is None or ind.ema50 is None or ind.ema20 == ind.ema50:
        return ""
    return "up" if ind.ema20 > ind.ema50 else "down"


def _short_reason(action: str, reading: _Reading | None, net: str) -> str:
    if reading is None:
        return "No market data for this coin: waiting."
    citation = reading.citation.split(": ", 1)[-1].rstrip(".")
    return f"{net.capitalize()} reading ({citation}); {action}."


def _majority(actions: tuple[str, ...]) -> int:
    longs = sum(1 for action in actions if action == "open_long")
    shorts = sum(1 for action in actions if action == "open_short")
    return (longs > shorts) - (shorts > longs)


def _judge_answer(request: ModelRequest, rng: random.Random, output_mode: str) -> str:
    """Return the simulated judge's answer: a summary of the round's positions (given as
    ``prior_actions``), or rubric scores for ``labels`` drawn from the request's seed."""
    if request.kind == "judge_scores":
        entries = []
        for label in request.labels:
            entry: dict[str, Any] = {"participant": label}
            for item, low in (("market_data", 5), ("answers", 3), ("consistency", 5)):
                entry[item] = rng.randint(low, 9)
                entry[f"{item}_reason"] = f"Simulated judge: {label} {item} {entry[item]}/10."
            entries.append(entry)
        if output_mode == JSON_SCHEMA:
            return json.dumps({"scores": entries}, indent=2)
        return "<scores>\n" + json.dumps(entries, indent=2) + "\n</scores>\n"
    leanings, agreed, split = [], [], []
    for symbol in request.symbols:
        actions = tuple(request.prior_actions.get(symbol, ()))
        if not actions:
            continue
        leanings.append(f"{symbol}: {_summarise(actions)}")
        directions = {action.split("_")[-1] for action in actions if action.startswith("open")}
        if len(set(actions)) == 1:
            agreed.append(f"everyone says {actions[0]} on {symbol}")
        elif len(directions) > 1:
            split.append(f"long against short on {symbol}")
    points = (
        f"Simulated judge, round {request.round}/{request.max_rounds}. The positions taken: "
        + ("; ".join(leanings) or "none")
        + "."
    )
    fields = {
        "points": points,
        "agreements": ("; ".join(agreed) or "no coin drew one action from everyone") + ".",
        "disagreements": ("; ".join(split) or "no coin split long against short") + ".",
    }
    if output_mode == JSON_SCHEMA:
        return json.dumps(fields, indent=2)
    return "".join(f"<{name}>\n{text}\n</{name}>\n" for name, text in fields.items())


def _summarise(actions: tuple[str, ...]) -> str:
    counts: dict[str, int] = {}
    for action in actions:
        counts[action] = counts.get(action, 0) + 1
    return ", ".join(f"{action} x{count}" for action, count in sorted(counts.items()))


def fmt_price(value: float) -> str:
    """Return ``value`` with thousands separators and about five significant digits."""
    if value == 0 or not math.isfinite(value):
        return f"{value:.1f}"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(1, 4 - magnitude)
    return f"{value:,.{decimals}f}"


def _digest(request: ModelRequest) -> str:
    key = json.dumps(
        {
            "snapshot": request.snapshot,
            "personality": request.personality,
            "round": request.round,
            "max_rounds": request.max_rounds,
            "seed": request.seed,
            "kind": request.kind,
            "symbols": list(request.symbols),
            "prior": {symbol: list(acts) for symbol, acts in request.prior_actions.items()},
            # only a judge's scores name participants; other requests keep their digests
            **({"labels": list(request.labels)} if request.labels else {}),
        },
        sort_keys=True,
        default=str,
    )
    return hashlib.sha256(key.encode()).hexdigest()


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)


def _artificial_latency_s() -> float:
    try:
        from django.conf import settings
    except ImportError:
        return 0.0
    if not settings.configured:
        return 0.0
    return float(getattr(settings, "SIMULATED_MODEL_LATENCY_S", 0) or 0)
