"""Backtests in the admin: the list with status, progress and headline returns; each
backtest read-only, its metrics per rule shown."""

from __future__ import annotations

import pytest

from tests.api.test_backtests import make

METRICS = {"final_equity": 1010.0, "total_return": 0.01, "max_drawdown": 0.02, "sharpe": 1.5}
FLAT = {"final_equity": 1000.0, "total_return": 0.0, "max_drawdown": 0.0, "sharpe": None}
REPORT = {
    "rules": [
        {"key": "debate", "label": "Debate consensus", "metrics": {**METRICS, "trades": 3}},
        {"key": "flat", "label": "Flat (always wait)", "metrics": {**FLAT, "trades": 0}},
    ]
}

pytestmark = pytest.mark.django_db


def test_the_admin_lists_backtests_with_progress_and_headline_and_changes_nothing(operator, user):
    # given a completed backtest with its report and headline
    headline = {
        "debate": {"final_equity": 1010.0, "total_return": 0.01, "max_drawdown": 0.02},
        "buy_and_hold": {"final_equity": 990.0, "total_return": -0.01, "max_drawdown": 0.03},
    }
    template = {"strategy": None}
    backtest = make(
        user, template, status="completed", steps_done=6, report=REPORT, headline=headline
    )
    # when the operator opens the list, the backtest, and the add page
    listed = operator.get("/admin/backtests/backtest/")
    shown = operator.get(f"/admin/backtests/backtest/{backtest.pk}/change/")
    added = operator.get("/admin/backtests/backtest/add/")
    # then the list shows its status, progress and returns; the page its metrics per
    # rule, with nothing to save; and nothing can be added
    assert listed.status_code == 200
    body = listed.content.decode()
    assert "6/6" in body and "+1.00%" in body and "-1.00%" in body
    assert '<td class="field-debate_drawdown">2.00%</td>' in body  # a drawdown has no sign
    page = shown.content.decode()
    assert shown.status_code == 200
    debate = "<td>Debate consensus</td><td>1010.00</td><td>+1.00%</td><td>2.00%</td><td>1.50</td>"
    assert debate in page
    # a Sharpe ratio with no variation to divide by is a dash, as on the page
    flat = "<td>Flat (always wait)</td><td>1000.00</td><td>+0.00%</td><td>0.00%</td><td>-</td>"
    assert flat in page
    assert 'name="_save"' not in page
    assert added.status_code == 403
