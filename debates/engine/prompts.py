"""Prompt builders for debate turns and final votes.

Every prompt is a function of typed inputs and returns ``Prompt(system, user)``. What
every turn of a debate shares (rules, strategy, output format, market data) comes first,
so a provider's prompt cache can serve it to every later turn; what is one speaker's own
comes last. Each
variable part has a named character cap, so a prompt grows at most linearly with
rounds x participants: see :func:`max_prompt_chars`. Caps count characters, never bytes,
so Chinese text is never split inside a character.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from debates.engine.contract import TAGGED, answer_now, check_mode, contract_text
from debates.engine.digest import (
    COIN_REASON_MAX_CHARS,
    LABEL_MAX_CHARS,
    MESSAGE_DIGEST_MAX_CHARS,
    POSITION_LINE_MAX_CHARS,
    SUMMARY_MAX_CHARS,
    HistoryEntry,
    clip,
    digest,
    participant_label,
    positions_line,
    summarise,
)
from debates.engine.judge import ROUND_SUMMARY_MAX_CHARS
from debates.engine.personalities import get_personality, get_variant

__all__ = [
    "BOOK_TEXT_MAX_CHARS",
    "COIN_REASON_MAX_CHARS",
    "LABEL_MAX_CHARS",
    "MARKET_SUMMARY_MAX_CHARS",
    "MARKET_TEXT_MAX_CHARS",
    "MESSAGE_DIGEST_MAX_CHARS",
    "POSITION_LINE_MAX_CHARS",
    "PROMPT_FIXED_MAX_CHARS",
    "RECORD_TEXT_MAX_CHARS",
    "STRATEGY_TEXT_MAX_CHARS",
    "SUMMARY_MAX_CHARS",
    "SYMBOL_MAX_CHARS",
    "HistoryEntry",
    "Prompt",
    "TurnContext",
    "VoteContext",
    "build_turn_prompt",
    "build_vote_prompt",
    "max_prompt_chars",
    "participant_label",
    "summarise",
]

MARKET_TEXT_MAX_CHARS = 20_000
"""Cap on the rendered market snapshot in a turn prompt."""
MARKET_SUMMARY_MAX_CHARS = 6_000
"""Cap on the compact market summary in a vote prompt (at most MARKET_TEXT_MAX_CHARS)."""
BOOK_TEXT_MAX_CHARS = 8_000
"""Cap on the trader's book in a vote prompt."""
RECORD_TEXT_MAX_CHARS = 1_500
"""Cap on a voter's track record in a vote prompt; with the book and the market summary,
at most MARKET_TEXT_MAX_CHARS, so a vote prompt stays within ``max_prompt_chars``."""
STRATEGY_TEXT_MAX_CHARS = 2_000
"""Cap on each of the strategy's role text and custom prompt."""
SYMBOL_MAX_CHARS = 20
"""Longest accepted candidate symbol."""
PROMPT_FIXED_MAX_CHARS = 6_000
"""Upper bound on everything else: role, rules, variant, contract, headings, labels."""


@dataclass(frozen=True)
class Prompt:
    """The two texts sent to a model."""

    system: str
    user: str

    def __len__(self) -> int:
        return len(self.system) + len(self.user)


def _check_common(personality: str, variant: str, symbols: Sequence[str], output_mode: str) -> None:
    check_mode(output_mode)
    get_personality(personality)
    get_variant(variant)
    if not symbols:
        raise ValueError("at least one candidate symbol is required")
    for symbol in symbols:
        if not symbol or len(symbol) > SYMBOL_MAX_CHARS:
            raise ValueError(f"invalid candidate symbol {symbol!r}")


@dataclass(frozen=True)
class TurnContext:
    """Everything one debate turn's prompt depends on.

    ``history`` holds every message stored before this turn, in speaking order; it is
    shown from round 2 on (round 1 openings use the market data alone). ``participant``
    is the speaker's own label, so it can recognise its earlier messages.

    ``summary`` is the judge's summary of the previous round, when there is one: the
    prompt then carries it, each participant's latest per-coin positions (``positions``:
    one latest turn per participant, the speaker's own included) and the compact
    ``market_summary``, instead of every earlier message and the full market data, so
    its size does not grow with the round. The full data was analysed in round 1, and
    the summary reports the figures cited. Without a summary the prompt is as before.

    ``book`` is a trader's account as ``debates.engine.book.book_text`` renders it, for an
    opening that decides a trade on its own (a backtest's budget-matched baseline, whose
    answers see the book as a debate's votes do); a debate's turns argue the market and
    carry none.
    """

    round: int
    max_rounds: int
    personality: str
    variant: str
    symbols: tuple[str, ...]
    market_text: str
    strategy_role: str = ""
    custom_prompt: str = ""
    history: tuple[HistoryEntry, ...] = ()
    participant: str = ""
    output_mode: str = TAGGED
    summary: str = ""
    positions: tuple[HistoryEntry, ...] = ()
    market_summary: str = ""
    book: str = ""

    def __post_init__(self) -> None:
        if not 1 <= self.round <= self.max_rounds:
            raise ValueError(f"round {self.round} outside 1..{self.max_rounds}")
        if self.summary and self.round == 1:
            raise ValueError("round 1 has no earlier round to summarise")
        _check_common(self.personality, self.variant, self.symbols, self.output_mode)

    @property
    def summarised(self) -> bool:
        """Say whether the prompt carries the judge's summary instead of the history."""
        return bool(self.summary.strip())


