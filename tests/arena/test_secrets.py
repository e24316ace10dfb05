"""Secrets are encrypted at rest and never shown in the admin."""

import pytest
from django.db import connection

from arena.fields import mask_secret
from tests.debates.factories import AIModelFactory
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
        {
            "owner": staff_user.pk,
            "name": "Renamed",
            "provider": "openai",
            "model_name": "gpt-4.1",
            "base_url": "",
            "api_key": "",
            "temperature": "0.5",
            "max_tokens": "1000",
            "timeout_seconds": "60",
            "output_mode": "tagged",
            "enabled": "on",
        },
    )
    # then the name changed and the key did not
    assert response.status_code == 302
    model.refresh_from_db()
    assert (model.name, model.api_key) == ("Renamed", KEY)
