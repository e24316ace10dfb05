"""Every model change has its migration: a model edited without one would run on a
schema other than the one its code expects, wherever `migrate` builds it."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command


def test_no_model_change_is_without_its_migration(db):
    # given every app's models and migrations
    out = StringIO()
    # when makemigrations looks for a change no migration holds
    try:
        call_command("makemigrations", "--check", "--dry-run", stdout=out)
    except SystemExit:
        # then it finds none (it exits non-zero and lists what it would write)
        pytest.fail(f"models changed without a migration:\n{out.getvalue()}")
    assert "No changes detected" in out.getvalue()
