"""Who may read a debate's stream: its owner and staff; refusals are real statuses."""

from __future__ import annotations

import time
from datetime import datetime

import pytest
from django.core import signing
from django.test import Client
from rest_framework.authtoken.models import Token

from debates.streams import SIGNING_SALT, stream_token_issue, stream_token_user
from tests.debates.factories import DebateFactory
from tests.streams.sse import SSEClient

pytestmark = pytest.mark.django_db(transaction=True)


def stream_path(debate_id: int) -> str:
    return f"/api/debates/{debate_id}/stream"


def assert_refused(response, status: int, code: str) -> None:
    """Assert a JSON error answer, never an event stream."""
    assert response.status_code == status
    assert response["Content-Type"] == "application/json"
    assert response.json()["code"] == code


def test_no_credentials_is_401(user):
    # given a debate
    debate = DebateFactory(owner=user)
    # when nobody in particular asks for its stream
    response = Client().get(stream_path(debate.pk))
    # then it is refused before any stream starts
    assert_refused(response, 401, "not_authenticated")
    assert response["WWW-Authenticate"] == 'Token realm="api"'


@pytest.mark.parametrize("how", ["session", "api_token", "stream_token"])
def test_another_users_stream_is_404(how, user, other_user):
    # given the other user's debate and a debate of the user's own
    theirs = DebateFactory(owner=other_user)
    mine = DebateFactory(owner=user)
    client = Client()
    params, headers = {}, {}
    if how == "session":
        client.force_login(user)
    elif how == "api_token":
        headers["Authorization"] = f"Token {Token.objects.create(user=user).key}"
    # when the user asks for the other user's stream
    if how == "stream_token":
        token = stream_token_issue(user=user, debate_id=mine.pk).token
        response = client.get(stream_path(theirs.pk), {"token": token})
        # (a token is bound to its debate: refused as a credential first)
        assert_refused(response, 401, "authentication_failed")
        return
    response = client.get(stream_path(theirs.pk), params, headers=headers)
    # then it does not exist for them
    assert_refused(response, 404, "not_found")


def test_a_missing_debate_is_404(user):
    client = Client()
    client.force_login(user)
    assert_refused(client.get(stream_path(987654)), 404, "not_found")


def test_a_forged_token_is_401(user):
    # given a token for the user's debate signed with another key
    debate = DebateFactory(owner=user)
    forged = signing.dumps(
        {"user": user.pk, "debate": debate.pk}, key="not-the-secret-key", salt=SIGNING_SALT
    )
    # when it is used, and when a real token is tampered with
    real = stream_token_issue(user=user, debate_id=debate.pk).token
    tampered = real[:-2] + ("AA" if not real.endswith("AA") else "BB")
    # then both are refused as credentials
    for token in (forged, tampered, "garbage"):
        response = Client().get(stream_path(debate.pk), {"token": token})
        assert_refused(response, 401, "authentication_failed")


def test_an_expired_token_is_401(user, settings, monkeypatch):
    # given a token issued longer ago than its lifetime
    debate = DebateFactory(owner=user)
    real_time = time.time
    with monkeypatch.context() as patch:
        patch.setattr(time, "time", lambda: real_time() - settings.SSE_TOKEN_MAX_AGE - 5)
        token = stream_token_issue(user=user, debate_id=debate.pk).token
    # when it is used
    response = Client().get(stream_path(debate.pk), {"token": token})
    # then it is refused, saying why
    assert_refused(response, 401, "authentication_failed")
    assert response.json()["message"] == "The stream token has expired."


def test_a_token_of_a_deactivated_user_is_401(user):
    debate = DebateFactory(owner=user)
    token = stream_token_issue(user=user, debate_id=debate.pk).token
    user.is_active = False
    user.save()
    assert_refused(
        Client().get(stream_path(debate.pk), {"token": token}), 401, "authentication_failed"
    )


