"""Authentication: the token endpoint, token and session clients, and that every endpoint
but the schema and its docs page refuses an anonymous client."""

import logging
from datetime import UTC, datetime, timedelta

import pytest
import redis
import time_machine
from axes.models import AccessAttempt
from django.conf import settings
from django.contrib.auth.hashers import make_password
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from rest_framework.authtoken.models import Token

from arena.auth import RedactQueryTokens
from tests.api.conftest import refusal
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"

# Every operation of the API, with an id that need not exist: authentication comes first.
OPERATIONS = [
    ("post", "/api/auth/token/revoke"),
    ("get", "/api/debates"),
    ("post", "/api/debates"),
    ("get", "/api/debates/personalities"),
    ("get", "/api/debates/1"),
    ("delete", "/api/debates/1"),
    ("post", "/api/debates/1/start"),
    ("post", "/api/debates/1/cancel"),
    ("post", "/api/debates/1/retry"),
    ("post", "/api/debates/1/execute"),
    ("get", "/api/debates/1/messages"),
    ("get", "/api/debates/1/votes"),
    ("get", "/api/ai-models"),
    ("post", "/api/ai-models"),
    ("get", "/api/ai-models/1"),
    ("patch", "/api/ai-models/1"),
    ("delete", "/api/ai-models/1"),
    ("get", "/api/strategies"),
    ("post", "/api/strategies"),
    ("get", "/api/strategies/1"),
    ("patch", "/api/strategies/1"),
    ("delete", "/api/strategies/1"),
    ("get", "/api/traders"),
    ("post", "/api/traders"),
    ("get", "/api/traders/1"),
    ("patch", "/api/traders/1"),
    ("delete", "/api/traders/1"),
    ("get", "/api/traders/1/positions"),
    ("get", "/api/traders/1/orders"),
    ("get", "/api/traders/1/executions"),
    ("get", "/api/schedules"),
    ("post", "/api/schedules"),
    ("get", "/api/schedules/1"),
    ("patch", "/api/schedules/1"),
    ("delete", "/api/schedules/1"),
]


def test_token_endpoint_exchanges_username_and_password_for_the_users_token(anon):
    # given a user with a password
    user = UserFactory(username="alice")
    # when the client asks for a token
    response = anon.post(
        "/api/auth/token", {"username": "alice", "password": PASSWORD}, format="json"
    )
    # then it gets the user's token, the same one on every request, and its expiry
    assert response.status_code == 200
    token = Token.objects.get(user=user)
    assert response.json() == {
        "token": token.key,
        "expires_at": (token.created + timedelta(days=30)).isoformat().replace("+00:00", "Z"),
    }
    again = anon.post("/api/auth/token", {"username": "alice", "password": PASSWORD}, format="json")
    assert again.json() == response.json()


@pytest.mark.parametrize(
    ("body", "active"),
    [
        ({"username": "alice", "password": "wrong"}, True),
        ({"username": "nobody", "password": PASSWORD}, True),
        ({"username": "alice", "password": PASSWORD}, False),
    ],
    ids=["wrong-password", "unknown-user", "inactive-user"],
)
def test_token_endpoint_refuses_bad_credentials(anon, body, active):
    # given a user, active or not
    UserFactory(username="alice", is_active=active)
    # when the client gives credentials that do not log in
    response = anon.post("/api/auth/token", body, format="json")
    # then it is refused as unauthenticated, in the error shape, and no token was made
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Token"
    assert response.json() == {
        "code": "invalid_credentials",
        "message": "Unable to log in with the given username and password.",
        "fields": {},
    }
    assert Token.objects.count() == 0


def test_token_endpoint_names_missing_fields(anon):
    response = anon.post("/api/auth/token", {"username": 7}, format="json")
    assert response.status_code == 400
    assert response.json() == refusal(
        {"username": ["Must be a string."], "password": ["This field is required."]}
    )


def test_a_token_authenticates_a_client(client_for, user):
    # given the user's token
    token = Token.objects.create(user=user)
    client = client_for()
    client.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    # when the client lists debates
    response = client.get("/api/debates")
    # then it is let in
    assert response.status_code == 200


