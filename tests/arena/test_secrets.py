"""Secrets are encrypted at rest and never shown in the admin."""

import pytest
from django.contrib.admin.models import DELETION, LogEntry
from django.db import connection
from rest_framework.authtoken.models import Token

from arena.auth import token_issue
from arena.fields import mask_secret
from tests.arena.conftest import ai_model_admin_form
from tests.debates.factories import AIModelFactory
from tests.factories import UserFactory
from tests.traders.factories import TraderFactory

KEY = "sk-live-1234567890abcdef"
SECRET = "exchange-secret-zyxwvutsrqp"


@pytest.mark.django_db
def test_model_api_key_is_stored_encrypted_and_read_back():
    # given a model saved with a key
    model = AIModelFactory(provider="openai", api_key=KEY)
    # when the raw column is read
    with connection.cursor() as cursor:
        cursor.execute("SELECT api_key FROM debates_aimodel WHERE id = %s", [model.pk])
        (stored,) = cursor.fetchone()
    # then it holds a token, not the key, and the ORM decrypts it
    assert KEY not in stored
    assert stored.startswith("fernet:")
    model.refresh_from_db()
    assert model.api_key == KEY


@pytest.mark.django_db
def test_trader_credentials_are_stored_encrypted():
    trader = TraderFactory(exchange="binanceusdm", api_key=KEY, api_secret=SECRET)
    with connection.cursor() as cursor:
        cursor.execute("SELECT api_key, api_secret FROM traders_trader WHERE id = %s", [trader.pk])
        row = cursor.fetchone()
    assert KEY not in row[0] and SECRET not in row[1]
    trader.refresh_from_db()
    assert (trader.api_key, trader.api_secret) == (KEY, SECRET)


@pytest.mark.parametrize(
    ("secret", "mask"),
    [
        ("", ""),
        ("abc", "****"),
        ("abcd", "****"),
        ("short", "****"),
        ("abcdefghi", "****"),
        ("abcdefghijklmno", "****"),
        ("abcdefghijklmnop", "...mnop"),
        (KEY, "...cdef"),
        ("sk-abcdefghijklmnopqrstuvwx", "...uvwx"),
        ("sk-abcdefghijklmnopqrstuvwxy", "sk-...vwxy"),
        ("ключ-abcdefghijklmnopqrstuvwxyz", "...wxyz"),
    ],
)
def test_mask_shows_the_ends_of_a_long_secret_only(secret, mask):
    assert mask_secret(secret) == mask


def test_mask_never_shows_more_than_a_quarter_of_a_secret():
    # given secrets of every length up to 64 characters
    for length in range(1, 65):
        secret = "".join(chr(ord("a") + i % 26) for i in range(length))
        # when each is masked
        mask = mask_secret(secret)
        # then the characters of the secret it shows are at most a quarter of them
        shown = len(mask) - 3 if "..." in mask else 0
        assert 4 * shown <= length, (length, mask)


@pytest.mark.django_db
def test_admin_pages_never_show_a_secret(client, staff_user):
    # given a model and a trader with secrets
    model = AIModelFactory(provider="openai", api_key=KEY)
    trader = TraderFactory(exchange="binanceusdm", api_key=KEY, api_secret=SECRET)
    client.force_login(staff_user)
    # when an operator opens their lists and pages
    pages = [
        "/admin/debates/aimodel/",
        f"/admin/debates/aimodel/{model.pk}/change/",
        "/admin/traders/trader/",
        f"/admin/traders/trader/{trader.pk}/change/",
    ]
    for url in pages:
        body = client.get(url).content.decode()
        # then neither secret appears
        assert KEY not in body, url
        assert SECRET not in body, url


@pytest.mark.django_db
@pytest.mark.parametrize("url", ["/admin/debates/aimodel/", "/admin/traders/trader/"])
def test_admin_lists_show_a_short_key_as_the_placeholder(client, staff_user, url):
    # given a model and a trader whose key is short
    AIModelFactory(provider="openai", api_key="abcdefghi")
    TraderFactory(exchange="binanceusdm", api_key="abcdefghi", api_secret=SECRET)
    client.force_login(staff_user)
    # when an operator opens their list
    body = client.get(url).content.decode()
    # then the key column shows the placeholder and no part of the key
    assert '<td class="field-masked_key">****</td>' in body
    assert "fghi" not in body and "abc..." not in body


