"""The README's first command runs a whole debate on the embedded default."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from django.conf import settings

pytestmark = pytest.mark.slow


def test_run_debate_on_the_embedded_default_completes(tmp_path):
    # given a fresh SQLite file in a directory not made yet (a fresh clone has no var/),
    # no Redis and no API key: the embedded default
    var = tmp_path / "var"
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(DJANGO_SETTINGS_MODULE="arena.settings.local", ARENA_VAR_DIR=str(var))
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "migrate", "-v0"], cwd=settings.BASE_DIR, env=env, check=True)
    # when the demo's command runs with --json
    result = subprocess.run(
        [*manage, "run_debate", "--json", "--as-of", "2024-08-05T12:00Z"],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # then it exits 0 and prints the completed debate as the API represents it
    assert result.returncode == 0, result.stderr[-2000:]
    detail = json.loads(result.stdout)
    assert detail["status"] == "completed"
    assert len(detail["messages"]) == 9
    assert len(detail["votes"]) == 9
    assert {d["symbol"] for d in detail["decisions"]} == {"BTCUSDT", "ETHUSDT", "SOLUSDT"}
    assert detail["market_snapshot"]["as_of"] == "2024-08-05T12:00:00Z"
    assert all(p["provider"] == "simulated" for p in detail["participants"])
    assert (var / "arena.sqlite3").exists()
