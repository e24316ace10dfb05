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


def test_empty_secret_stays_empty_and_mask_hides_all_but_the_end():
    assert mask_secret("") == ""
    assert mask_secret(KEY) == "sk-...cdef"
    assert mask_secret("short") == "...rt"


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