def test_a_session_authenticates_a_client(client_for, user):
    client = client_for()
    client.force_login(user)
    assert client.get("/api/strategies").status_code == 200


def test_an_unknown_token_is_refused(anon):
    anon.credentials(HTTP_AUTHORIZATION="Token 0123456789abcdef0123456789abcdef01234567")
    response = anon.get("/api/debates")
    assert response.status_code == 401
    assert response.json() == {
        "code": "authentication_failed",
        "message": "Invalid token.",
        "fields": {},
    }


@pytest.mark.parametrize(("method", "path"), OPERATIONS)
def test_every_endpoint_refuses_an_anonymous_client(anon, method, path):
    response = getattr(anon, method)(path, {}, format="json")
    assert response.status_code == 401
    assert response.json() == {
        "code": "not_authenticated",
        "message": "Authentication credentials were not provided.",
        "fields": {},
    }
    assert response["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize("path", ["/api/schema/", "/api/docs/"])
def test_schema_and_docs_are_open_to_anyone(anon, path):
    assert anon.get(path).status_code == 200


# --- Throttled logins --------------------------------------------------------------------

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)
LIMIT = 10  # failures per user name and address (AXES_FAILURE_LIMIT)
COOL_OFF_S = 15 * 60


def _token_try(client, username: str, password: str, address: str = "127.0.0.1"):
    return client.post(
        "/api/auth/token",
        {"username": username, "password": password},
        format="json",
        REMOTE_ADDR=address,
    )


def test_the_token_endpoint_locks_a_user_and_address_out_after_ten_failures(anon):
    # given a user, and a clock that stands still
    UserFactory(username="alice")
    with time_machine.travel(NOW, tick=False) as clock:
        # when ten wrong passwords come from one address
        statuses = [_token_try(anon, "alice", "wrong").status_code for _ in range(LIMIT)]
        # then the tenth is refused as too many, and so is the right password after it
        assert statuses == [401] * (LIMIT - 1) + [429]
        locked = _token_try(anon, "alice", PASSWORD)
        assert locked.status_code == 429
        assert locked["Retry-After"] == str(COOL_OFF_S)
        assert locked.json() == {
            "code": "too_many_attempts",
            "message": "Too many failed logins; try again in 15 minutes.",
            "fields": {},
        }
        # and the same user from another address, another user from this one, are let in
        assert _token_try(anon, "alice", PASSWORD, address="10.9.8.7").status_code == 200
        UserFactory(username="bob")
        assert _token_try(anon, "bob", PASSWORD).status_code == 200
        # until the cool-off has passed since the last try
        clock.shift(timedelta(seconds=COOL_OFF_S - 1))
        assert _token_try(anon, "alice", PASSWORD).status_code == 429
        clock.shift(timedelta(seconds=COOL_OFF_S + 1))
        assert _token_try(anon, "alice", PASSWORD).status_code == 200


def test_failures_older_than_the_cool_off_do_not_count(anon):
    UserFactory(username="alice")
    with time_machine.travel(NOW, tick=False) as clock:
        for _ in range(LIMIT - 1):
            _token_try(anon, "alice", "wrong")
        clock.shift(timedelta(seconds=COOL_OFF_S + 1))
        assert _token_try(anon, "alice", "wrong").status_code == 401
        assert _token_try(anon, "alice", PASSWORD).status_code == 200


USER_LIMIT = 50  # failures per user name, from any addresses (LOGIN_USER_FAILURE_LIMIT)


def test_the_login_limits_are_the_documented_ones():
    assert (settings.AXES_FAILURE_LIMIT, settings.LOGIN_USER_FAILURE_LIMIT) == (LIMIT, USER_LIMIT)


