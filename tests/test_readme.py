"""The README's "Using the API" session runs as written, on a fresh database and after
`make demo`, and prints what the README shows; so do its judge session and its "Modes,
budgets and costs" session, on a fresh database."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess

import pytest
from django.conf import settings

pytestmark = pytest.mark.slow

BASE = settings.BASE_DIR
MARK = "@@@ step "


def console_session(text: str, opening: str) -> list[tuple[str, list[str]]]:
    """Return the commands of the first console block after ``opening``, each with the
    output lines the README shows under it (a command goes on over indented lines)."""
    block = text[text.index(opening) :]
    block = block[block.index("```console\n") + len("```console\n") :]
    block = block[: block.index("```")]
    steps: list[tuple[str, list[str]]] = []
    for line in block.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        elif line[:1].isspace() and steps and not steps[-1][1]:
            steps[-1] = (steps[-1][0] + "\n" + line, [])
        elif line.strip():
            steps[-1][1].append(line)
    return steps


def run_session(steps: list[tuple[str, list[str]]], env: dict[str, str]) -> list[list[str]]:
    """Run the commands in one bash, in order; return each one's output lines."""
    script = "".join(
        f"printf '\\n{MARK}{i}\\n'\n{command}\n" for i, (command, _) in enumerate(steps)
    )
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=BASE,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    outputs: list[list[str]] = []
    for chunk in re.split(rf"^{MARK}\d+\n", done.stdout, flags=re.M)[1:]:
        outputs.append([line for line in chunk.splitlines() if line.strip()])
    return outputs


def embedded_default(tmp_path) -> tuple[dict[str, str], str, str]:
    """Return the environment of a fresh clone's embedded default (nothing set, its
    files under ``tmp_path``), a free port for its web server, and the README."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "REDIS_URL", "DJANGO_SETTINGS_MODULE"}
    }
    env["ARENA_VAR_DIR"] = str(tmp_path / "var")
    return env, str(free_port()), (BASE / "README.md").read_text()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize("after_demo", [False, True], ids=["fresh-database", "after-make-demo"])
def test_the_using_the_api_session_runs_as_written(tmp_path, after_demo):
    # given a fresh clone's embedded default (nothing set), the web server on a free port
    env, port, readme = embedded_default(tmp_path)
    steps = [
        (command.replace("8000", port), output)
        for command, output in console_session(readme, "A session on the embedded default")
    ]
    if after_demo:  # the demo's objects come first in the same file
        demo = ["make", "-s", "demo", "ARGS=--rounds 2"]
        subprocess.run(demo, cwd=BASE, env=env, check=True, capture_output=True, timeout=300)
    # when its commands run in order in one shell
    outputs = run_session(steps, env)
    # then each prints what the README shows under it (after the demo, a model's figures
    # differ: the simulated answers depend on the debate's id)
    assert len(outputs) == len(steps)
    for (command, expected), output in zip(steps, outputs, strict=True):
        if after_demo and any("confidence" in line or "price" in line for line in expected):
            assert [shape(line) for line in output] == [shape(line) for line in expected]
        else:
            assert output == expected, command


@pytest.mark.parametrize(
    "opening",
    [
        "A session on a fresh embedded default with the simulated model as judge",
        "A session on a fresh embedded default with two simulated models",
    ],
    ids=["judge", "modes-budgets-and-costs"],
)
def test_a_session_on_a_fresh_embedded_default_runs_as_written(tmp_path, opening):
    # given a fresh clone's embedded default, the web server on a free port
    env, port, readme = embedded_default(tmp_path)
    steps = [
        (command.replace("8000", port), output)
        for command, output in console_session(readme, opening)
    ]
    # when its commands run in order in one shell
    outputs = run_session(steps, env)
    # then each prints what the README shows under it
    assert len(outputs) == len(steps)
    for (command, expected), output in zip(steps, outputs, strict=True):
        assert output == expected, command


def shape(line: str) -> tuple:
    """Return what a JSON line shows that the models' figures do not change: its keys,
    its coin and its status."""
    value = json.loads(line)
    return (list(value), value.get("symbol"), value.get("status"))
