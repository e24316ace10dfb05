"""The README's first command runs a whole debate on the embedded default."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess

import pytest
from django.conf import settings

from tests.embedded import MANAGE, embedded_env, manage, migrated_env

pytestmark = pytest.mark.slow


def test_run_debate_on_the_embedded_default_completes(tmp_path):
    # given a fresh SQLite file in a directory not made yet (a fresh clone has no var/),
    # no Redis and no API key: the embedded default
    var = tmp_path / "var"
    env = migrated_env(var)
    # when the demo's command runs with --json
    result = manage("run_debate", "--json", "--as-of", "2024-08-05T12:00Z", env=env, timeout=120)
    # then it exits 0 and prints the completed debate as the API represents it
    assert result.returncode == 0, result.stderr[-2000:]
    detail = json.loads(result.stdout)
    assert detail["status"] == "completed"
    # three seats speak in each round run: all three, or fewer once their positions settle
    rounds = (detail["stopped_early"] or {}).get("after_round", 3)
    assert len(detail["messages"]) == 3 * rounds
    assert len(detail["votes"]) == 9
    assert {d["symbol"] for d in detail["decisions"]} == {"BTCUSDT", "ETHUSDT", "SOLUSDT"}
    assert detail["market_snapshot"]["as_of"] == "2024-08-05T12:00:00Z"
    assert all(p["provider"] == "simulated" for p in detail["participants"])
    assert (var / "arena.sqlite3").exists()


def test_make_demo_executes_paper_fills_every_time_and_its_json_pipes_into_jq(tmp_path):
    # given a fresh clone's embedded default
    env = embedded_env(tmp_path / "var")
    for run in (1, 2):
        # when `make demo ARGS=--json | jq .status` runs (twice in a row)
        result = subprocess.run(
            [
                "bash",
                "-c",
                "set -o pipefail; make -s demo ARGS='--json --rounds 2' | jq -r .status",
            ],
            cwd=settings.BASE_DIR,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )
        # then jq reads the status from stdout, and the transcript (on stderr) ends on a
        # paper fill on a fresh demo account, each run
        assert result.returncode == 0, result.stderr[-2000:]
        assert result.stdout == "completed\n"
        account = "Demo paper account" + ("" if run == 1 else " 2")
        assert f"Paper execution on {account}" in result.stderr
        assert "order arena" in result.stderr
        assert "SOLUSDT at 133.64" in result.stderr
        assert "already open" not in result.stderr


@pytest.mark.parametrize(
    ("stop", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)], ids=["ctrl-c", "kill"]
)
def test_a_stop_signal_cancels_the_debate_and_says_so_in_one_line(tmp_path, stop, status):
    # given the demo's command running a debate whose models take a second an answer
    var = tmp_path / "var"
    env = migrated_env(var, SIMULATED_MODEL_LATENCY_S="1")
    command = subprocess.Popen(
        [*MANAGE, "run_debate", "--rounds", "5"],
        cwd=settings.BASE_DIR,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines = []
    for line in command.stdout:
        lines.append(line)
        if line.startswith("🐂 bull"):  # the first turn is stored: the debate runs
            break
    # when it gets Ctrl-C (SIGINT) or SIGTERM
    command.send_signal(stop)
    rest, _ = command.communicate(timeout=60)
    # then it exits 128 + the signal's number with one line, no traceback
    assert command.returncode == status, rest
    assert "Traceback" not in rest
    interrupted = [line for line in rest.splitlines() if line.startswith("Interrupted")]
    assert len(interrupted) == 1
    assert interrupted[0].endswith("cancelled.")
    # and the debate is cancelled in the database
    with sqlite3.connect(var / "arena.sqlite3") as db:
        assert db.execute("SELECT status FROM debates_debate").fetchall() == [("cancelled",)]


def test_a_timeout_cancels_the_debate_and_the_worker_ends_quietly(tmp_path):
    # given the demo's command whose models take a second an answer
    var = tmp_path / "var"
    env = migrated_env(var, SIMULATED_MODEL_LATENCY_S="1")
    # when its --timeout passes before the debate ends
    result = manage("run_debate", "--rounds", "5", "--timeout", "3", env=env, timeout=120)
    # then it fails with one line naming the flag, and none of the worker's dying words
    assert result.returncode == 1, result.stderr[-3000:]
    assert result.stderr.strip().splitlines()[-1] == (
        "CommandError: --timeout: 3 s passed; debate 1 cancelled."
    )
    assert "Traceback" not in result.stderr and "CRITICAL" not in result.stderr
    # and the debate does not stay behind, running, holding one of the user's ten
    with sqlite3.connect(var / "arena.sqlite3") as db:
        assert db.execute("SELECT status FROM debates_debate").fetchall() == [("cancelled",)]
