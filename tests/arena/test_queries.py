"""One row by its key, or None, read without a sort (arena.queries)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from arena.queries import one_or_none
from debates.models import Debate
from tests.debates.factories import DebateFactory

pytestmark = pytest.mark.django_db


def test_one_row_by_its_key_or_none_with_no_order_by():
    # given a debate (whose model orders by creation, newest first)
    debate = DebateFactory()
    # when it is read by its key, as a model and as values, and a missing key is read
    with CaptureQueriesContext(connection) as queries:
        found = one_or_none(Debate.objects.all(), pk=debate.pk)
        name = one_or_none(Debate.objects.values_list("name", flat=True), pk=debate.pk)
        missing = one_or_none(Debate.objects.all(), pk=debate.pk + 1)
    # then each is one statement, none of them sorted, and the missing one is None
    assert (found, name, missing) == (debate, debate.name, None)
    assert len(queries) == 3
    assert not [q["sql"] for q in queries if "ORDER BY" in q["sql"]]