def test_a_token_issued_before_a_password_change_is_401(user):
    # given a stream token of the user's
    debate = DebateFactory(owner=user)
    token = stream_token_issue(user=user, debate_id=debate.pk).token
    # when the user's password is changed
    user.set_password("a new and longer passphrase")
    user.save()
    # then the token opens the stream no more, and one issued since does
    response = Client().get(stream_path(debate.pk), {"token": token})
    assert_refused(response, 401, "authentication_failed")
    assert response.json()["message"] == "The stream token is not valid."
    fresh = stream_token_issue(user=user, debate_id=debate.pk).token
    assert stream_token_user(token=fresh, debate_id=debate.pk) == user


def test_a_bad_api_token_is_401(user):
    debate = DebateFactory(owner=user)
    response = Client().get(stream_path(debate.pk), headers={"Authorization": "Token nope"})
    assert_refused(response, 401, "authentication_failed")


def test_a_malformed_last_event_id_is_400(user):
    debate = DebateFactory(owner=user)
    client = Client()
    client.force_login(user)
    response = client.get(stream_path(debate.pk), headers={"Last-Event-ID": "no-number"})
    assert_refused(response, 400, "validation_error")
    assert list(response.json()["fields"]) == ["Last-Event-ID"]


def test_the_stream_token_endpoint_issues_a_token_for_the_owner_only(
    user, other_user, api_client, settings
):
    # given the user's debate and another user's
    mine = DebateFactory(owner=user)
    theirs = DebateFactory(owner=other_user)
    # when the user asks for tokens
    before = time.time()
    response = api_client.post(f"/api/debates/{mine.pk}/stream-token")
    refused = api_client.post(f"/api/debates/{theirs.pk}/stream-token")
    anonymous = Client().post(f"/api/debates/{mine.pk}/stream-token")
    # then only their own debate gets one, valid for SSE_TOKEN_MAX_AGE seconds
    assert response.status_code == 200
    body = response.json()
    assert set(body) == {"token", "expires_at"}
    payload = signing.loads(body["token"], salt=SIGNING_SALT)
    assert payload == {"user": user.pk, "password": payload["password"], "debate": mine.pk}
    # (bound to the password by a keyed digest, which carries nothing of its hash)
    assert len(payload["password"]) == 32
    assert user.password.rsplit("$", 1)[-1] not in body["token"]
    expires = datetime.fromisoformat(body["expires_at"]).timestamp()
    assert before - 1 + settings.SSE_TOKEN_MAX_AGE <= expires <= time.time() + 300
    assert refused.status_code == 404
    assert anonymous.status_code == 401


@pytest.mark.slow
def test_the_owner_token_api_token_session_and_staff_open_the_stream_on_uvicorn(
    web, user, staff_user, other_user, stream_token, api_token
):
    # given a debate served by a uvicorn web process
    debate = DebateFactory(owner=user)
    server = web()
    url = server.stream_url(debate.pk)
    staff = Client()
    staff.force_login(staff_user)
    owner = Client()
    owner.force_login(user)
    stranger = Client()
    stranger.force_login(other_user)
    cookie = "sessionid={}"
    # when each kind of credential is used
    clients = {
        "owner token in the query string": SSEClient(
            url, params={"token": stream_token(debate.pk)}
        ),
        "owner API token": SSEClient(url, headers={"Authorization": f"Token {api_token}"}),
        "owner session": SSEClient(
            url, headers={"Cookie": cookie.format(owner.cookies["sessionid"].value)}
        ),
        "staff session": SSEClient(
            url, headers={"Cookie": cookie.format(staff.cookies["sessionid"].value)}
        ),
    }
    refused = {
        "nothing": SSEClient(url),
        "another user's session": SSEClient(
            url, headers={"Cookie": cookie.format(stranger.cookies["sessionid"].value)}
        ),
    }
    try:
        # then the owner and staff get the stream, starting with initial
        for name, client in clients.items():
            assert client.wait_status() == 200, name
            client.wait_for_type("initial")
            assert client.received()[0].json["id"] == debate.pk, name
        # and the others a plain error status, no stream
        assert refused["nothing"].wait_status() == 401
        assert refused["another user's session"].wait_status() == 404
        for client in refused.values():
            client.wait(lambda c: c.finished, what="the end of the answer")
            assert client.events == []
    finally:
        for client in [*clients.values(), *refused.values()]:
            client.close()
