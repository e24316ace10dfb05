"""Reviews in the admin: listed read-only, with each decision's flip and verdicts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from evaluations.models import DebateReview, DecisionReview
from evaluations.services import debate_review
from tests.evaluations.test_reviews import flipped_debate

pytestmark = pytest.mark.django_db


def test_the_admin_lists_reviews_and_changes_nothing(operator, user, strategy):
    # given a reviewed debate whose rounds flipped BTC from short to long
    debate = flipped_debate(user, strategy, at=datetime(2024, 8, 6, 8, tzinfo=UTC))
    review = debate_review(debate_id=debate.pk)
    btc = DecisionReview.objects.get(symbol="BTCUSDT")
    # when the lists and the review's page are opened
    pages = {
        path: operator.get(path)
        for path in (
            "/admin/evaluations/debatereview/",
            "/admin/evaluations/decisionreview/",
            "/admin/evaluations/votereview/",
            f"/admin/evaluations/debatereview/{review.pk}/change/",
        )
    }
    # then each shows, and the decisions list says which flipped
    assert {path: page.status_code for path, page in pages.items()} == dict.fromkeys(pages, 200)
    listed = pages["/admin/evaluations/decisionreview/"].content.decode()
    assert "open_short" in listed and btc.verdict in listed
    # and nothing can be added, changed or deleted there
    assert operator.get("/admin/evaluations/debatereview/add/").status_code == 403
    deleted = operator.post(f"/admin/evaluations/debatereview/{review.pk}/delete/", {"post": "yes"})
    assert deleted.status_code == 403
    assert DebateReview.objects.count() == 1


@pytest.mark.parametrize("model", ["votereview", "decisionreview"])
def test_the_review_lists_run_as_many_queries_whatever_their_rows(operator, user, strategy, model):
    # given one reviewed debate, and its list's queries
    def listed() -> int:
        with CaptureQueriesContext(connection) as queries:
            assert operator.get(f"/admin/evaluations/{model}/").status_code == 200
        return len(queries)

    at = datetime(2024, 8, 6, 8, tzinfo=UTC)
    debate_review(debate_id=flipped_debate(user, strategy, at=at).pk)
    one = listed()
    # when three more debates, on other models, are reviewed
    for hours in (1, 2, 3):
        debate_review(debate_id=flipped_debate(user, strategy, at=at + timedelta(hours=hours)).pk)
    # then the list of four times the rows runs the same queries
    assert listed() == one
