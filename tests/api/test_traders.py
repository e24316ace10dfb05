"""Trader accounts over the API: credentials write-only; positions, orders and executions
read-only below each trader."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest

from tests.api.conftest import EXCHANGE_KEY, EXCHANGE_PASSPHRASE, EXCHANGE_SECRET, refusal
from tests.debates.factories import DebateFactory, ScheduleFactory
from tests.traders.factories import ExecutionFactory, OrderFactory, PositionFactory, TraderFactory
from traders.models import Trader

pytestmark = pytest.mark.django_db


def test_create_a_paper_trader(api, user):
    body = {"name": "Paper", "starting_balance": "2500", "fee_rate": "0.0005"}
    response = api.post("/api/traders", body, format="json")
    assert response.status_code == 201
    trader = Trader.objects.get()
    assert (trader.owner, trader.exchange, trader.balance, trader.fee_rate) == (
        user,
        "paper",
        Decimal("2500"),
        Decimal("0.0005"),
    )
    assert {k: v for k, v in response.json().items() if k not in ("created_at", "updated_at")} == {
        "id": trader.pk,
        "name": "Paper",
        "exchange": "paper",
        "sandbox": False,
        "status": "running",
        "requires_approval": True,
        "approval_minutes": 10,
        "api_key_masked": "",
        "has_api_key": False,
        "has_api_secret": False,
        "has_api_passphrase": False,
        "starting_balance": "2500.00000000",
        "balance": "2500.00000000",
        "fee_rate": "0.000500",
        "market_source": "dataset",
        "paused_guard": "",
        "paused_reason": "",
        "paused_at": None,
        "paused_until": None,
    }


def test_credentials_are_stored_and_never_shown(api):
    # given an OKX account with its three credentials
    body = {
        "name": "OKX",
        "exchange": "okx",
        "api_key": EXCHANGE_KEY,
        "api_secret": EXCHANGE_SECRET,
        "api_passphrase": EXCHANGE_PASSPHRASE,
        "sandbox": True,
    }
    # when it is created
    response = api.post("/api/traders", body, format="json")
    # then they are stored, and the answer only says they are set
    assert response.status_code == 201
    trader = Trader.objects.get()
    assert (trader.api_key, trader.api_secret, trader.api_passphrase) == (
        EXCHANGE_KEY,
        EXCHANGE_SECRET,
        EXCHANGE_PASSPHRASE,
    )
    shown = response.json()
    assert (shown["api_key_masked"], shown["has_api_secret"], shown["has_api_passphrase"]) == (
        "exc...3210",
        True,
        True,
    )
    assert not {"api_key", "api_secret", "api_passphrase"} & set(shown)


@pytest.mark.parametrize(
    ("body", "fields"),
    [
        (
            {"exchange": "binanceusdm", "api_key": EXCHANGE_KEY},
            {"api_secret": ["Required for the binanceusdm exchange."]},
        ),
        (
            {"exchange": "okx", "api_key": EXCHANGE_KEY, "api_secret": EXCHANGE_SECRET},
            {"api_passphrase": ["Required for the okx exchange."]},
        ),
        (
            {"exchange": "kraken"},
            {"exchange": ["'kraken' is not one of: paper, binanceusdm, bybit, okx."]},
        ),
        (
            {"fee_rate": "0.2"},
            {"fee_rate": ["Ensure this value is less than or equal to 0.099999."]},
        ),
        (
            {"starting_balance": "0"},
            {"starting_balance": ["Must be more than 0."]},
        ),
        ({"status": "paused"}, {"status": ["'paused' is not one of: running, stopped."]}),
        ({"market_source": "csv"}, {"market_source": ["'csv' is not one of: dataset, live."]}),
    ],
    ids=[
        "missing-secret",
        "missing-passphrase",
        "unknown-exchange",
        "fee-rate",
        "balance",
        "status",
        "market-source",
    ],
)
def test_create_refuses_bad_input_naming_each_field(api, body, fields):
    response = api.post("/api/traders", {"name": "T", **body}, format="json")
    assert response.status_code == 400
    assert response.json() == refusal(fields)
    assert Trader.objects.count() == 0


def test_list_filters_by_status_newest_first(api, user, other_user):
    older, newer = TraderFactory(owner=user), TraderFactory(owner=user)
    stopped = TraderFactory(owner=user, status="stopped")
    TraderFactory(owner=other_user)
    everything = api.get("/api/traders").json()["results"]
    running = api.get("/api/traders", {"status": "running"}).json()["results"]
    assert [t["id"] for t in everything] == [stopped.pk, newer.pk, older.pk]
    assert [t["id"] for t in running] == [newer.pk, older.pk]


def test_detail(api, user):
    trader = TraderFactory(owner=user, name="Mine")
    response = api.get(f"/api/traders/{trader.pk}")
    assert (response.status_code, response.json()["name"]) == (200, "Mine")


def test_stop_a_trader(api, user):
    trader = TraderFactory(owner=user)
    response = api.patch(f"/api/traders/{trader.pk}", {"status": "stopped"}, format="json")
    assert (response.status_code, response.json()["status"]) == (200, "stopped")
    trader.refresh_from_db()
    assert trader.status == "stopped"


def test_update_keeps_credentials_not_given(api, user):
    trader = TraderFactory(
        owner=user, exchange="bybit", api_key=EXCHANGE_KEY, api_secret=EXCHANGE_SECRET
    )
    response = api.patch(f"/api/traders/{trader.pk}", {"name": "Renamed"}, format="json")
    assert response.status_code == 200
    trader.refresh_from_db()
    assert (trader.name, trader.api_key, trader.api_secret) == (
        "Renamed",
        EXCHANGE_KEY,
        EXCHANGE_SECRET,
    )


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"exchange": "bybit"}, "exchange"),
        ({"starting_balance": "5000"}, "starting_balance"),
        ({"market_source": "live"}, "market_source"),
    ],
)
def test_update_refuses_to_change_a_field_fixed_at_creation(api, user, change, field):
    # given a paper trader on the dataset
    trader = TraderFactory(owner=user)
    # when its exchange, starting balance or market source is changed
    response = api.patch(f"/api/traders/{trader.pk}", change, format="json")
    # then it is refused and unchanged
    assert response.status_code == 400
    assert response.json()["fields"] == {
        field: ["Cannot change once the trader exists; create a new trader."]
    }
    trader.refresh_from_db()
    assert (trader.exchange, trader.starting_balance, trader.market_source) == (
        "paper",
        Decimal("1000"),
        "dataset",
    )


def test_update_refuses_to_move_a_replaying_trader_to_live_prices(api, user):
    """A position opened at a dataset instant keeps the dataset: on live prices its stop and
    target would never be checked again."""
    # given a paper trader on the dataset, its clock at 2024-08-20, holding an ETH long
    at = datetime(2024, 8, 20, tzinfo=UTC)
    trader = TraderFactory(owner=user, name="Replay", market_source="dataset", replay_as_of=at)
    position = PositionFactory(trader=trader, symbol="ETHUSDT", stop_loss_price=Decimal("2500"))
    # when its market source is switched to live, along with its name
    response = api.patch(
        f"/api/traders/{trader.pk}", {"name": "Live", "market_source": "live"}, format="json"
    )
    # then it is refused, naming the market source, and nothing changed
    assert response.status_code == 400
    assert response.json() == refusal(
        {"market_source": ["Cannot change once the trader exists; create a new trader."]}
    )
    trader.refresh_from_db()
    position.refresh_from_db()
    assert (trader.name, trader.market_source, trader.replay_as_of) == ("Replay", "dataset", at)
    assert (position.status, position.stop_loss_price) == ("open", Decimal("2500"))


def test_update_accepts_the_unchanged_fixed_fields(api, user):
    trader = TraderFactory(owner=user)
    body = {
        "exchange": "paper",
        "starting_balance": "1000.00",
        "market_source": "dataset",
        "name": "Same",
    }
    response = api.patch(f"/api/traders/{trader.pk}", body, format="json")
    assert (response.status_code, response.json()["name"]) == (200, "Same")


def test_update_refuses_removing_a_required_credential(api, user):
    trader = TraderFactory(
        owner=user, exchange="bybit", api_key=EXCHANGE_KEY, api_secret=EXCHANGE_SECRET
    )
    response = api.patch(f"/api/traders/{trader.pk}", {"api_secret": ""}, format="json")
    assert response.status_code == 400
    assert response.json()["fields"] == {"api_secret": ["Required for the bybit exchange."]}
    trader.refresh_from_db()
    assert trader.api_secret == EXCHANGE_SECRET


def test_delete(api, user):
    trader = TraderFactory(owner=user)
    PositionFactory(trader=trader)
    response = api.delete(f"/api/traders/{trader.pk}")
    assert response.status_code == 204
    assert Trader.objects.count() == 0


@pytest.mark.parametrize(
    ("arrange", "message"),
    [
        (
            lambda t: ExecutionFactory(trader=t, decision__debate__owner=t.owner),
            "Trader 'T' has executions, which are kept as a record; stop the trader instead.",
        ),
        (
            lambda t: DebateFactory(owner=t.owner, trader=t, auto_execute=True),
            "Trader 'T' executes a pending or running debate or a schedule automatically; "
            "change or delete those first.",
        ),
        (
            lambda t: ScheduleFactory(owner=t.owner, trader=t, auto_execute=True),
            "Trader 'T' executes a pending or running debate or a schedule automatically; "
            "change or delete those first.",
        ),
    ],
    ids=["executions", "auto-executed-debate", "auto-executing-schedule"],
)
def test_delete_refuses_a_trader_in_use(api, user, arrange, message):
    trader = TraderFactory(owner=user, name="T")
    arrange(trader)
    response = api.delete(f"/api/traders/{trader.pk}")
    assert response.status_code == 409
    assert response.json() == {"code": "conflict", "message": message, "fields": {}}
    assert Trader.objects.filter(pk=trader.pk).exists()


def test_positions_newest_first_and_filtered_by_status(api, user):
    # given an open and a closed position, and another trader's
    trader = TraderFactory(owner=user)
    closed = PositionFactory(trader=trader, status="closed", symbol="ETHUSDT")
    opened = PositionFactory(trader=trader)
    PositionFactory(trader=TraderFactory(owner=user))
    # when they are listed, all and open only
    everything = api.get(f"/api/traders/{trader.pk}/positions").json()
    open_only = api.get(f"/api/traders/{trader.pk}/positions", {"status": "open"}).json()
    # then the trader's own are shown, newest first
    assert [p["id"] for p in everything["results"]] == [opened.pk, closed.pk]
    assert [p["id"] for p in open_only["results"]] == [opened.pk]


def test_orders_newest_first_and_filtered_by_status(api, user):
    trader = TraderFactory(owner=user)
    filled = OrderFactory(trader=trader, status="filled")
    resting = OrderFactory(trader=trader, status="open", type="stop_market")
    everything = api.get(f"/api/traders/{trader.pk}/orders").json()["results"]
    filled_only = api.get(f"/api/traders/{trader.pk}/orders", {"status": "filled"}).json()
    assert [o["id"] for o in everything] == [resting.pk, filled.pk]
    assert [o["id"] for o in filled_only["results"]] == [filled.pk]


def test_executions_newest_first_and_filtered_by_status(api, user):
    trader = TraderFactory(owner=user)
    failed = ExecutionFactory(trader=trader, decision__debate__owner=user, status="failed")
    pending = ExecutionFactory(trader=trader, decision__debate__owner=user)
    everything = api.get(f"/api/traders/{trader.pk}/executions").json()["results"]
    failed_only = api.get(f"/api/traders/{trader.pk}/executions", {"status": "failed"}).json()
    assert [(e["id"], e["debate"]) for e in everything] == [
        (pending.pk, pending.decision.debate_id),
        (failed.pk, failed.decision.debate_id),
    ]
    assert [e["id"] for e in failed_only["results"]] == [failed.pk]


def test_sub_lists_refuse_an_unknown_status(api, user):
    trader = TraderFactory(owner=user)
    response = api.get(f"/api/traders/{trader.pk}/positions", {"status": "half"})
    assert response.status_code == 400
    assert response.json()["fields"] == {"status": ["'half' is not one of: open, closed."]}


def test_resume_lifts_a_guards_pause_and_shows_the_trader(api, user, other_user):
    # given a trader a guard paused until its owner resumes it
    trader = TraderFactory(
        owner=user,
        paused_guard="drawdown",
        paused_reason="maximum drawdown: equity 1080.00 is 10.00% below its peak",
        paused_at=datetime(2024, 8, 4, 12, tzinfo=UTC),
    )
    shown = api.get(f"/api/traders/{trader.pk}").json()
    assert (shown["paused_guard"], shown["paused_until"]) == ("drawdown", None)
    # when its owner resumes it
    response = api.post(f"/api/traders/{trader.pk}/resume")
    # then it is paused no more
    assert response.status_code == 200
    body = response.json()
    assert (body["paused_guard"], body["paused_reason"], body["paused_at"]) == ("", "", None)
    # and another user's trader is not found, and stays paused
    theirs = TraderFactory(owner=other_user, paused_guard="drawdown", paused_reason="x")
    assert api.post(f"/api/traders/{theirs.pk}/resume").status_code == 404
    theirs.refresh_from_db()
    assert theirs.paused_guard == "drawdown"
