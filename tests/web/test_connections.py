"""The web process takes its database connections from a pool: a request opens none."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest
from rest_framework.authtoken.models import Token

from tests.arena.test_worker_connections import sessions_opened
from tests.factories import UserFactory
from tests.resilience.test_database_drop import terminate_other_connections

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def http(server) -> Iterator[httpx.Client]:
    """A client of the web process, authenticated with a new user's token."""
    token = Token.objects.create(user=UserFactory()).key
    with httpx.Client(base_url=server.url, headers={"Authorization": f"Token {token}"}) as client:
        yield client


def test_requests_to_the_web_process_reuse_its_pooled_connections(http):
    # given the web process (DB_CONN_MAX_AGE 0, as the Procfile runs it) that has
    # answered a request which reads the database
    assert http.get("/api/debates").status_code == 200
    before = sessions_opened()
    # when it answers 30 more
    for _ in range(30):
        assert http.get("/api/debates").status_code == 200
    # then they ran on the connections its pool already had (at most 8 of them)
    assert sessions_opened() - before <= 1


def test_a_pooled_connection_the_server_closed_is_replaced_before_a_request_gets_it(http):
    # given the web process whose pool holds connections it has used
    assert http.get("/api/debates").status_code == 200
    # when the server closes every one of them (a restart, say)
    assert terminate_other_connections() >= 1
    # then the next requests are answered, each on a connection checked as it is taken
    # (CONN_HEALTH_CHECKS: Django gives the pool psycopg_pool's check)
    assert [http.get("/api/debates").status_code for _ in range(3)] == [200] * 3
