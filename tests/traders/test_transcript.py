"""The live transcript of ``run_debate`` prints what models say as text, never as markup."""

from __future__ import annotations

import io

import pytest
from rich.console import Console

from debates.models import Message, Participant, StepStatus
from tests.debates.factories import DecisionFactory
from traders.management.commands.run_debate import REASONING_CHARS, Command
from traders.management.console import problem


def _printed(message: Message) -> str:
    out = io.StringIO()
    console = Console(file=out, width=400, highlight=False, color_system=None)
    Command()._print_message(console, Participant(personality="bear"), message)
    return out.getvalue()


def test_a_reasoning_with_brackets_is_printed_as_written():
    # given a turn whose reasoning holds what rich would read as markup
    message = Message(
        status=StepStatus.OK,
        decisions=[{"symbol": "BTCUSDT", "action": "open_short", "confidence": 70}],
        reasoning="Short it [bold]now[/] [/] while [red] funding is negative.",
        latency_ms=12,
    )
    # when the transcript prints it, then it prints the text itself
    printed = _printed(message)
    assert "BTCUSDT SHORT 70" in printed
    assert "Short it [bold]now[/] [/] while [red] funding is negative." in printed


def test_a_long_reasoning_is_cut_between_words():
    words = [f"word{i}" for i in range(200)]
    message = Message(status=StepStatus.OK, decisions=[], reasoning=" ".join(words), latency_ms=1)
    shown = _printed(message).splitlines()[1].strip()
    assert shown.endswith(" …")
    assert len(shown) <= REASONING_CHARS
    assert set(shown.removesuffix(" …").split()) <= set(words)


def test_a_failed_turn_prints_its_error_as_written():
    message = Message(
        status=StepStatus.ERROR,
        decisions=[],
        error={"code": "provider_error", "message": "upstream said [/oops]"},
    )
    assert "failed: provider_error: upstream said [/oops]" in _printed(message)


def test_a_failed_debate_names_the_step_that_failed():
    error = {"step": "round 2", "code": "round_failed", "message": "Every turn [x] failed."}
    assert problem(error) == r"round 2: round_failed: Every turn \[x] failed."


@pytest.mark.django_db
def test_the_consensus_table_sizes_orders_only():
    # given a debate that decided to go long on BTC and to wait on ETH, both sized by
    # the votes behind them
    long = DecisionFactory()
    DecisionFactory(
        debate=long.debate, symbol="ETHUSDT", action="wait", leverage=1, is_primary=False
    )
    # when the transcript prints the consensus
    out = io.StringIO()
    console = Console(file=out, width=400, highlight=False, color_system=None)
    Command()._print_consensus(console, long.debate)
    lines = out.getvalue().splitlines()
    rows = {coin: line for line in lines for coin in ("BTCUSDT", "ETHUSDT") if coin in line}
    # then the order shows its leverage, size, stop and target, and the wait none
    assert [cell.strip() for cell in rows["BTCUSDT"].split("│")[3:8]] == [
        "75.0",
        "5x",
        "25.0%",
        "3.0%",
        "6.0%",
    ]
    assert [cell.strip() for cell in rows["ETHUSDT"].split("│")[3:8]] == [
        "75.0",
        "-",
        "-",
        "-",
        "-",
    ]