@dataclass(frozen=True)
class VoteContext:
    """Everything one final vote's prompt depends on.

    ``positions`` holds each participant's latest message, keyed by its label; ``book``
    the trader's account as ``debates.engine.book.book_text`` renders it ("" for a debate
    without a book), ``record`` the voter's own track record as ``record_text`` renders
    it ("" when the strategy does not show it).
    """

    personality: str
    variant: str
    symbols: tuple[str, ...]
    market_summary: str
    positions: tuple[HistoryEntry, ...] = ()
    strategy_role: str = ""
    custom_prompt: str = ""
    participant: str = ""
    output_mode: str = TAGGED
    book: str = ""
    record: str = ""

    def __post_init__(self) -> None:
        _check_common(self.personality, self.variant, self.symbols, self.output_mode)


def max_prompt_chars(rounds: int, participants: int, coins: int) -> int:
    """Return the most characters any turn or vote prompt of such a debate can have.

    A turn in the last round sees fewer than ``rounds * participants`` earlier messages
    and a vote sees ``participants`` of them, each digest capped at
    MESSAGE_DIGEST_MAX_CHARS (plus its line break). An opening with a book (a baseline's
    answer) sees no message and at most BOOK_TEXT_MAX_CHARS of book, less than the four
    digests of the smallest debate (2 rounds of 2).
    """
    return (
        PROMPT_FIXED_MAX_CHARS
        + MARKET_TEXT_MAX_CHARS
        + 2 * STRATEGY_TEXT_MAX_CHARS
        + (coins + 1) * (SYMBOL_MAX_CHARS + 2)
        + rounds * participants * (MESSAGE_DIGEST_MAX_CHARS + 1)
    )


# What every turn's system text says, before the strategy, the contract and the data.
_TURN_INTRO = (
    "You are taking part in a debate about the crypto market: several participants, "
    "each with a personality, analyse the candidate coins over several rounds."
)
_TURN_RULES = (
    "Analyse every candidate coin listed, not only the first one.",
    "Support each claim with figures from the market data: price, indicators, "
    "funding, open interest.",
    "In the opening round build your view from the market data alone; in later rounds "
    "answer the other participants: say which of their points you accept or reject and "
    "why, naming them by label (for example P1).",
    "Let your personality guide what you look for, but never let it override the data.",
    "Different coins may deserve different actions.",
)
_TURN_HINT = (
    "your analysis, citing the data, and after the opening round your answers to the others"
)
_VOTE_INTRO = "The debate about the crypto market is over: each participant casts a final vote."
_VOTE_RULES = (
    "Vote on every candidate coin listed, one entry per coin.",
    "Weigh the arguments made in the debate against the market data, and change your "
    "mind where the others were more convincing.",
    "Let your personality guide what you look for, but never let it override the data.",
    "Give your honest confidence, and choose wait when the case is unclear.",
)
_VOTE_HINT = "why you vote as you do, citing the data and debate"


def build_turn_prompt(ctx: TurnContext) -> Prompt:
    """Return the prompt for one participant's turn in a debate round.

    The system text is the same for every turn of a debate (the rules, the strategy, the
    output format, the market data), and the user text starts with the debate so far,
    which only grows; what is the speaker's own (its round, label and role) comes last.
    So each turn's prompt begins with what an earlier turn of the debate already sent,
    and a provider's prompt cache can serve that part.
    """
    opening = ctx.round == 1
    if ctx.summarised:
        market = _market_summary(ctx.market_summary)
    else:
        market = "## Market data\n" + clip(ctx.market_text, MARKET_TEXT_MAX_CHARS, "market data")
    system = _system(ctx, _TURN_INTRO, _TURN_RULES, _TURN_HINT, market)
    kind = "opening analysis" if opening else "rebuttal"
    now = (
        "This is the opening round: build your view from the market data alone."
        if opening
        else "Answer the other participants, naming them by label."
    )
    parts = [
        *_debate_so_far(ctx),
        *_book_section(ctx.book),
        f"## Your turn\nYour turn in round {ctx.round}/{ctx.max_rounds}. "
        f"{_speaker(ctx.personality, ctx.participant)} {now}",
        "## Your role\n" + get_personality(ctx.personality).role,
        answer_now(f"Write your {kind} for round {ctx.round}", ctx.output_mode),
    ]
    return Prompt(system=system, user="\n\n".join(parts))


