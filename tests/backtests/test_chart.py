"""The equity chart: SVG drawn by the server, a line per rule, for the owner only."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from django.test import Client

from backtests.charts import equity_svg
from tests.backtests.factories import BacktestFactory

REPORT = {
    "rules": [
        {
            "key": key,
            "label": label,
            "metrics": {"final_equity": final},
            "equity": [[1722816000000, 1000.0], [1722830400000, final]],
        }
        for key, label, final in (
            ("debate", "Debate consensus", 1010.0),
            ("buy_and_hold", "Buy and hold BTCUSDT", 990.0),
            ("seat:P1", "P1 <bull> alone", 1005.0),
        )
    ],
    "stretches": [
        {"timeframe": "1h", "from": "2024-08-04T20:00:00Z", "to": "2024-08-05T00:00:00Z"},
        {"timeframe": "15m", "from": "2024-08-05T00:00:00Z", "to": "2024-08-05T04:00:00Z"},
    ],
}


def test_the_chart_draws_a_line_per_rule_the_debate_last_and_escapes_labels():
    # when the chart of a report with three rules is drawn
    svg = equity_svg(REPORT, title="A & B")
    # then it is SVG with a line per rule, the debate's on top, and escaped text
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    assert svg.count("<polyline") == 3
    assert svg.rindex('data-rule="debate"') > svg.rindex('data-rule="seat:P1"')
    assert "P1 &lt;bull&gt; alone" in svg and "<title>A &amp; B</title>" in svg
    assert "15m candles from here" in svg


@pytest.mark.django_db
def test_the_chart_is_served_to_the_owner_only(user, other_user):
    # given a backtest of another user, and one of the user
    def make(owner):
        return BacktestFactory(
            owner=owner,
            name="Chart",
            start=datetime(2024, 8, 5, tzinfo=UTC),
            end=datetime(2024, 8, 5, 4, tzinfo=UTC),
            steps_total=1,
            status="completed",
            report=REPORT,
        )

    mine, theirs = make(user), make(other_user)
    browser = Client()
    browser.force_login(user)
    # when each chart is asked for
    own = browser.get(f"/backtests/{mine.pk}/equity.svg")
    other = browser.get(f"/backtests/{theirs.pk}/equity.svg")
    # then the user's is SVG, the other's a 404, and the page needs a login
    assert (own.status_code, own["Content-Type"]) == (200, "image/svg+xml")
    assert own.content.decode().count("<polyline") == 3
    assert other.status_code == 404
    assert Client().get("/backtests/").status_code == 302
    assert browser.get(f"/backtests/{mine.pk}/").status_code == 200
