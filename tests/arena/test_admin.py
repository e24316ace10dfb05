"""Every admin list and page renders for staff and is closed to everyone else."""

from datetime import date
from decimal import Decimal

import pytest
from django.contrib import admin

from debates.models import DeletedSpend, DroppedCall, ModelPrice, TokenBudget, TokenLedger
from tests.debates.factories import (
    AIModelFactory,
    BallotFactory,
    DecisionFactory,
    JudgeCallFactory,
    JudgeScoreFactory,
    MessageFactory,
    ParticipantFactory,
    ScheduleFactory,
    VoteFactory,
)
from tests.strategies.factories import StrategyFactory
from tests.traders.factories import (
    ExecutionFactory,
    HistoryEntryFactory,
    OrderFactory,
    PositionFactory,
    TraderFactory,
)

PROJECT_APPS = {"debates", "strategies", "traders"}


def project_models():
    return sorted(
        (model for model in admin.site._registry if model._meta.app_label in PROJECT_APPS),
        key=lambda model: model._meta.label,
    )


@pytest.fixture
def one_of_each(db):
    """One row of every project model, so change pages have something to show."""
    participant = ParticipantFactory()
    MessageFactory(participant=participant)
    VoteFactory(ballot=BallotFactory(participant=participant))
    ExecutionFactory(decision=DecisionFactory(debate=participant.debate, symbol="ETHUSDT"))
    JudgeCallFactory(debate=participant.debate)
    JudgeScoreFactory(participant=participant)
    DroppedCall.objects.create(
        debate=participant.debate, participant=participant, kind="turn", round=1, attempts=1
    )
    PositionFactory()
    OrderFactory()
    HistoryEntryFactory()
    AIModelFactory()
    StrategyFactory()
    TraderFactory()
    schedule = ScheduleFactory()
    TokenBudget.objects.create(owner=schedule.owner, daily_token_cap=1000)
    ModelPrice.objects.update_or_create(
        provider="openai",
        model_name="gpt-6.1-terra",
        defaults={
            "input_usd_per_mtok": Decimal("1"),
            "cached_input_usd_per_mtok": Decimal("0.1"),
            "output_usd_per_mtok": Decimal("5"),
        },
    )
    TokenLedger.objects.create(scope="user", scope_id=schedule.owner_id, day=date(2026, 1, 1))
    DeletedSpend.objects.create(owner=schedule.owner, schedule=schedule, day=date(2026, 1, 1))


def test_every_project_model_is_registered():
    labels = {model._meta.label for model in project_models()}
    assert labels == {
        "debates.AIModel",
        "debates.Ballot",
        "debates.Debate",
        "debates.Decision",
        "debates.DeletedSpend",
        "debates.DroppedCall",
        "debates.JudgeCall",
        "debates.JudgeScore",
        "debates.Message",
        "debates.ModelPrice",
        "debates.Schedule",
        "debates.TokenBudget",
        "debates.TokenLedger",
        "debates.Vote",
        "strategies.Strategy",
        "traders.Execution",
        "traders.HistoryEntry",
        "traders.Order",
        "traders.Position",
        "traders.Trader",
    }


@pytest.mark.parametrize("model", project_models(), ids=lambda m: m._meta.label)
def test_changelist_and_change_page_render_for_staff(client, staff_user, one_of_each, model):
    # given an operator and a row of the model
    client.force_login(staff_user)
    obj = model.objects.order_by("pk").first()
    opts = model._meta
    # when the list and the page are opened
    listing = client.get(f"/admin/{opts.app_label}/{opts.model_name}/")
    page = client.get(f"/admin/{opts.app_label}/{opts.model_name}/{obj.pk}/change/")
    # then both render
    assert listing.status_code == 200
    assert page.status_code == 200


@pytest.mark.parametrize("model", project_models(), ids=lambda m: m._meta.label)
def test_admin_redirects_non_staff_to_login(client, user, one_of_each, model):
    client.force_login(user)
    opts = model._meta
    obj = model.objects.order_by("pk").first()
    for url in (
        f"/admin/{opts.app_label}/{opts.model_name}/",
        f"/admin/{opts.app_label}/{opts.model_name}/{obj.pk}/change/",
    ):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/admin/login/")


def test_the_debate_page_shows_the_judges_summaries_and_scores(client, staff_user):
    # given a debate with a judge's summary and a participant's score
    participant = ParticipantFactory(debate__judge_model=AIModelFactory(name="Judge J"))
    JudgeCallFactory(debate=participant.debate)
    JudgeScoreFactory(participant=participant, score=0.65)
    client.force_login(staff_user)
    # when its page is opened
    page = client.get(f"/admin/debates/debate/{participant.debate.pk}/change/")
    # then the judge, its summary and the score are on it
    text = page.content.decode()
    assert page.status_code == 200
    assert "Judge J" in text
    assert "Points made: P1 is long." in text
    assert "0.65" in text