def _debate_so_far(ctx: TurnContext) -> list[str]:
    """Return what a turn shows of the earlier rounds: the judge's summary of the last
    one and everyone's latest positions when there is a summary, else every message
    (none in the opening round)."""
    if ctx.summarised:
        positions = "\n".join(positions_line(entry) for entry in ctx.positions)
        return [
            f"## The judge's summary of round {ctx.round - 1}\n"
            + clip(ctx.summary, ROUND_SUMMARY_MAX_CHARS, "summary"),
            "## Latest positions of the participants\n"
            + (positions or "No positions were recorded."),
        ]
    if ctx.round == 1:
        return []
    return ["## The debate so far\n" + _digests(ctx.history, "No earlier messages.")]


def build_vote_prompt(ctx: VoteContext) -> Prompt:
    """Return the prompt for one participant's final vote.

    As for turns, what every vote of a debate shares comes first (the system text, then
    the latest positions) and the voter's own label and role last.
    """
    market = _market_summary(ctx.market_summary)
    system = _system(ctx, _VOTE_INTRO, _VOTE_RULES, _VOTE_HINT, market)
    parts = [
        "## Latest positions of the participants\n"
        + _digests(ctx.positions, "No positions were recorded.", with_reasons=False),
        *_book_section(ctx.book),
        *_record_section(ctx.record),
        "## Your vote\nIt is time for the final vote. "
        + _speaker(ctx.personality, ctx.participant),
        "## Your role\n" + get_personality(ctx.personality).role,
        answer_now("Cast your vote", ctx.output_mode),
    ]
    return Prompt(system=system, user="\n\n".join(parts))


def _book_section(book: str) -> list[str]:
    """Return the section on the trader's account, if the prompt has one (a vote of a
    debate with a book, a baseline's answer): what is held, and what each action would
    do to it."""
    if not book:
        return []
    return [
        "## Your trader's account\nThe decision trades this account. For each candidate "
        "coin, what is held and what each action would do to it:\n"
        + clip(book, BOOK_TEXT_MAX_CHARS, "account")
    ]


def _record_section(record: str) -> list[str]:
    """Return the vote prompt's section on the voter's own reviewed calls, if shown."""
    if not record:
        return []
    return [
        "## Your track record\nYour last reviewed calls on these coins, newest first: "
        "the price move over the review horizon, and the verdict.\n"
        + clip(record, RECORD_TEXT_MAX_CHARS, "track record")
    ]


def _market_summary(text: str) -> str:
    """Return the compact market section that votes and summarised turns carry."""
    return "## Market summary\n" + clip(text, MARKET_SUMMARY_MAX_CHARS, "market summary")


def _speaker(personality_id: str, participant: str) -> str:
    personality = get_personality(personality_id)
    label = summarise(participant, LABEL_MAX_CHARS)
    who = f"{personality.emoji} {personality.name}"
    if not label:
        return f"You are the {who}."
    return f"You are {label}, the {who}; messages labelled {label} are your own."


def _system(
    ctx: TurnContext | VoteContext, intro: str, rules: Sequence[str], hint: str, market: str
) -> str:
    """Return the system text every turn (or every vote) of a debate shares."""
    parts = [
        intro,
        "## Rules\n" + "\n".join(f"{n}. {rule}" for n, rule in enumerate(rules, 1)),
        "## Approach\n" + get_variant(ctx.variant),
    ]
    if ctx.strategy_role.strip():
        parts.append("## Strategy\n" + clip(ctx.strategy_role, STRATEGY_TEXT_MAX_CHARS, "text"))
    if ctx.custom_prompt.strip():
        parts.append(
            "## Additional instructions\n"
            + clip(ctx.custom_prompt, STRATEGY_TEXT_MAX_CHARS, "text")
        )
    parts.append("## Output format\n" + contract_text(ctx.symbols[0], hint, ctx.output_mode))
    parts.append(f"## Candidate coins\n{', '.join(ctx.symbols)}")
    parts.append(market)
    return "\n\n".join(parts)


def _digests(entries: Sequence[HistoryEntry], empty: str, *, with_reasons: bool = True) -> str:
    if not entries:
        return empty
    return "\n".join(digest(entry, with_reasons=with_reasons) for entry in entries)