@pytest.mark.django_db
def test_admin_blank_secret_keeps_the_stored_one(client, staff_user):
    # given a stored key
    model = AIModelFactory(provider="openai", api_key=KEY, owner=staff_user)
    client.force_login(staff_user)
    # when the page is saved with the key field left blank
    response = client.post(
        f"/admin/debates/aimodel/{model.pk}/change/",
        ai_model_admin_form(
            staff_user, name="Renamed", provider="openai", model_name="gpt-4.1", base_url=""
        ),
    )
    # then the name changed and the key did not
    assert response.status_code == 302
    model.refresh_from_db()
    assert (model.name, model.api_key) == ("Renamed", KEY)


@pytest.mark.django_db
def test_the_admin_of_api_tokens_never_shows_a_key(client, staff_user):
    # given a user with an API token
    holder = UserFactory(username="alice")
    token = token_issue(user=holder)
    client.force_login(staff_user)
    # when an operator opens the tokens' list
    listing = client.get("/admin/authtoken/tokenproxy/")
    # then it shows the user and the key masked, never the key (not in a link either)
    assert listing.status_code == 200
    body = listing.content.decode()
    assert token.key not in body
    assert "alice" in body and f'<td class="field-masked_key">{mask_secret(token.key)}</td>' in body
    # and no page of one token shows it: none is changed, its revoke page names the user
    for url in (
        f"/admin/authtoken/tokenproxy/{holder.pk}/change/",
        f"/admin/authtoken/tokenproxy/{token.key}/change/",
    ):
        assert client.get(url).status_code == 404, url
    revoke = client.get(f"/admin/authtoken/tokenproxy/{holder.pk}/revoke/")
    assert revoke.status_code == 200
    assert token.key not in revoke.content.decode()
    assert f"alice ({mask_secret(token.key)})" in revoke.content.decode()


@pytest.mark.django_db
def test_an_operator_revokes_a_token_in_the_admin_without_its_key_being_logged(client, staff_user):
    # given two users with API tokens
    holder, other = UserFactory(username="alice"), UserFactory(username="bob")
    token, kept = token_issue(user=holder), token_issue(user=other)
    client.force_login(staff_user)
    # when an operator revokes alice's from its row
    response = client.post(f"/admin/authtoken/tokenproxy/{holder.pk}/revoke/", follow=True)
    # then her token is gone, bob's is kept, and the page says so without the key
    assert response.status_code == 200
    assert list(Token.objects.values_list("key", flat=True)) == [kept.key]
    body = response.content.decode()
    assert f"The API token of alice ({mask_secret(token.key)}) was revoked." in body
    assert token.key not in body and kept.key not in body
    # and the admin's log records it by the user, the key masked
    entry = LogEntry.objects.get()
    assert (entry.object_id, entry.object_repr, entry.action_flag) == (
        str(holder.pk),
        f"API token of alice ({mask_secret(token.key)})",
        DELETION,
    )
    assert token.key not in client.get("/admin/").content.decode()


@pytest.mark.django_db
def test_the_admin_of_api_tokens_is_closed_to_non_staff(client):
    holder = UserFactory()
    token_issue(user=holder)
    client.force_login(holder)
    response = client.post(f"/admin/authtoken/tokenproxy/{holder.pk}/revoke/")
    assert response.status_code == 302 and response["Location"].startswith("/admin/login/")
    assert Token.objects.filter(user=holder).exists()


@pytest.mark.django_db
def test_deleting_a_user_in_the_admin_names_their_token_by_its_masked_key(client, staff_user):
    # given a user with an API token
    holder = UserFactory(username="alice")
    token = token_issue(user=holder)
    client.force_login(staff_user)
    # when an operator opens the page that confirms the user's deletion
    body = client.get(f"/admin/auth/user/{holder.pk}/delete/").content.decode()
    # then the token is among what goes with the user, by its masked key only
    assert f"<li>Token: {mask_secret(token.key)}</li>" in body
    assert token.key not in body
