"""``manage.py backtest`` on the embedded default (SQLite, in-process worker, simulated
models): a progress bar, then every rule's metrics; ``--json`` prints the report."""

from __future__ import annotations

import json
import re
import signal
import sqlite3
import subprocess
import time
from decimal import Decimal

import pytest
from django.conf import settings

from tests.embedded import MANAGE, manage, migrated_env

pytestmark = pytest.mark.slow


def test_the_backtest_command_runs_on_the_embedded_default_and_prints_the_report(tmp_path):
    # given the embedded default in a fresh directory
    env = migrated_env(tmp_path)
    command = [
        "backtest",
        *("--symbol", "ETH", "--from", "2024-08-04", "--to", "2024-08-05T12:00Z"),
        *("--every", "4h", "--participants", "bull,bear", "--rounds", "2"),
    ]
    # when a 36-hour backtest runs, then again with --json
    shown = manage(*command, env=env)
    again = manage(*command, "--json", env=env)
    # then the first showed its progress and the table of every rule
    assert shown.returncode == 0, shown.stderr[-2000:]
    assert "9/9 debates" in shown.stdout
    # with none of the in-process worker's INFO lines (54 step-log lines) around them
    assert " INFO " not in shown.stderr, shown.stderr[:2000]
    summary = (
        r"9/9 debates completed; \d+ model calls, 0 answered from the cache, "
        r"\d+ tokens \(estimated\), "
    )
    assert re.search(summary, " ".join(shown.stdout.split())), shown.stdout[-3000:]
    for label in ("debate", "buy & hold", "round-1 majority", "P2 bear", "votes calibrated"):
        assert label in shown.stdout
    # and the ledger of the outcome reviews, with each voter's accuracy and calibration
    assert "Did the debate help? " in shown.stdout and "Brier" in shown.stdout
    # and whether it earned its tokens, against the round-1 majority (no baseline here)
    assert "Did the debate earn its tokens?" in shown.stdout
    assert "No verdict yet on this backtest: 9 reviewed steps" in " ".join(shown.stdout.split())
    # and the second printed the report, made with no model call at all (the cache)
    assert again.returncode == 0, again.stderr[-2000:]
    report = json.loads(again.stdout)
    assert [r["key"] for r in report["rules"]] == [
        "debate",
        "buy_and_hold",
        "flat",
        "round1_majority",
        "weighting:confidence",
        "weighting:calibrated",
        "seat:P1",
        "seat:P2",
    ]
    assert (report["steps"], report["completed_steps"]) == (9, 9)
    assert (report["usage"]["model_calls"], report["usage"]["cached_calls"]) == (0, 9 * 6)
    assert [s["timeframe"] for s in report["stretches"]] == ["1h", "15m"]


