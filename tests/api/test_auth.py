"""Authentication: the token endpoint, token and session clients, and that every endpoint
but the schema and its docs page refuses an anonymous client."""

import pytest
from rest_framework.authtoken.models import Token

from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

PASSWORD = "correct horse battery staple"

# Every operation of the API, with an id that need not exist: authentication comes first.
OPERATIONS = [
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
    # then it gets the user's token, the same one on every request
    assert response.status_code == 200
    assert response.json() == {"token": Token.objects.get(user=user).key}
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
    # then it is refused, and no token was made
    assert response.status_code == 400
    assert response.json() == {
        "code": "invalid_credentials",
        "message": "Unable to log in with the given username and password.",
        "fields": {},
    }
    assert Token.objects.count() == 0


def test_token_endpoint_names_missing_fields(anon):
    response = anon.post("/api/auth/token", {"username": 7}, format="json")
    assert response.status_code == 400
    assert response.json() == {
        "code": "validation_error",
        "message": "Invalid input.",
        "fields": {"username": ["Must be a string."], "password": ["This field is required."]},
    }


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
