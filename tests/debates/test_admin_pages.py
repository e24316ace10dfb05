"""The admin's debate pages are readable: the snapshot summarised and folded, no raw
candles, each turn's argument folded after its opening, list columns that fit, plurals."""

from __future__ import annotations

import pytest

from tests.debates.factories import (
    AIModelFactory,
    DebateFactory,
    MessageFactory,
    ParticipantFactory,
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
