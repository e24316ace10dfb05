"""The five trading personalities and the prompt variants that tune every prompt."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

from debates.engine.types import plain_dict


@dataclass(frozen=True)
class Personality:
    """A debating character: how it looks in the UI and how its prompt frames it."""

    id: str
    name: str
    emoji: str
    color: str
    description: str
    role: str

    def to_dict(self) -> dict[str, str]:
        """Return the public representation (without the prompt role text)."""
        return plain_dict(self, leave_out={"role"})


_ALL = (
    Personality(
        id="bull",
        name="Bull",
        emoji="🐂",
        color="#22C55E",
        description="Optimist hunting for longs: trend continuation and support holding.",
        role=(
            "You are the Bull. You look first for reasons a coin can go higher: an uptrend "
            "that is still intact, price holding above support or rising moving averages, "
            "momentum turning up, volume confirming buyers, funding that is not yet "
            "overheated. Argue for long entries where the data supports them and say where "
            "the bullish case would be proven wrong. When the data is clearly bearish, admit "
            "it and do not force a long."
        ),
    ),
    Personality(
        id="bear",
        name="Bear",
        emoji="🐻",
        color="#EF4444",
        description="Sceptic hunting for risks and shorts: resistance and weakening momentum.",
        role=(
            "You are the Bear. You look first for what can go wrong: price stalling under "
            "resistance, momentum fading while price still rises, overbought readings, "
            "crowded longs paying high funding, falling volume on rallies. Argue for short "
            "entries or for staying out where the data supports it and say where the "
            "bearish case would be proven wrong. When the data is clearly bullish, admit it "
            "and do not force a short."
        ),
    ),
    Personality(
        id="analyst",
        name="Analyst",
        emoji="📊",
        color="#3B82F6",
        description="Neutral and purely data driven: reads the indicators without a side.",
        role=(
            "You are the Analyst. You have no directional preference. Weigh trend, "
            "momentum, volatility, volume, funding and open interest across the timeframes "
            "and state which way the evidence leans and how strongly. Quote the numbers you "
            "rely on. When the readings conflict, say so and lower your confidence rather "
            "than picking a side."
        ),
    ),
    Personality(
        id="contrarian",
        name="Contrarian",
        emoji="🔄",
        color="#F59E0B",
        description="Challenges the majority and looks for readings the others overlooked.",
        role=(
            "You are the Contrarian. Test the view most participants hold: look for the "
            "readings it ignores, such as divergences, stretched positioning, extreme "
            "funding or a higher timeframe that disagrees. Disagreeing is not a goal in "
            "itself: if the majority view survives your scrutiny, say so and support it."
        ),
    ),
    Personality(
        id="risk_manager",
        name="Risk Manager",
        emoji="🛡️",
        color="#8B5CF6",
        description="Guards capital: position size, stops, leverage and risk/reward.",
        role=(
            "You are the Risk Manager. Your job is to keep capital safe. For every proposed "
            "trade check the reward against the risk, place the stop loss where the idea is "
            "invalidated (use volatility such as ATR), keep leverage and position size in "
            "proportion to confidence, and prefer waiting when the risk/reward is poor. "
            "Challenge any plan that has no clear stop."
        ),
    ),
)

PERSONALITIES: Mapping[str, Personality] = MappingProxyType({p.id: p for p in _ALL})


def get_personality(personality_id: str) -> Personality:
    """Return the personality with this id; raise ``KeyError`` for an unknown id."""
    try:
        return PERSONALITIES[personality_id]
    except KeyError:
        raise KeyError(f"unknown personality {personality_id!r}") from None


DEFAULT_VARIANT = "balanced"

VARIANTS: Mapping[str, str] = MappingProxyType(
    {
        "balanced": (
            "Balanced approach: trade only when trend and momentum agree, size positions "
            "moderately, use leverage of about 3-10 and keep take profit at least twice the "
            "stop loss distance."
        ),
        "aggressive": (
            "Aggressive approach: act on early signals and breakouts, accept larger positions "
            "and leverage when conviction is high, but still give every trade a stop loss."
        ),
        "conservative": (
            "Conservative approach: protect capital first. Trade only on strong, confirmed "
            "setups across several timeframes, keep leverage low (1-5) and positions small, "
            "and choose wait whenever the picture is unclear."
        ),
        "scalping": (
            "Scalping approach: focus on the shortest timeframes and quick moves, use tight "
            "stop losses and take profits (about 0.5-2 % of price), and close positions "
            "quickly when momentum stalls."
        ),
    }
)


def get_variant(variant_id: str) -> str:
    """Return the guidance paragraph of a prompt variant; raise ``KeyError`` if unknown."""
    try:
        return VARIANTS[variant_id]
    except KeyError:
        raise KeyError(f"unknown prompt variant {variant_id!r}") from None
