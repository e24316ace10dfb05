"""Production settings refuse to start without their secrets and pass the deploy check."""

import os
import subprocess
import sys

from cryptography.fernet import Fernet
from django.conf import settings


def run_manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    base = {k: v for k, v in os.environ.items() if k not in {"SECRET_KEY", "FIELD_ENCRYPTION_KEY"}}
    base.update(DJANGO_SETTINGS_MODULE="arena.settings.production", **env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=settings.BASE_DIR,
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_production_refuses_to_start_without_secret_key():
    result = run_manage("check", FIELD_ENCRYPTION_KEY=Fernet.generate_key().decode())
    assert result.returncode != 0
    assert "SECRET_KEY must be set in production" in result.stderr


def test_production_refuses_to_start_without_encryption_key():
    result = run_manage("check", SECRET_KEY="x" * 60)
    assert result.returncode != 0
    assert "FIELD_ENCRYPTION_KEY must be set in production" in result.stderr


def test_deploy_check_passes_with_the_required_variables():
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        SECRET_KEY="k8#Qz!" * 12,
        FIELD_ENCRYPTION_KEY=Fernet.generate_key().decode(),
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout
