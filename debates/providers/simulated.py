"""The built-in ``simulated`` model: no network, deterministic, reads the real snapshot.

It reads the structured market snapshot per coin (``simulated_reading``: trend from
price, EMA20 and EMA50, RSI, MACD histogram, funding, the higher timeframe's trend),
leans by personality and answers in the one output contract: a ``<reasoning>`` block
citing the numbers it used, then a ``<decision>`` block with a JSON array holding one
decision per candidate coin (or, in the ``json_schema`` output mode, the same as one
JSON object). From round 2 on, and in its vote, it may give way to a confident majority
of the others (``simulated_moves``). The same request (its sample number included)
always gives the same text. An artificial latency for demos comes from the Django setting
``SIMULATED_MODEL_LATENCY_S`` (default 0) when Django is configured.
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections import Counter
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
from debates.providers.simulated_moves import Leaning, give_way
from debates.providers.simulated_reading import Reading, read_coin
from strategies.market.snapshot import MarketSnapshot

PROVIDER = "simulated"


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
    request_id = f"sim-{digest[:16]}"
    if request.kind in JUDGE_KINDS:
        rng = random.Random(f"{digest}:{temperature}")
        return _judge_answer(request, rng, output_mode), request_id
    reasoning, decisions = _debate(request, random.Random(int(digest[:16], 16)))
    if output_mode == JSON_SCHEMA:
        answer = {"reasoning": reasoning, "decisions": decisions}
        return json.dumps(answer, indent=2, ensure_ascii=False), request_id
    text = (
        f"<reasoning>\n{reasoning}\n</reasoning>\n<decision>\n"
        + json.dumps(decisions, indent=2, ensure_ascii=False)
        + "\n</decision>\n"
    )
    return text, request_id


def _debate(request: ModelRequest, rng: random.Random) -> tuple[str, list[dict[str, Any]]]:
    """Return a debater's reasoning and its decision on each coin."""
    profile = _PROFILES.get(request.personality, _PROFILES["analyst"])
    snapshot = _load_snapshot(request.snapshot)
    symbols = list(request.symbols) or (snapshot.symbols if snapshot else [])
    # The personality's own argument comes first, coin by coin; the market reading it
    # rests on, the same for every participant, after it.
    arguments: list[str] = []
    readings = [_introduction(request, profile, snapshot)]
    decisions = []
    leaning = Leaning(
        request.personality,
        profile.may_long,
        profile.may_short,
        profile.leverage,
        profile.position[0],
    )
    for symbol in symbols:
        reading = _reading(snapshot, symbol)
        prior = tuple(request.prior_actions.get(symbol, ()))
        decision, comment = _decide(request.personality, profile, symbol, reading, prior, rng)
        moved = give_way(request, leaning, decision)
        if moved is not None:
            decision, why = moved
            comment = (
                f"{why} Decision: {decision['action']} at confidence {decision['confidence']}."
            )
            decision["reasoning"] = why
        decisions.append(decision)
        if reading is None:
            arguments.append(f"{symbol}: no market data in the snapshot; {comment}")
        else:
            arguments.append(f"{symbol}: {comment}")
            readings.append(f"- {reading.citation}")
        if prior:
            arguments.append(f"  The others so far on {symbol}: {_summarise(prior)}.")
    return "\n".join([*arguments, "", *readings]), decisions


def _introduction(request: ModelRequest, profile: _Profile, snapshot: MarketSnapshot | None) -> str:
    """Return the line saying which model speaks, at which stage, reading which data."""
    if request.kind == "vote":
        stage = f"final vote after {request.max_rounds} rounds"
    else:
        stage = f"turn in round {request.round}/{request.max_rounds}"
    source = f", reading the {snapshot.source} snapshot as of {snapshot.as_of}" if snapshot else ""
    return f"Simulated {profile.title} model, {stage}{source}."


def _decide(
    personality: str,
    profile: _Profile,
    symbol: str,
    reading: Reading | None,
    prior: tuple[str, ...],
    rng: random.Random,
) -> tuple[dict[str, Any], str]:
    """Return the personality's decision on one coin and the sentence that explains it."""
    score = reading.score if reading else 0.0
    lean = _lean(personality, profile, reading, prior)
    action = _action(profile, lean)
    stop_loss = _stop_loss(profile, reading)
    confidence, leverage, position_pct = _sizing(profile, action, min(1.0, abs(lean)), reading, rng)
    net = "bullish" if score > 0.15 else "bearish" if score < -0.15 else "mixed"
    if reading is None:
        comment = f"nothing to read, so I {action} (confidence {confidence})."
    else:
        lines = _WAITS if action == "wait" else _LEANS.get(personality, _LEANS["analyst"])
        rr = f"{profile.reward_risk:g}"
        fields = {**reading.fields, "net": net, "stop_pct": f"{stop_loss:.1%}", "rr": rr}
        comment = rng.choice(lines).format(**fields)
        comment += f" Decision: {action} at confidence {confidence}."
    decision = {
        "symbol": symbol,
        "action": action,
        "confidence": confidence,
        "leverage": leverage,
        "position_pct": position_pct,
        "stop_loss": stop_loss,
        "take_profit": round(stop_loss * profile.reward_risk, 4),
        "reasoning": _short_reason(action, reading, net),
    }
    return decision, comment


