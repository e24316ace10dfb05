"""The debate engine: personalities, prompts, output parsing and consensus.

Pure Python with no Django import, so every rule of a debate can be tested without a
database. The orchestration (services and tasks) feeds it typed values and stores what it
returns.
"""

from debates.engine.consensus import Ballot, CoinConsensus, ConsensusLimits, decide
from debates.engine.judge import JUDGE_FINAL, JUDGE_ROUND
from debates.engine.parsing import normalise_action, normalise_symbol, parse_output
from debates.engine.personalities import (
    DEFAULT_VARIANT,
    PERSONALITIES,
    VARIANTS,
    Personality,
    get_personality,
)
from debates.engine.prompts import (
    HistoryEntry,
    Prompt,
    TurnContext,
    VoteContext,
    build_turn_prompt,
    build_vote_prompt,
)
from debates.engine.types import (
    EXECUTABLE_ACTIONS,
    OPENING_ACTIONS,
    Action,
    CoinDecision,
    Dropped,
    ParseResult,
    ParseStatus,
)

__all__ = [
    "DEFAULT_VARIANT",
    "EXECUTABLE_ACTIONS",
    "JUDGE_FINAL",
    "JUDGE_ROUND",
    "OPENING_ACTIONS",
    "PERSONALITIES",
    "VARIANTS",
    "Action",
    "Ballot",
    "CoinConsensus",
    "CoinDecision",
    "ConsensusLimits",
    "Dropped",
    "HistoryEntry",
    "ParseResult",
    "ParseStatus",
    "Personality",
    "Prompt",
    "TurnContext",
    "VoteContext",
    "build_turn_prompt",
    "build_vote_prompt",
    "decide",
    "get_personality",
    "normalise_action",
    "normalise_symbol",
    "parse_output",
]
