"""``/metrics`` is closed to anonymous users: it answers staff sessions and the bearer
token of ``METRICS_TOKEN``, and anyone once ``METRICS_PUBLIC`` opens it."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

TOKEN = "a-metrics-token-0123456789"


def client_of(kind: str) -> Client:
    """Return a client: anonymous, logged in as a plain user or as staff."""
    client = Client()
    if kind != "anonymous":
        client.force_login(UserFactory(is_staff=kind == "staff"))
    return client


@pytest.mark.parametrize(
    ("kind", "headers", "status"),
    [
        ("anonymous", {}, 401),
        ("anonymous", {"Authorization": "Bearer wrong-token"}, 401),
        ("anonymous", {"Authorization": f"Token {TOKEN}"}, 401),
        ("user", {}, 403),
        ("anonymous", {"Authorization": f"Bearer {TOKEN}"}, 200),
        ("staff", {}, 200),
    ],
    ids=["anonymous", "wrong-token", "other-scheme", "plain-user", "token", "staff"],
)
def test_metrics_answer_staff_and_the_token_only(settings, kind, headers, status):
    # given a metrics token, the metrics not public
    settings.METRICS_TOKEN = TOKEN
    # when the metrics are asked for
    answer = client_of(kind).get("/metrics", headers=headers)
    # then only staff and the token's bearer read them
    assert answer.status_code == status
    if status == 200:
        assert answer["Content-Type"].startswith("text/plain; version=")
        assert b"# TYPE arena_debates gauge" in answer.content
    else:
        assert answer.json()["code"] == {401: "not_authenticated", 403: "permission_denied"}[status]
    if status == 401:
        assert answer["WWW-Authenticate"] == 'Bearer realm="metrics"'


def test_no_token_is_accepted_while_none_is_set(settings):
    settings.METRICS_TOKEN = ""
    answer = Client().get("/metrics", headers={"Authorization": "Bearer "})
    assert answer.status_code == 401
    answer = Client().get("/metrics", headers={"Authorization": "Bearer x"})
    assert answer.status_code == 401


def test_metrics_public_opens_them_to_anyone(settings):
    settings.METRICS_PUBLIC = True
    assert Client().get("/metrics").status_code == 200
