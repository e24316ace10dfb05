"""Trading in the admin: a trader's fixed fields, the executions' list."""

from decimal import Decimal

import pytest

from tests.traders.factories import ExecutionFactory, TraderFactory


@pytest.mark.django_db
def test_a_traders_exchange_starting_balance_and_market_source_are_fixed_once_it_exists(
    client, staff_user
):
    # given a paper trader on the bundled dataset
    trader = TraderFactory(exchange="paper", market_source="dataset")
    client.force_login(staff_user)
    # when an operator opens it, and the form to add one
    change = client.get(f"/admin/traders/trader/{trader.pk}/change/").content.decode()
    add = client.get("/admin/traders/trader/add/").content.decode()
    # then the three are shown but cannot be changed, as the API refuses to; a new
    # trader sets them
    for name in ("exchange", "starting_balance", "market_source"):
        assert f'name="{name}"' not in change
        assert '<div class="readonly">' in change
        assert f'name="{name}"' in add


@pytest.mark.django_db
def test_the_executions_list_shows_prices_quantities_and_fees_without_trailing_zeros(
    client, staff_user
):
    # given executions filled at 57,970.9 and at 133.64, and one not filled
    ExecutionFactory(
        status="filled",
        filled_quantity=Decimal("0.002"),
        average_price=Decimal("57970.9"),
        fee=Decimal("0.0579709"),
    )
    ExecutionFactory(
        status="filled",
        filled_quantity=Decimal("1.5"),
        average_price=Decimal("133.64"),
        fee=Decimal("0.2"),
    )
    ExecutionFactory(status="failed", filled_quantity=Decimal("0"), average_price=None)
    client.force_login(staff_user)
    # when an operator opens the list
    body = client.get("/admin/traders/execution/").content.decode()
    # then each figure is shown as it is, with no trailing zeros
    for cell in (
        '<td class="field-average_price">57970.9</td>',
        '<td class="field-average_price">133.64</td>',
        '<td class="field-average_price">-</td>',
        '<td class="field-filled_quantity">0.002</td>',
        '<td class="field-filled_quantity">1.5</td>',
        '<td class="field-filled_quantity">0</td>',
        '<td class="field-fee">0.0579709</td>',
        '<td class="field-fee">0.2</td>',
    ):
        assert cell in body, cell
    assert "57970.9000000000" not in body and "133.6400000000" not in body