def test_a_user_name_is_locked_out_after_fifty_failures_from_any_addresses(anon):
    # given a user, and a clock that stands still
    UserFactory(username="alice")
    with time_machine.travel(NOW, tick=False) as clock:
        # when fifty wrong passwords come, each from another address
        statuses = [
            _token_try(anon, "alice", "wrong", address=f"10.0.{i // 250}.{i % 250 + 1}").status_code
            for i in range(USER_LIMIT)
        ]
        # then the fiftieth is refused as too many, and so is the right password from
        # an address never seen
        assert statuses == [401] * (USER_LIMIT - 1) + [429]
        locked = _token_try(anon, "alice", PASSWORD, address="192.0.2.1")
        assert locked.status_code == 429
        assert locked["Retry-After"] == str(COOL_OFF_S)
        # and another user name is let in from those addresses
        UserFactory(username="bob")
        assert _token_try(anon, "bob", PASSWORD, address="10.0.0.1").status_code == 200
        # until the cool-off has passed since the last try
        clock.shift(timedelta(seconds=COOL_OFF_S + 1))
        assert _token_try(anon, "alice", PASSWORD, address="192.0.2.1").status_code == 200


def test_the_lockout_counts_the_servers_address_never_x_forwarded_for(anon):
    # given a user name locked out from the address the server saw
    UserFactory(username="alice")
    with time_machine.travel(NOW, tick=False):
        for _ in range(LIMIT):
            _token_try(anon, "alice", "wrong")
        # when the right password comes from there, claiming another client
        response = anon.post(
            "/api/auth/token",
            {"username": "alice", "password": PASSWORD},
            format="json",
            REMOTE_ADDR="127.0.0.1",
            HTTP_X_FORWARDED_FOR="203.0.113.9",
        )
    # then it is still locked out: the header is the ASGI server's to believe or not
    assert response.status_code == 429
    assert set(AccessAttempt.objects.values_list("ip_address", flat=True)) == {"127.0.0.1"}


@pytest.mark.parametrize(
    ("path", "fields"),
    [("/login/", {}), ("/admin/login/", {"next": "/admin/"})],
    ids=["arena", "admin"],
)
def test_the_login_pages_lock_out_after_ten_failures(path, fields):
    # given a staff user, and a clock that stands still
    UserFactory(username="alice", is_staff=True)
    client = Client()
    with time_machine.travel(NOW, tick=False):
        # when ten wrong passwords are sent through the page's form
        statuses = [
            client.post(path, {"username": "alice", "password": "wrong", **fields}).status_code
            for _ in range(LIMIT)
        ]
        locked = client.post(path, {"username": "alice", "password": PASSWORD, **fields})
    # then the form answers the first ones, and a lock-out page from the tenth on
    assert statuses == [200] * (LIMIT - 1) + [429]
    assert locked.status_code == 429
    assert locked["Retry-After"] == str(COOL_OFF_S)
    assert b"Too many failed logins; try again in 15 minutes." in locked.content


@pytest.mark.parametrize(
    ("path", "fields"),
    [("/login/", {}), ("/admin/login/", {"next": "/admin/"})],
    ids=["arena", "admin"],
)
def test_the_login_pages_refuse_a_user_name_too_long_as_an_error_of_the_field(path, fields):
    # given a user name of 5,000 characters, over the 150 a user name may have (and the
    # 255 the table of failed logins holds)
    username = "é" * 5000
    # when it is sent through the page's form
    response = Client().post(path, {"username": username, "password": "wrong", **fields})
    # then the form answers with the error under the user name, and no failure is recorded
    assert response.status_code == 200
    assert response.context["form"].errors == {
        "username": ["Ensure this value has at most 150 characters (it has 5000)."]
    }
    assert "_auth_user_id" not in response.wsgi_request.session
    assert not AccessAttempt.objects.exists()


# --- Expiring and revocable tokens -------------------------------------------------------


