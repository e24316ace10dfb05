"""The judge: a model that summarises each round and scores the participants, never voting.

Two kinds of call, each a prompt builder and a parser that never raises:

- the **round summary** (after every round but the last): the points made, the
  agreements, the open disagreements, in the judge's words, followed by a per-coin tally
  of the round's positions that the engine counts itself (a model miscounting cannot
  change it). The whole summary is at most ``ROUND_SUMMARY_MAX_CHARS`` characters;
  later rounds' prompts carry it instead of every earlier message.
- the **scores** (after the votes): per participant, the items of ``RUBRIC`` on 0..10
  with one sentence each. A participant's score is the mean of its items over 10, so
  0..1; with three judges each item is the median of the judges' values
  (:func:`aggregate_scores`), and how far they were apart is recorded as the agreement.

In a debate's plan (``debates.engine.plan``) they are the steps ``judge_round`` (after
each round but the last) and ``judge_final`` (after the votes, before the consensus),
registered here for a debate whose plan settings say it has a judge.

Both follow the debate's output modes (``debates.engine.contract``): ``tagged`` asks for
tagged blocks, ``json_schema`` for one JSON object under :func:`summary_schema` or
:func:`scores_schema`. The parsers read either form whatever was asked, as
``parse_output`` does: small models mix them up. Every cap counts characters.

The round summary is in :mod:`debates.engine.judge_summary`, one judge's scores in
:mod:`debates.engine.judge_scores`, what both share in :mod:`debates.engine.judge_answers`;
this module names them all and holds the judges' temperatures, the median of their
scores and the judge's steps in a debate's plan.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from debates.engine.judge_scores import (
    JUDGE_MARKET_MAX_CHARS,
    REASON_MAX_CHARS,
    RUBRIC,
    SCORE_MAX,
    ItemScore,
    JudgedSeat,
    ScoresContext,
    ScoreSheet,
    build_scores_prompt,
    normalise_label,
    parse_scores,
    scores_schema,
)
from debates.engine.judge_summary import (
    AGREEMENTS_MAX_CHARS,
    DISAGREEMENTS_MAX_CHARS,
    POINTS_MAX_CHARS,
    ROUND_SUMMARY_MAX_CHARS,
    RoundSummary,
    SummaryContext,
    SummaryStatus,
    build_summary_prompt,
    parse_summary,
    round_tally,
    summary_schema,
    summary_text,
    tally_text,
)
from debates.engine.plan import OPENING, VOTING, PlanSettings, StepSpec, register_step_kind
from debates.engine.types import plain_dict

__all__ = [
    "AGREEMENTS_MAX_CHARS",
    "DISAGREEMENTS_MAX_CHARS",
    "JUDGE_COUNTS",
    "JUDGE_FINAL",
    "JUDGE_MARKET_MAX_CHARS",
    "JUDGE_OPTION",
    "JUDGE_ROUND",
    "POINTS_MAX_CHARS",
    "REASON_MAX_CHARS",
    "ROUND_SUMMARY_MAX_CHARS",
    "RUBRIC",
    "SCORE_MAX",
    "SPREAD_TEMPERATURES",
    "ItemScore",
    "JudgedSeat",
    "ParticipantScore",
    "RoundSummary",
    "ScoreSheet",
    "ScoresContext",
    "SummaryContext",
    "SummaryStatus",
    "aggregate_scores",
    "build_scores_prompt",
    "build_summary_prompt",
    "judge_temperatures",
    "normalise_label",
    "parse_scores",
    "parse_summary",
    "round_tally",
    "scores_schema",
    "summary_schema",
    "summary_text",
    "tally_text",
]

JUDGE_ROUND = "judge_round"
"""The plan's step after each round but the last: the judge summarises the round."""
JUDGE_FINAL = "judge_final"
"""The plan's step after the votes, before the consensus: the judge scores the debaters."""
JUDGE_OPTION = "judge"
"""The plan setting (``PlanSettings.options``) that says the debate has a judge."""

JUDGE_COUNTS = (1, 3)
SPREAD_TEMPERATURES = (0.2, 0.7, 1.2)
"""The temperatures of three judges: one careful, one middling, one loose."""


