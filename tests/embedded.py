"""The embedded default (SQLite, in-process worker, simulated models) in a process of its
own, as `make demo` and `make backtest` run it: its environment, and a fresh database."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from django.conf import settings

MANAGE = [sys.executable, "manage.py"]


def embedded_env(var: Path, **extra: str) -> dict[str, str]:
    """Return the environment of the embedded default on a SQLite file in ``var``, with
    ``extra`` variables: no DATABASE_URL, no REDIS_URL."""
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "REDIS_URL"}}
    env.update(DJANGO_SETTINGS_MODULE="arena.settings.local", ARENA_VAR_DIR=str(var), **extra)
    return env


def migrated_env(var: Path, **extra: str) -> dict[str, str]:
    """Return ``embedded_env(var, **extra)`` once its database is migrated."""
    env = embedded_env(var, **extra)
    subprocess.run([*MANAGE, "migrate", "-v0"], cwd=settings.BASE_DIR, env=env, check=True)
    return env


def manage(
    *args: str, env: dict[str, str], timeout: float = 300, check: bool = False
) -> subprocess.CompletedProcess[str]:
    """Run ``manage.py`` with ``args`` in the project's directory under ``env``, its
    output captured as text; return the finished process (``check``: fail unless it
    exited 0)."""
    return subprocess.run(
        [*MANAGE, *args],
        cwd=settings.BASE_DIR,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=check,
    )
