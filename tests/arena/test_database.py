"""PostgreSQL connections: a statement run again on one keeps its plan (prepared
statements); only a process that keeps no connection pools them."""

from __future__ import annotations

from django.db import connection

from debates.models import Debate
from tests.settings_read import setting_in_process

# The statement's filter, its values bound by the server ($1, $2, ...).
PROBE = ('"debates_debate"."name" = $', '"debates_debate"."symbol" = $')


def probes_prepared() -> list[str]:
    """Return the statements prepared on this connection that filter as the probe does."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT statement FROM pg_prepared_statements")
        statements = [row[0] for row in cursor.fetchall()]
    return [statement for statement in statements if all(part in statement for part in PROBE)]


def test_a_statement_run_again_on_a_connection_is_prepared(db):
    # given a statement not yet run on this connection
    assert not probes_prepared()
    # when it runs three times, its values bound by the server each time
    for symbol in ("BTC", "ETH", "SOL"):
        assert not Debate.objects.filter(name="probe", symbol=symbol).exists()
    # then PostgreSQL holds it prepared: parsed and planned once, run with each value
    assert len(probes_prepared()) == 1


def test_only_a_process_that_keeps_no_connection_pools_them():
    # a worker keeps its own connection (DB_CONN_MAX_AGE=60 in the Procfile): no pool
    pool = "settings.DATABASES['default']['OPTIONS'].get('pool')"
    assert setting_in_process(pool, DB_CONN_MAX_AGE="60") == "None"
    assert setting_in_process(pool, DB_CONN_MAX_AGE="0", DB_POOL_MAX_SIZE="3") == (
        "{'min_size': 1, 'max_size': 3}"
    )
