"""Reading a setting as a freshly started process computes it from its environment."""

from __future__ import annotations

import os
import subprocess
import sys

from django.conf import settings


def setting_in_process(expression: str, **environment: str) -> str:
    """Return ``expression`` (Python over ``settings``) as printed by a new process whose
    environment has ``environment`` besides this one's, under the test settings."""
    shown = subprocess.run(
        [
            sys.executable,
            "manage.py",
            "shell",
            "--verbosity",
            "0",
            "-c",
            f"from django.conf import settings; print({expression})",
        ],
        cwd=settings.BASE_DIR,
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "arena.settings.test", **environment},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    return shown.stdout.strip()