def test_a_token_expires_thirty_days_after_it_was_issued(anon):
    # given a token issued now
    UserFactory(username="alice")
    with time_machine.travel(NOW, tick=False) as clock:
        key = _token_try(anon, "alice", PASSWORD).json()["token"]
        anon.credentials(HTTP_AUTHORIZATION=f"Token {key}")
        # when it is used just before and just after 30 days
        clock.shift(timedelta(days=30, seconds=-1))
        before = anon.get("/api/debates")
        clock.shift(timedelta(seconds=1))
        after = anon.get("/api/debates")
        anon.credentials()
        renewed = _token_try(anon, "alice", PASSWORD).json()
    # then it opens the API until then, and is refused from then on
    assert before.status_code == 200
    assert after.status_code == 401
    assert after.json() == {
        "code": "authentication_failed",
        "message": "The token has expired; ask POST /api/auth/token for a new one.",
        "fields": {},
    }
    # and asking for a token again gives a new one
    assert renewed["token"] != key
    assert renewed["expires_at"] == "2026-04-30T12:00:00Z"
    assert list(Token.objects.values_list("key", flat=True)) == [renewed["token"]]


def test_an_expired_token_does_not_open_a_stream(anon, user):
    token = Token.objects.create(user=user)
    Token.objects.filter(pk=token.pk).update(created=token.created - timedelta(days=31))
    response = anon.get("/api/debates/1/stream", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 401
    assert response.json()["code"] == "authentication_failed"


def test_revoke_deletes_the_token(anon, user):
    # given the user's token
    token = Token.objects.create(user=user)
    anon.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    # when it is revoked
    response = anon.post("/api/auth/token/revoke")
    # then it is gone and opens nothing any more
    assert response.status_code == 204
    assert Token.objects.count() == 0
    assert anon.get("/api/debates").status_code == 401


def test_revoke_needs_authentication(anon, user):
    Token.objects.create(user=user)
    response = anon.post("/api/auth/token/revoke")
    assert response.status_code == 401
    assert Token.objects.count() == 1


NEW_PASSWORD = "a new and longer passphrase"


def _set_password(user, operator) -> None:
    user.set_password(NEW_PASSWORD)
    user.save()


def _admin_password_form(user, operator) -> None:
    response = operator.post(
        f"/admin/auth/user/{user.pk}/password/",
        {"password1": NEW_PASSWORD, "password2": NEW_PASSWORD},
    )
    assert response.status_code == 302


def _unusable_password(user, operator) -> None:
    user.set_unusable_password()
    user.save()


def _hash_written_by_hand(user, operator) -> None:
    user.password = make_password(NEW_PASSWORD)
    user.save()


@pytest.mark.parametrize(
    "change",
    [_set_password, _admin_password_form, _unusable_password, _hash_written_by_hand],
    ids=["set_password", "admin", "unusable", "hash-by-hand"],
)
def test_a_password_change_revokes_the_users_api_token(anon, user, operator, change):
    # given a token that opened the API once (now in the cache)
    token = Token.objects.create(user=user)
    anon.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert anon.get("/api/debates").status_code == 200
    # when the user's password is changed
    old_hash = user.password
    change(user, operator)
    user.refresh_from_db()
    assert user.password != old_hash
    # then the token is gone and opens nothing any more
    response = anon.get("/api/debates")
    assert response.status_code == 401
    assert response.json()["message"] == "Invalid token."
    assert not Token.objects.filter(user=user).exists()


def test_a_deactivation_revokes_the_users_api_token_for_good(anon, user):
    # given a token that opened the API once
    token = Token.objects.create(user=user)
    anon.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert anon.get("/api/debates").status_code == 200
    # when the user is deactivated, then active again
    user.is_active = False
    user.save()
    refused = anon.get("/api/debates")
    user.is_active = True
    user.save()
    # then the token was refused at once, and stays refused: it was revoked
    assert refused.status_code == 401
    assert anon.get("/api/debates").status_code == 401
    assert not Token.objects.filter(user=user).exists()


def test_a_save_that_changes_neither_password_nor_activity_keeps_the_token(anon, user):
    # given a token that opened the API once
    token = Token.objects.create(user=user)
    anon.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert anon.get("/api/debates").status_code == 200
    # when the user's other fields are saved
    user.email = "alice@example.com"
    user.save()
    # then the token still opens the API
    assert anon.get("/api/debates").status_code == 200
    assert Token.objects.get(user=user) == token


def test_a_hash_upgraded_at_a_login_keeps_the_token(anon):
    # given a user whose stored hash Django upgrades at the next login (a short salt),
    # and the user's token
    user = UserFactory(username="alice")
    type(user).objects.filter(pk=user.pk).update(password=make_password(PASSWORD, salt="short"))
    key = Token.objects.create(user=user).key
    # when the user logs in (the token endpoint checks the password)
    again = _token_try(anon, "alice", PASSWORD)
    # then the hash was upgraded, and the token is the same and still opens the API
    user.refresh_from_db()
    assert "$short$" not in user.password
    assert again.json()["token"] == key
    anon.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert anon.get("/api/debates").status_code == 200


def _queries_of(client, path: str) -> tuple[int, int]:
    with CaptureQueriesContext(connection) as captured:
        response = client.get(path)
    return response.status_code, len(captured.captured_queries)


def test_a_token_read_once_authenticates_from_the_cache(anon, user):
    # given a token that opened the API once
    token = Token.objects.create(user=user)
    anon.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert anon.get("/api/debates/personalities").status_code == 200
    # when it is used again, then it takes no query
    assert _queries_of(anon, "/api/debates/personalities") == (200, 0)


def test_a_cached_token_of_a_user_deactivated_is_refused_at_once(anon, user):
    # given a token that opened the API once (now in the cache)
    anon.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    assert anon.get("/api/debates").status_code == 200
    # when its user is deactivated
    user.is_active = False
    user.save()
    # then the token opens nothing any more
    assert anon.get("/api/debates").status_code == 401


def test_a_deleted_users_cached_token_is_refused_at_once(anon, user):
    anon.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    assert anon.get("/api/debates").status_code == 200
    user.delete()
    assert anon.get("/api/debates").status_code == 401


def test_after_a_change_a_token_is_read_from_the_database_not_kept(anon, user):
    # given a cached token whose user was then saved (the mark of a change)
    anon.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    assert anon.get("/api/debates/personalities").status_code == 200
    user.save()
    # when it is used twice, then each use reads it from the database: a read that
    # raced the change does not store what it read
    path = "/api/debates/personalities"
    assert [_queries_of(anon, path), _queries_of(anon, path)] == [(200, 1), (200, 1)]


def test_no_cache_key_names_a_token(anon, user):
    token = Token.objects.create(user=user)
    anon.credentials(HTTP_AUTHORIZATION=f"Token {token.key}")
    assert anon.get("/api/debates/personalities").status_code == 200
    keys = redis.Redis.from_url(settings.REDIS_URL).keys("*")
    assert keys and not [key for key in keys if token.key.encode() in key]


def test_the_cache_holds_no_password_hash(anon, user):
    # given a token that opened the API once (now in the cache)
    anon.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    assert anon.get("/api/debates/personalities").status_code == 200
    # then no value in the cache holds the user's password hash
    store = redis.Redis.from_url(settings.REDIS_URL)
    values = [store.get(key) for key in store.keys("*") if store.type(key) == b"string"]
    assert values and not [value for value in values if user.password.encode() in value]


# --- Stream tokens out of access logs ----------------------------------------------------


@pytest.mark.parametrize(
    ("path", "logged"),
    [
        (
            "/api/debates/7/stream?token=eyJ1c2VyIjo0fQ:1v:abc",
            "/api/debates/7/stream?token=[redacted]",
        ),
        (
            "/api/debates/7/stream?lastEventId=debate-7:3&token=abc.def",
            "/api/debates/7/stream?lastEventId=debate-7:3&token=[redacted]",
        ),
        ("/api/debates?page=2", "/api/debates?page=2"),
    ],
)
def test_access_log_lines_carry_no_stream_token(path, logged):
    # given an access log record as uvicorn writes it
    record = logging.LogRecord(
        "uvicorn.access",
        logging.INFO,
        __file__,
        1,
        '%s - "%s %s HTTP/%s" %d',
        ("127.0.0.1:5000", "GET", path, "1.1", 200),
        None,
    )
    # when it passes the filter
    RedactQueryTokens().filter(record)
    # then the token is masked
    assert record.getMessage() == f'127.0.0.1:5000 - "GET {logged} HTTP/1.1" 200'