def judge_temperatures(count: int, temperature: float) -> tuple[float, ...]:
    """Return the temperature of each of ``count`` judges; one judge keeps the model's."""
    if count not in JUDGE_COUNTS:
        raise ValueError(f"judge count must be one of {JUDGE_COUNTS}, not {count!r}")
    return (temperature,) if count == 1 else SPREAD_TEMPERATURES


# -- three judges ---------------------------------------------------------------------


@dataclass(frozen=True)
class ParticipantScore:
    """A participant's final judge score.

    ``items`` holds each rubric item's median over the judges that scored it, with the
    reason of the judge closest to that median; ``score`` is the items' mean over 10
    (0..1), None when no judge scored it (``missing`` says why). ``agreement`` is 1 when
    the judges gave the same values, 0 when they were the whole scale apart (the mean
    over items of 1 - range/10), None with a single judge.
    """

    label: str
    items: dict[str, ItemScore] = field(hash=False)
    score: float | None
    agreement: float | None
    judges: int
    missing: str = ""

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serialisable dict."""
        return {
            **plain_dict(self),
            "items": {name: item.to_dict() for name, item in self.items.items()},
        }


def aggregate_scores(
    sheets: Sequence[ScoreSheet | None], labels: Sequence[str], *, failure: str = ""
) -> dict[str, ParticipantScore]:
    """Return each participant's score from the judges' ``sheets`` (None: a failed call).

    ``failure`` is the reason recorded for participants no judge scored, when known.
    """
    usable = [sheet for sheet in sheets if sheet is not None and sheet.usable]
    missing = failure or (
        "no judge answered usably" if not usable else "no judge scored this participant"
    )
    return {
        label: _participant_score(
            label, [sheet.items[label] for sheet in usable if sheet.items.get(label)], missing
        )
        for label in labels
    }


def _participant_score(
    label: str, per_judge: list[dict[str, ItemScore]], missing: str
) -> ParticipantScore:
    """Return a participant's score from the items each judge gave it (``per_judge``)."""
    given = _given_items(per_judge)
    if not given:
        return ParticipantScore(label, {}, None, None, 0, missing)
    items = {name: _median_item(values) for name, values in given.items()}
    agreements = [_agreement(values) for values in given.values() if len(values) > 1]
    mean = sum(item.value for item in items.values()) / len(items)
    return ParticipantScore(
        label=label,
        items=items,
        score=round(mean / SCORE_MAX, 4),
        agreement=round(sum(agreements) / len(agreements), 4) if agreements else None,
        judges=len(per_judge),
    )


def _given_items(per_judge: list[dict[str, ItemScore]]) -> dict[str, list[ItemScore]]:
    """Return, per rubric item some judge scored, the judges' scores of it."""
    given = {name: [judged[name] for judged in per_judge if name in judged] for name in RUBRIC}
    return {name: scores for name, scores in given.items() if scores}


def _agreement(values: list[ItemScore]) -> float:
    """Return 1 when the judges gave an item the same value, 0 when they were the whole
    scale apart."""
    spread = max(item.value for item in values) - min(item.value for item in values)
    return 1 - spread / SCORE_MAX


def _median_item(given: list[ItemScore]) -> ItemScore:
    """Return the judges' median value of one item, with the reason of the judge closest
    to it."""
    median = statistics.median(item.value for item in given)
    closest = min(given, key=lambda item: abs(item.value - median))
    return ItemScore(round(median, 2), closest.reason)


# -- the judge's steps in a debate's plan ----------------------------------------------


def _judge_round_steps(settings: PlanSettings, round_number: int | None) -> list[list[StepSpec]]:
    if not settings.options.get(JUDGE_OPTION) or round_number is None:
        return []
    if round_number >= settings.max_rounds:
        return []  # the last round is followed by the votes, which read every message
    return [[StepSpec(JUDGE_ROUND, round_number)]]


def _judge_final_steps(settings: PlanSettings, round_number: int | None) -> list[list[StepSpec]]:
    return [[StepSpec(JUDGE_FINAL)]] if settings.options.get(JUDGE_OPTION) else []


register_step_kind(JUDGE_ROUND, part="round", build=_judge_round_steps, after=OPENING)
register_step_kind(JUDGE_FINAL, part="tail", build=_judge_final_steps, after=VOTING)
