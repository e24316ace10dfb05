"""A trader's connection check: one line saying what is wrong with the account, or what
it is, through the API, the admin and ``manage.py check_venue``."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from tests.traders.conftest import API_KEY, API_SECRET
from tests.traders.factories import TraderFactory

pytestmark = pytest.mark.django_db

FINE = (
    "binanceusdm: key accepted, 10,000.00 USDT available, {mode}; BTCUSDT takes orders from "
    "100.00 USDT."
)


def test_a_working_account_is_described_in_one_line(api_client, binance_trader, fake_exchange):
    # when the owner checks a working one-way account, then a hedge-mode one
    first = api_client.post(f"/api/traders/{binance_trader.pk}/check")
    fake_exchange.hedge_mode = True
    second = api_client.post(f"/api/traders/{binance_trader.pk}/check")
    # then each answer says the key works, the balance, the mode and the minimum order
    assert (first.status_code, first.json()) == (
        200,
        {"ok": True, "message": FINE.format(mode="one-way mode")},
    )
    assert second.json()["message"] == FINE.format(mode="hedge mode")
    # and nothing was placed
    assert fake_exchange.order_requests() == []


def test_a_wrong_key_is_named_and_never_shown(user, api_client, fake_exchange):
    # given a trader whose key the exchange does not know
    wrong = TraderFactory(
        owner=user, exchange="binanceusdm", api_key="wrong-key-123", api_secret=API_SECRET
    )
    # when it is checked
    answer = api_client.post(f"/api/traders/{wrong.pk}/check").json()
    # then the answer says the key was refused, with the exchange's reason, not the key
    assert answer["ok"] is False
    assert answer["message"].startswith("binanceusdm refused the key: balance: ")
    assert "-2015" in answer["message"]
    assert "wrong-key-123" not in answer["message"] and API_SECRET not in answer["message"]


def test_another_users_trader_is_not_found(api_client, fake_exchange):
    other = TraderFactory(exchange="binanceusdm", api_key=API_KEY, api_secret=API_SECRET)
    assert api_client.post(f"/api/traders/{other.pk}/check").status_code == 404


def test_the_command_prints_the_line_or_fails_with_it(user, binance_trader, fake_exchange, capsys):
    call_command("check_venue", "--trader", str(binance_trader.pk))
    assert capsys.readouterr().out.strip() == FINE.format(mode="one-way mode")
    wrong = TraderFactory(
        owner=user, exchange="binanceusdm", api_key="bad-key", api_secret="bad-secret"
    )
    with pytest.raises(CommandError, match=r"^binanceusdm refused the key: "):
        call_command("check_venue", "--trader", str(wrong.pk))


def test_the_admin_action_reports_each_trader(operator, binance_trader, fake_exchange):
    page = operator.post(
        "/admin/traders/trader/",
        {"action": "check_connection", "_selected_action": [binance_trader.pk]},
        follow=True,
    )
    assert FINE.format(mode="one-way mode") in page.content.decode()
