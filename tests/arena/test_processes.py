"""The processes the documentation starts: the port `make serve` gives the web process,
the containers' start order, what the container image holds."""

from __future__ import annotations

import fnmatch
import os
import re
import shutil
import signal
import subprocess
import sys
import sysconfig
import time
import tomllib
from pathlib import Path

import httpx
import pytest
import yaml
from django.apps import apps
from django.conf import settings

from tests.embedded import embedded_env
from tests.ports import free_port
from tests.processes import procfile_commands

BASE = settings.BASE_DIR


def test_make_serve_starts_honcho_on_the_documented_port():
    # given the console sessions of the README and the docs pages, which all talk to one port
    pages = [BASE / "README.md", *sorted((BASE / "docs").rglob("*.md"))]
    text = "\n".join(page.read_text() for page in pages)
    ports = set(re.findall(r"curl -s(?: -X \w+)? localhost:(\d+)", text))
    assert ports == {"8000"}
    # when make prints what `make serve` runs (without running it)
    env = {k: v for k, v in os.environ.items() if k != "PORT"}
    recipe = subprocess.run(
        ["make", "-n", "serve"], cwd=BASE, env=env, capture_output=True, text=True, check=True
    ).stdout
    # then honcho is given that port (its own default would be 5000)
    assert "honcho start --port ${PORT:-8000}" in recipe


@pytest.mark.slow
def test_the_procfile_web_process_listens_on_the_port_honcho_is_given(tmp_path):
    # given honcho started as `make serve` starts it, on a port nobody uses
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in {"PORT", "DATABASE_URL", "REDIS_URL"}}
    env.update(DJANGO_SETTINGS_MODULE="arena.settings.local", ARENA_VAR_DIR=str(tmp_path))
    honcho = subprocess.Popen(
        [str(BASE / ".venv/bin/honcho"), "start", "--port", str(port), "web"],
        cwd=BASE,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        # when the web process has started
        answer = None
        for _ in range(150):
            try:
                answer = httpx.get(f"http://127.0.0.1:{port}/api/schema/", timeout=2)
                break
            except httpx.TransportError:
                time.sleep(0.2)
        # then it answers HTTP on that port
        assert answer is not None, "the web process never listened on the port honcho gave"
        assert answer.status_code in (200, 401, 403)
    finally:
        os.killpg(honcho.pid, signal.SIGTERM)
        honcho.wait(timeout=30)


def test_compose_starts_web_worker_and_beat_after_the_migrations():
    # given the compose file
    services = yaml.safe_load((BASE / "docker-compose.yml").read_text())["services"]
    # then each process that reads the schema waits for `migrate` to have succeeded
    for name in ("web", "worker", "calls", "beat"):
        assert services[name]["depends_on"]["migrate"] == {
            "condition": "service_completed_successfully"
        }
    assert "migrate" not in services["migrate"]["depends_on"]
    # and the workers and beat log at LOG_LEVEL
    for name in ("worker", "calls", "beat"):
        assert "--loglevel ${LOG_LEVEL:-INFO}" in services[name]["command"]


def test_the_procfile_and_compose_run_the_model_calls_on_a_thread_pool_of_their_own():
    # given the worker processes of the Procfile and of compose
    procfile = procfile_commands("celery -A arena worker")
    services = yaml.safe_load((BASE / "docker-compose.yml").read_text())["services"]
    composed = {name: services[name]["command"] for name in ("worker", "calls")}
    # then each runs the steps on the default queue in processes, and the model calls on
    # their own queue in MODEL_CALL_THREADS threads, taking database connections from a pool
    threads = f"--pool threads --concurrency ${{MODEL_CALL_THREADS:-{settings.MODEL_CALL_THREADS}}}"
    for commands in (procfile, composed):
        assert set(commands) == {"worker", "calls"}
        assert "--pool" not in commands["worker"] and "-Q celery " in commands["worker"]
        assert threads in commands["calls"]
        assert f"-Q {settings.MODEL_CALL_QUEUE} " in commands["calls"]
    assert procfile["calls"].startswith("DB_CONN_MAX_AGE=0 ")
    assert services["calls"]["environment"]["DB_CONN_MAX_AGE"] == "0"


def _local_apps() -> list[str]:
    """The project's own apps: those whose package is a folder of the checkout's root."""
    return sorted(
        config.name for config in apps.get_app_configs() if Path(config.path).parent == BASE
    )


def _copy_as_the_image(root: Path) -> None:
    """Put under ``root`` what the Dockerfile's COPY lines put in the image's WORKDIR."""
    for line in (BASE / "Dockerfile").read_text().splitlines():
        if not line.startswith("COPY "):
            continue
        *sources, destination = line.split()[1:]
        for source in sources:
            target = root / destination
            if destination.endswith("/"):
                target = target / source
            if (BASE / source).is_dir():
                shutil.copytree(BASE / source, target)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy(BASE / source, target)


def test_the_image_holds_every_app_and_django_starts_from_it(tmp_path):
    # given the files the Dockerfile copies, and nothing else of the checkout
    _copy_as_the_image(tmp_path)
    assert {app for app in _local_apps() if not (tmp_path / app).is_dir()} == set()
    # when Django checks the project from them, with the installed packages but not the
    # checkout's own editable install (-S: no .pth file of site-packages is read)
    packages = {sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"]}
    env = embedded_env(tmp_path / "var", PYTHONPATH=os.pathsep.join(packages))
    checked = subprocess.run(
        [sys.executable, "-S", "manage.py", "check"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    # then every app imports: the image starts
    assert checked.returncode == 0, checked.stderr[-2000:]
    assert "no issues" in checked.stdout


def test_the_package_holds_every_app():
    # given the packages pyproject.toml puts in the project's distribution
    found = tomllib.loads((BASE / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"]
    patterns = found["find"]["include"]
    # then each of the project's apps is one of them
    assert {
        app for app in _local_apps() if not any(fnmatch.fnmatch(app, p) for p in patterns)
    } == set()


def test_every_compose_process_of_the_app_has_the_shared_environment():
    # given the compose file, read as compose reads it (YAML merge keys included)
    compose = yaml.safe_load((BASE / "docker-compose.yml").read_text())
    shared = compose["x-app"]["environment"]
    # then each process of the app has every shared variable, a worker's own added to
    # them (its connection age), none left out by the worker's own block
    for name in ("migrate", "web", "worker", "calls", "beat"):
        environment = compose["services"][name]["environment"]
        assert shared.items() - environment.items() == set(), name
    assert compose["services"]["worker"]["environment"]["DB_CONN_MAX_AGE"] == "60"