def _lean(
    personality: str, profile: _Profile, reading: Reading | None, prior: tuple[str, ...]
) -> float:
    """Return how far the personality leans long (above 0) or short on a coin."""
    score = reading.score if reading else 0.0
    if personality == "contrarian":
        majority = _majority(prior)
        # Against the previous majority when there is one, else against the data trend.
        return -majority * (0.5 + 0.3 * abs(score)) if majority else -score
    return score + profile.bias if reading else 0.0


def _action(profile: _Profile, lean: float) -> str:
    """Return the action a lean leads the personality to: open past its threshold, on a
    side it may take, else wait."""
    if lean >= profile.threshold and profile.may_long:
        return "open_long"
    if lean <= -profile.threshold and profile.may_short:
        return "open_short"
    return "wait"


def _stop_loss(profile: _Profile, reading: Reading | None) -> float:
    """Return the stop-loss distance: the coin's volatility times the personality's
    multiple, kept within 0.5 % to 8 %."""
    volatility = reading.stop_loss if reading else 0.02
    return round(min(0.08, max(0.005, volatility * profile.stop_mult)), 4)


def _sizing(
    profile: _Profile,
    action: str,
    strength: float,
    reading: Reading | None,
    rng: random.Random,
) -> tuple[int, int, float]:
    """Return the confidence, leverage and position size of a decision; a stronger
    lean opens with more of each, within the personality's bounds."""
    if reading is None:
        return 50, 1, profile.position[0]
    if action == "wait":
        return 55 + round(20 * (1 - strength)) + rng.randint(0, 4), 1, profile.position[0]
    confidence = min(profile.max_confidence, 50 + round(40 * strength) + rng.randint(0, 4))
    leverage = max(1, round(profile.leverage * (0.5 + 0.5 * strength)))
    low, high = profile.position
    return confidence, leverage, round(low + (high - low) * strength, 2)


def _reading(snapshot: MarketSnapshot | None, symbol: str) -> Reading | None:
    """Return what the snapshot says of ``symbol``, None when it has nothing to read."""
    coin = snapshot.coin(symbol) if snapshot else None
    return read_coin(coin) if coin else None


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


def _short_reason(action: str, reading: Reading | None, net: str) -> str:
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
        entries = [_score_entry(label, rng) for label in request.labels]
        if output_mode == JSON_SCHEMA:
            return json.dumps({"scores": entries}, indent=2)
        return "<scores>\n" + json.dumps(entries, indent=2) + "\n</scores>\n"
    fields = _summary_blocks(request)
    if output_mode == JSON_SCHEMA:
        return json.dumps(fields, indent=2)
    return "".join(f"<{name}>\n{text}\n</{name}>\n" for name, text in fields.items())


def _score_entry(label: str, rng: random.Random) -> dict[str, Any]:
    """Return one participant's rubric scores, each drawn between the item's floor and 9."""
    entry: dict[str, Any] = {"participant": label}
    for item, low in (("market_data", 5), ("answers", 3), ("consistency", 5)):
        entry[item] = rng.randint(low, 9)
        entry[f"{item}_reason"] = f"Simulated judge: {label} {item} {entry[item]}/10."
    return entry


def _summary_blocks(request: ModelRequest) -> dict[str, str]:
    """Return a round summary's three blocks from the positions taken on each coin."""
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
    return {
        "points": points,
        "agreements": ("; ".join(agreed) or "no coin drew one action from everyone") + ".",
        "disagreements": ("; ".join(split) or "no coin split long against short") + ".",
    }


def _summarise(actions: tuple[str, ...]) -> str:
    counts = Counter(actions)
    return ", ".join(f"{action} x{count}" for action, count in sorted(counts.items()))


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
            # only a judge's scores name participants, only a baseline's answers are
            # numbered; other requests keep their digests
            **({"labels": list(request.labels)} if request.labels else {}),
            **({"sample": request.sample} if request.sample else {}),
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
