"""The monitors' warnings on the arena page, in headless Chromium."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from tests.debates.factories import AIModelFactory
from tests.evaluations.builders import completed_debate
from tests.strategies.factories import StrategyFactory

pytestmark = [pytest.mark.slow, pytest.mark.django_db(transaction=True)]


def test_the_arena_page_warns_of_a_model_stuck_on_wait(open_page, user):
    from playwright.sync_api import expect

    # given 12 completed debates in which one model always waits and the other opens
    strategy = StrategyFactory(owner=user)
    waiter = AIModelFactory(owner=user, name="Waiter")
    opener = AIModelFactory(owner=user, name="Opener")
    for n in range(12):
        completed_debate(
            owner=user,
            strategy=strategy,
            as_of=datetime(2024, 8, 6, tzinfo=UTC) + timedelta(hours=n),
            seats=[("bear", waiter), ("bull", opener)],
            openings={},
            votes={0: {"BTCUSDT": ("wait", 60)}, 1: {"BTCUSDT": ("open_long", 70)}},
            decisions={"BTCUSDT": "open_long"},
        )
    # when the user opens the arena page
    page = open_page("/", user=user)
    # then its welcome panel lists the warning, naming the model
    warnings = page.locator("#monitor-warning-list li")
    expect(warnings).to_have_text(
        ["Waiter as bear: hold and wait are 100% of the last 12 usable decisions"]
    )
    expect(page.locator("#monitor-warnings")).to_be_visible()
