"""The admin's debate pages are readable: the snapshot summarised and folded, no raw
candles, each turn's argument folded after its opening, list columns that fit, plurals;
a started debate read-only, only the fields that apply to a debate, the list filtered by
where its debates came from."""

from __future__ import annotations

import re

import pytest

from tests.backtests.factories import BacktestFactory
from tests.debates.factories import (
    AIModelFactory,
    DebateFactory,
    MessageFactory,
    ParticipantFactory,
    ScheduleFactory,
)

pytestmark = pytest.mark.django_db

COINS = ("BTCUSDT", "ETHUSDT", "SOLUSDT")
CANDLE = {"open_time": 1725483600000, "open": 1.5, "high": 2.5, "low": 0.5, "close": 2.0}


def snapshot() -> dict:
    """A stored snapshot of three coins on three timeframes, 50 candles each."""
    frames = [
        {
            "timeframe": timeframe,
            "candles": [dict(CANDLE, volume=float(i)) for i in range(50)],
            "indicators": {"rsi14": 55.9, "ema20": 1.9},
        }
        for timeframe in ("15m", "1h", "4h")
    ]
    coins = [
        {"symbol": s, "source_tag": "static", "price": 2.0, "timeframes": frames} for s in COINS
    ]
    return {
        "source": "dataset",
        "exchange": "binance",
        "as_of": "2024-09-05T00:00:00Z",
        "coins": coins,
        "credit": "Source: Binance",
        "notes": ["kept the first 3 coins, dropped DOGEUSDT"],
    }


def test_a_finished_debates_change_page_is_bounded_and_shows_no_raw_candle(client, staff_user):
    # given a finished 3x3 debate with a 450-candle snapshot and long arguments
    debate = DebateFactory(owner=staff_user, status="completed", market_snapshot=snapshot())
    seats = [ParticipantFactory(debate=debate, speak_order=i) for i in range(3)]
    argument = "The trend holds above the 50-period average. " * 30
    for round_number in (1, 2, 3):
        for seat in seats:
            MessageFactory(participant=seat, round=round_number, reasoning=argument)
    client.force_login(staff_user)
    # when its change page is opened
    page = client.get(f"/admin/debates/debate/{debate.pk}/change/")
    html = page.content.decode()
    # then it is small, with the snapshot's summary and no candle in it
    assert page.status_code == 200
    assert len(html) < 110_000, len(html)  # 155,271 bytes with the raw snapshot
    assert "open_time" not in html
    assert "BTCUSDT [static]: price" in html
    assert "indicators and notes</summary>" in html
    # and each argument is folded after its opening, the whole of it one click away
    assert html.count('<details class="admin-text"><summary>The trend holds') == 9


def test_the_debate_list_shows_the_round_out_of_the_rounds(client, staff_user):
    DebateFactory(owner=staff_user, status="running", current_round=2, max_rounds=3)
    client.force_login(staff_user)
    html = client.get("/admin/debates/debate/").content.decode()
    assert '<td class="field-rounds">2/3</td>' in html


def test_the_admin_index_names_strategies_in_the_plural(client, staff_user):
    client.force_login(staff_user)
    html = client.get("/admin/").content.decode()
    assert ">Strategies<" in html
    assert "Strategys" not in html


def test_the_ai_model_list_and_page_warn_of_a_retired_model(client, staff_user):
    # given an AI model on grok-4, past its shutdown
    model = AIModelFactory(owner=staff_user, provider="grok", model_name="grok-4")
    client.force_login(staff_user)
    warning = "grok-4-0709 was retired on 2026-05-15; use grok-4.3 instead."
    # when / then
    listing = client.get("/admin/debates/aimodel/").content.decode()
    assert f'<td class="field-catalogue_warning">{warning}</td>' in listing
    page = client.get(f"/admin/debates/aimodel/{model.pk}/change/").content.decode()
    assert warning in page


def test_the_admin_refuses_a_bad_capability_override_naming_the_key(client, staff_user):
    # given
    model = AIModelFactory(owner=staff_user)
    client.force_login(staff_user)
    form = client.get(f"/admin/debates/aimodel/{model.pk}/change/").context["adminform"].form
    data = {name: form[name].value() or "" for name in form.fields}
    data.update(owner=staff_user.pk, capabilities='{"temperature": "hot"}')
    # when
    response = client.post(f"/admin/debates/aimodel/{model.pk}/change/", data)
    # then
    assert response.status_code == 200
    assert "temperature: must be" in response.content.decode()
    model.refresh_from_db()
    assert model.capabilities == {}


