"""Whom the web process believes about the client's address and scheme: X-Forwarded-For
and X-Forwarded-Proto only from the proxies named in ``FORWARDED_ALLOW_IPS`` (none by
default), so that no header resets the login lockout of an address, nor passes plain HTTP
for HTTPS."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import yaml
from axes.models import AccessAttempt
from cryptography.fernet import Fernet
from django.conf import settings

from tests.debates.conftest import worker_env
from tests.factories import UserFactory
from tests.ports import free_port
from tests.processes import start_procfile_web, stop_process

BASE = Path(settings.BASE_DIR)
PASSWORD = "correct horse battery staple"  # the one tests.factories.UserFactory sets
FORWARDED = "--forwarded-allow-ips=${FORWARDED_ALLOW_IPS:-}"


def test_the_web_commands_trust_only_the_proxies_they_are_given():
    # given the web command of the Procfile and of docker compose
    procfile = next(
        line for line in (BASE / "Procfile").read_text().splitlines() if line.startswith("web:")
    )
    compose = yaml.safe_load((BASE / "docker-compose.yml").read_text())["services"]["web"]
    # then each passes FORWARDED_ALLOW_IPS to uvicorn, nothing when it is unset (uvicorn's
    # own default would trust 127.0.0.1)
    assert FORWARDED in shlex.split(procfile)
    assert FORWARDED in shlex.split(compose["command"])


@contextmanager
def procfile_web(**env: str) -> Iterator[str]:
    """Run the Procfile's web process on this test run's database with ``env`` added
    (and no FORWARDED_ALLOW_IPS but the one given); yield its root URL."""
    base = {k: v for k, v in worker_env().items() if k != "FORWARDED_ALLOW_IPS"}
    port = free_port()
    process = start_procfile_web(
        port, {**base, "LOG_LEVEL": "WARNING", **env}, ready_path="/healthz"
    )
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(process)


def _token_try(url: str, password: str, forwarded_for: str | None = None) -> int:
    headers = {"X-Forwarded-For": forwarded_for} if forwarded_for else {}
    body = {"username": "alice", "password": password}
    return httpx.post(f"{url}/api/auth/token", json=body, headers=headers, timeout=10).status_code


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_a_forged_x_forwarded_for_does_not_reset_the_lockout():
    # given the web process as the Procfile runs it with nothing set, and a user name
    # locked out from loopback
    UserFactory(username="alice")
    with procfile_web() as url:
        statuses = [_token_try(url, "wrong") for _ in range(settings.AXES_FAILURE_LIMIT)]
        assert statuses[-1] == 429
        # when the right password comes from loopback claiming to forward another client
        forged = _token_try(url, PASSWORD, forwarded_for="203.0.113.9")
    # then it is still locked out, and only loopback was ever counted
    assert forged == 429
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"127.0.0.1"}


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_behind_a_proxy_named_in_forwarded_allow_ips_each_client_is_counted():
    # given the web process behind a proxy on loopback, and a user name locked out from
    # one client the proxy forwards
    UserFactory(username="alice")
    with procfile_web(FORWARDED_ALLOW_IPS="127.0.0.1") as url:
        limit = settings.AXES_FAILURE_LIMIT
        statuses = [_token_try(url, "wrong", forwarded_for="203.0.113.9") for _ in range(limit)]
        assert statuses[-1] == 429
        # when another client behind the proxy, then the first, log in
        other = _token_try(url, PASSWORD, forwarded_for="198.51.100.7")
        first = _token_try(url, PASSWORD, forwarded_for="203.0.113.9")
    # then the other is let in and the first is still locked out: the proxy's word on
    # who is who is believed
    assert (other, first) == (200, 429)
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"203.0.113.9"}


# The production settings' required secrets, and the host the tests call.
PRODUCTION = {
    "DJANGO_SETTINGS_MODULE": "arena.settings.production",
    "SECRET_KEY": "k8#Qz!" * 12,
    "FIELD_ENCRYPTION_KEY": Fernet.generate_key().decode(),
    "ALLOWED_HOSTS": "127.0.0.1",
}


def _scheme_claimed(url: str) -> httpx.Response:
    """Ask for the schema over plain HTTP, claiming through X-Forwarded-Proto that the
    client used HTTPS."""
    headers = {"X-Forwarded-Proto": "https"}
    return httpx.get(f"{url}/api/schema/", headers=headers, follow_redirects=False, timeout=10)


@pytest.mark.slow
@pytest.mark.django_db(transaction=True)
def test_the_scheme_a_client_claims_is_believed_only_from_a_named_proxy():
    # given the web process on the production settings, first with no proxy named, then
    # behind a proxy on loopback
    with procfile_web(**PRODUCTION) as url:
        # when a client over plain HTTP claims HTTPS itself
        claimed = _scheme_claimed(url)
        secure = url.replace("http://", "https://", 1)
    with procfile_web(**PRODUCTION, FORWARDED_ALLOW_IPS="127.0.0.1") as url:
        # and when the named proxy says so
        forwarded = _scheme_claimed(url)
    # then the client is sent to HTTPS, its claim not believed; the proxy is believed
    assert (claimed.status_code, claimed.headers.get("location")) == (
        301,
        f"{secure}/api/schema/",
    )
    assert forwarded.status_code == 200
