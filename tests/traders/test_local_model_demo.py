"""``make demo-local`` (``run_debate --local-model``) leaves the local model's server
running for the next run, and says so at its end, with how to stop it."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from debates.models import AIModel
from traders.management import demo

pytestmark = pytest.mark.django_db

NOTE = (
    "The local model's server is still running at http://127.0.0.1:9/v1, for the next run; "
    "scripts/local-model stop stops it."
)


@pytest.fixture
def started_script(tmp_path, monkeypatch):
    """A stand-in for scripts/local-model whose ``start`` answers as the script does when
    the server answers already: its base URL, last on stdout."""
    script = tmp_path / "local-model"
    script.write_text(
        "#!/bin/sh\necho 'local-model: already answering' >&2\necho http://127.0.0.1:9/v1\n"
    )
    script.chmod(0o755)
    monkeypatch.setattr(demo, "LOCAL_MODEL_SCRIPT", script)
    return script


def test_the_demo_says_the_local_models_server_runs_on_and_how_to_stop_it(
    user, started_script, capsys
):
    # when the demo runs on the local model and ends (here, its time up with no worker)
    with pytest.raises(CommandError):
        call_command(
            "run_debate",
            *("--local-model", "--timeout", "1", "--no-execute", "--user", user.username),
        )
    # then its last words say the server still runs, where, and how to stop it
    printed = " ".join(capsys.readouterr().out.split())
    assert printed.endswith(NOTE)
    assert AIModel.objects.get(owner=user).base_url == "http://127.0.0.1:9/v1"


def test_a_bad_flag_is_refused_before_the_local_model_starts(user, started_script, capsys):
    # when the demo on the local model is given an instant that is none
    with pytest.raises(CommandError) as refused:
        call_command("run_debate", "--local-model", "--as-of", "soon", "--user", user.username)
    # then it is refused before the server is started, and says nothing of it
    assert str(refused.value).startswith("--as-of: ")
    assert "local model" not in capsys.readouterr().out
    assert not AIModel.objects.filter(owner=user).exists()