# The settings a debate ran with, each a field of the change form while it is pending.
SETTINGS = ("symbol", "max_rounds", "strategy", "as_of", "trader", "auto_execute")


@pytest.mark.parametrize("status", ["running", "completed", "failed", "cancelled"])
def test_a_started_debate_is_shown_read_only(operator, staff_user, status):
    # given a debate that has started
    debate = DebateFactory(owner=staff_user, status=status, max_rounds=3)
    page = f"/admin/debates/debate/{debate.pk}/change/"
    # when its page is opened
    html = operator.get(page).content.decode()
    # then none of its settings is a field of a form, and there is nothing to save
    assert [name for name in SETTINGS if f'name="{name}' in html] == []
    assert 'name="_save"' not in html
    assert '<div class="readonly">BTCUSDT</div>' in html
    # and a change posted anyway is refused, changing nothing
    response = operator.post(page, {"name": debate.name, "symbol": "ETHUSDT", "max_rounds": 5})
    assert response.status_code == 403
    debate.refresh_from_db()
    assert (debate.symbol, debate.max_rounds) == ("BTCUSDT", 3)


def test_a_pending_debate_can_still_be_changed(operator, staff_user):
    debate = DebateFactory(owner=staff_user, status="pending")
    html = operator.get(f"/admin/debates/debate/{debate.pk}/change/").content.decode()
    assert [name for name in SETTINGS if f'name="{name}' not in html] == []
    assert 'name="_save"' in html


def shown_fields(operator, debate) -> set[str]:
    """Return the names of the fields the debate's admin page shows (editable or not)."""
    html = operator.get(f"/admin/debates/debate/{debate.pk}/change/").content.decode()
    return set(re.findall(r'<div class="form-row[^"]*field-(\w+)', html))


def test_a_one_off_debate_shows_no_schedules_interval(operator, staff_user):
    # given a manual debate, a schedule's and a backtest's
    manual = DebateFactory(owner=staff_user)
    fired = DebateFactory(owner=staff_user, schedule=ScheduleFactory(owner=staff_user))
    stepped = DebateFactory(owner=staff_user, backtest=BacktestFactory(owner=staff_user))
    # then each page shows the fields of where it came from, and only those
    assert {"interval_minutes", "schedule", "backtest"} & shown_fields(operator, manual) == set()
    assert {"interval_minutes", "schedule"} <= shown_fields(operator, fired)
    assert "backtest" not in shown_fields(operator, fired)
    assert "backtest" in shown_fields(operator, stepped)
    assert {"interval_minutes", "schedule"} & shown_fields(operator, stepped) == set()


def test_a_debate_without_a_judge_ranking_or_person_hides_their_settings(operator, staff_user):
    plain = DebateFactory(owner=staff_user)
    judged = DebateFactory(owner=staff_user, judge_model=AIModelFactory(owner=staff_user))
    ParticipantFactory(debate=judged, kind="human", ai_model=None)
    hidden = {"judge_count", "oi_ranking_limit", "oi_duration", "human_turn_timeout_minutes"}
    assert hidden & shown_fields(operator, plain) == set()
    assert {"judge_count", "human_turn_timeout_minutes"} <= shown_fields(operator, judged)


def test_the_debate_list_filters_by_origin(operator, staff_user):
    # given a debate of each origin
    DebateFactory(owner=staff_user, name="By hand")
    DebateFactory(owner=staff_user, name="Fired", schedule=ScheduleFactory(owner=staff_user))
    DebateFactory(owner=staff_user, name="Stepped", backtest=BacktestFactory(owner=staff_user))
    # when the list is filtered to each origin, then it shows that origin's alone
    names = {
        origin: re.findall(
            r'field-name"><a href="[^"]+">([^<]+)</a>',
            operator.get(f"/admin/debates/debate/?origin__exact={origin}").content.decode(),
        )
        for origin in ("manual", "schedule", "backtest")
    }
    assert names == {"manual": ["By hand"], "schedule": ["Fired"], "backtest": ["Stepped"]}