@pytest.mark.parametrize(
    ("stop", "status"),
    [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)],
    ids=["ctrl-c", "kill", "terminal-closed"],
)
def test_a_stop_signal_cancels_the_backtest_and_says_so_in_one_line(tmp_path, stop, status):
    # given the command running a backtest whose models take a second an answer
    env = migrated_env(tmp_path, SIMULATED_MODEL_LATENCY_S="1")
    command = subprocess.Popen(
        [*MANAGE, "backtest", "--symbol", "ETH", "--from", "2024-08-06", "--to", "2024-08-08"],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    database = tmp_path / "arena.sqlite3"

    def debates_running() -> bool:
        try:
            with sqlite3.connect(database) as db:
                query = "SELECT count(*) FROM debates_debate WHERE status = 'running'"
                return db.execute(query).fetchone()[0] > 0
        except sqlite3.OperationalError:  # the file is being migrated, or locked a moment
            return False

    deadline = time.monotonic() + 120
    while not debates_running() and command.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    # when it gets Ctrl-C (SIGINT), SIGTERM or SIGHUP while its debates run
    command.send_signal(stop)
    output, _ = command.communicate(timeout=60)
    # then it exits 128 + the signal's number with one line, no traceback and none of the
    # worker's logging
    assert command.returncode == status, output[-3000:]
    assert "Traceback" not in output and " INFO " not in output and "CRITICAL" not in output
    interrupted = [line for line in output.splitlines() if line.startswith("Interrupted")]
    assert interrupted == ["Interrupted: backtest 1 cancelled."], output[-3000:]
    # and the backtest and every debate it started are cancelled in the database
    with sqlite3.connect(database) as db:
        assert db.execute("SELECT status FROM backtests_backtest").fetchall() == [("cancelled",)]
        statuses = {s for (s,) in db.execute("SELECT status FROM debates_debate")}
    assert statuses <= {"cancelled", "completed"} and "cancelled" in statuses


def test_a_backtest_none_of_whose_debates_completed_says_why_and_fails(tmp_path):
    # given the embedded default and a model whose server is down (nothing on port 9)
    env = migrated_env(tmp_path)
    made = manage("shell", "-v", "0", "-c", DOWN_MODEL, env=env, check=True)
    model = made.stdout.strip()
    # when a backtest of two steps seats it
    result = manage(
        *("backtest", "--models", f"{model},{model}", "--participants", "bull,bear"),
        *("--from", "2024-09-04T22:00Z", "--to", "2024-09-05", "--every", "1h"),
        env=env,
    )
    # then it says which steps have no debate and why, and fails: there is nothing to score
    assert result.returncode == 1, result.stderr[-3000:]
    said = " ".join(result.stdout.split())
    assert "2 of 2 steps have no completed debate (scored as no decision); the first, at " in said
    assert "failed: round 1: round_failed: Every turn of round 1 failed." in said
    assert "┃ rule" not in result.stdout  # no table of rules: none has a figure
    assert result.stderr.strip().splitlines()[-1] == (
        "CommandError: backtest 1: no debate completed, nothing to score"
    )


# Prints the id of a model of the demo user answering from a server that is down.
DOWN_MODEL = """
from django.contrib.auth import get_user_model
from debates.models import AIModel
owner, _ = get_user_model().objects.get_or_create(username="demo")
print(AIModel.objects.create(
    owner=owner, name="down", provider="openai_compatible", model_name="m",
    base_url="http://127.0.0.1:9/v1", timeout_seconds=2,
).pk)
"""


def test_a_profit_factor_without_a_losing_trade_reads_infinite():
    from backtests.management.tables import profit_factor

    # a rule whose every closed trade won has no profit factor (nothing to divide by)
    assert profit_factor({"profit_factor": None, "win_rate": 1.0}) == "∞"
    # one with no trade at all has none either, and says so as any missing figure
    assert profit_factor({"profit_factor": None, "win_rate": None}) == "-"
    assert profit_factor({"profit_factor": 1.8, "win_rate": 0.5}) == "1.80"


def test_a_drawdown_shows_as_the_api_gives_it_a_positive_share():
    from backtests.engine.metrics import max_drawdown
    from backtests.management.tables import drawdown

    # given an equity curve falling a quarter from its peak, as the API reports it
    fall = max_drawdown([Decimal("1000"), Decimal("1200"), Decimal("900"), Decimal("1000")])
    assert fall == pytest.approx(0.25)
    # then the command shows it with the same sign, as the page does
    assert (drawdown(fall), drawdown(0.0), drawdown(None)) == ("25.00%", "0.00%", "-")


def test_make_backtest_and_the_backtests_page_start_from_the_commands_window(client, user):
    from django.core.management import load_command_class

    # given the command's default window
    parser = load_command_class("backtests", "backtest").create_parser("manage.py", "backtest")
    defaults = parser.parse_args([])
    # then make backtest names no window of its own
    recipe = (settings.BASE_DIR / "Makefile").read_text().split("\nbacktest:")[1].split("\n\n")[0]
    assert "manage.py backtest" in recipe
    assert ("--from" in recipe, "--to" in recipe) == (False, False)
    # and the backtests page's form starts from the same window
    client.force_login(user)
    page = client.get("/backtests/").content.decode()
    shown = dict(
        re.findall(r'id="b-(start|end)" name="\w+" type="datetime-local" value="([^"]+)"', page)
    )
    assert shown == {"start": f"{defaults.start}T00:00", "end": f"{defaults.end}T00:00"}
    assert (defaults.start, defaults.end) == ("2024-08-08", "2024-08-22")
