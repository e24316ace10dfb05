"""What the rules that read model answers spent, per unit of edge: tokens and USD from
scripted token usage, each figure equal to its computation from the stated rules, and
the same on a re-run from the model-call cache."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest

from tests.backtests.conftest import PRICE, wait_until_done
from tests.backtests.test_run import contract, rule
from tests.fakes.llm_server import Reply

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]

START = datetime(2024, 8, 4, 12, tzinfo=UTC)
END = START + timedelta(days=1)  # 6 steps at 4h
MILLION = Decimal(1_000_000)
# Each kind of call's scripted (prompt, completion) tokens, and its answer.
OPENING, REBUTTAL, VOTE = (700, 100), (900, 100), (1100, 100)


def script(llm, calls: dict[str | tuple[str, ...], tuple[tuple[int, int], str]]) -> None:
    """Answer each prompt holding a key of ``calls`` (a text, or every text of a tuple)
    with its (tokens, action)."""
    for match, ((prompt, completion), action) in calls.items():
        reply = Reply.answer(contract(action), prompt_tokens=prompt, completion_tokens=completion)
        reply.match = list(match) if isinstance(match, tuple) else match
        llm.add_rule(reply)


def cost(tokens: tuple[int, int]) -> Decimal:
    return (tokens[0] * PRICE[0] + tokens[1] * PRICE[1]) / MILLION


def expected_spend(tokens: int, usd: Decimal, metrics: dict, hold_return: float) -> dict:
    """Return what ``tokens`` and ``usd`` bought a rule of ``metrics``, from the stated
    rules (docs/backtests.md, "What the tokens bought")."""
    over = (metrics["total_return"] - hold_return) * 100
    figures = {"tokens": tokens, "cost_usd": format(usd.normalize(), "f")}
    for unit, count in (
        ("trade", metrics["trades"]),
        ("point", over),
        ("correct", metrics["correct"]),
    ):
        per = count is not None and count > 0
        figures[f"tokens_per_{unit}"] = round(tokens / count, 1) if per else None
        figures[f"usd_per_{unit}"] = round(float(usd) / count, 8) if per else None
    return figures


def test_each_rule_spends_the_calls_its_decisions_rest_on_per_unit_of_edge(
    celery_worker, llm, make_backtest, priced
):
    # given openings that go short, rebuttals and votes that go long, each kind of call
    # using scripted tokens
    script(
        llm,
        {
            "Your turn in round 1/2": (OPENING, "open_short"),
            "Your turn in round 2/2": (REBUTTAL, "open_long"),
            "Cast your vote": (VOTE, "open_long"),
        },
    )
    window = {"personalities": ("bull", "bear"), "start": START, "end": END}
    # when a one-day backtest at 4h runs (6 debates of 2 seats over 2 rounds)
    first = wait_until_done(make_backtest(**window).pk)
    assert first.status == "completed", first.error
    report = first.report
    # then the debate spent every call of its 6 debates; the round-1 majority the openings
    debate_calls = 6 * 2 * (sum(OPENING) + sum(REBUTTAL) + sum(VOTE))
    debate_usd = 6 * 2 * (cost(OPENING) + cost(REBUTTAL) + cost(VOTE))
    hold = rule(report, "buy_and_hold")["metrics"]["total_return"]
    for key in ("debate", "weighting:confidence", "weighting:calibrated", "seat:P1", "seat:P2"):
        found = rule(report, key)
        assert found["spend"] == expected_spend(debate_calls, debate_usd, found["metrics"], hold)
    round1 = rule(report, "round1_majority")
    assert round1["spend"] == expected_spend(
        6 * 2 * sum(OPENING), 6 * 2 * cost(OPENING), round1["metrics"], hold
    )
    assert (rule(report, "buy_and_hold")["spend"], rule(report, "flat")["spend"]) == (None, None)
    # and the debate traded long, the round-1 majority short: both have figures to show
    assert rule(report, "debate")["metrics"]["trades"] > 0
    assert {t["side"] for t in round1["trades"]} == {"short"}
    # when it runs again, every answer from the cache
    again = wait_until_done(make_backtest(**window).pk)
    # then no model was called, and each rule spent what it spent the first time
    assert (again.report["usage"]["model_calls"], again.report["usage"]["cost_usd"]) == (0, "0")
    assert [r["spend"] for r in again.report["rules"]] == [r["spend"] for r in report["rules"]]
