"""Selective debate at the fake model server: the gate after the openings moves the
level as each signal says, the light level asks no vote, the budget lowers only a
non-forced L2, and the rounds stop at the first settled round and not before."""

from __future__ import annotations

import pytest

from debates.models import Ballot, Debate, Decision, Message, TokenBudget
from debates.selectors import spend_of
from debates.services import debate_prepare, debate_start
from debates.state import debate_plan
from tests.api.conftest import run_steps
from tests.debates.test_run import vote_text
from tests.fakes.llm_server import Reply

pytestmark = pytest.mark.django_db

LONG = {"BTCUSDT": ("open_long", 80), "ETHUSDT": ("wait", 70), "SOLUSDT": ("hold", 70)}
SHORT = {"BTCUSDT": ("open_short", 80), "ETHUSDT": ("wait", 70), "SOLUSDT": ("hold", 70)}


def openings(llm, **by_label) -> None:
    """Answer each seat's opening (P1, P2, ...) with the given positions."""
    for label, positions in by_label.items():
        llm.add_rule(Reply.answer(vote_text(positions), match=f"round 1/2. You are {label},"))


def run(make_debate, **fields) -> Debate:
    debate = make_debate(personalities=("bull", "bear"), rounds=2, **fields)
    debate_start(debate_id=debate.pk)
    run_steps(debate.pk)
    return Debate.objects.get(pk=debate.pk)


def test_agreeing_openings_stop_an_auto_debate_at_l1_whose_openings_are_the_ballots(
    llm, make_debate
):
    # given two confident openings long on the primary coin
    openings(llm, P1=LONG, P2=LONG)
    # when an auto debate runs
    debate = run(make_debate, level="auto")
    # then only the two openings were asked: they are the ballots, and the decision theirs
    assert len(llm.requests) == 2
    assert (debate.status, debate.level_used, debate.forced) == ("completed", "L1", False)
    assert debate.level_reasons == ["the openings agree on BTCUSDT at mean confidence 80"]
    assert Message.objects.filter(debate=debate).count() == 2
    assert Ballot.objects.filter(debate=debate, prompt_tokens=0).count() == 2
    primary = Decision.objects.get(debate=debate, is_primary=True)
    assert (primary.symbol, primary.action) == ("BTCUSDT", "open_long")
    kinds = {(s.kind, s.status) for s in debate_plan(debate).steps}
    assert ("rebuttal", "skipped") in kinds and ("voting", "done") in kinds
    # and its spend counts the two calls made, not the ballots copied from them
    assert spend_of(debate_id=debate.pk).calls == 2


def test_disagreeing_openings_take_an_auto_debate_to_l2(llm, make_debate):
    openings(llm, P1=LONG, P2=SHORT)
    debate = run(make_debate, level="auto")
    assert len(llm.requests) == 6
    assert (debate.status, debate.level_used) == ("completed", "L2")
    assert debate.level_reasons == ["disagreement: the openings differ on BTCUSDT (long, short)"]


def test_past_the_daily_budget_a_non_forced_l2_is_lowered_to_l1(llm, make_debate, user):
    TokenBudget.objects.create(owner=user, daily_token_budget=0)
    openings(llm, P1=LONG, P2=SHORT)
    debate = run(make_debate, level="auto")
    assert len(llm.requests) == 2
    assert debate.level_used == "L1"
    assert debate.level_reasons[-1].startswith("budget: the user's daily token budget is passed")


def test_a_forced_l2_is_never_lowered_by_the_budget(llm, make_debate, user):
    TokenBudget.objects.create(owner=user, daily_token_budget=0)
    openings(llm, P1=LONG, P2=LONG)
    debate = run(make_debate, level="L2")
    assert len(llm.requests) == 6
    assert (debate.level_used, debate.forced) == ("L2", True)


def test_the_rounds_stop_at_the_first_settled_round_and_not_before(llm, make_debate):
    # given a 4-round debate whose P1 changes its BTC action in round 2 and keeps it
    for round_number in (2, 3, 4):
        llm.add_rule(Reply.answer(vote_text(SHORT), match=f"round {round_number}/4. You are P1,"))
    for round_number in (1, 2, 3, 4):
        llm.add_rule(Reply.answer(vote_text(LONG), match=f"round {round_number}/4. You are P2,"))
    llm.add_rule(Reply.answer(vote_text(LONG), match="round 1/4. You are P1,"))
    debate = make_debate(personalities=("bull", "bear"), rounds=4)
    debate.strategy.early_stop = True
    debate.strategy.save(update_fields=["early_stop"])
    debate_start(debate_id=debate.pk)
    # when it runs
    run_steps(debate.pk)
    # then round 2 changed an action, round 3 changed none: the votes began after it
    debate.refresh_from_db()
    assert debate.status == "completed"
    assert debate.stopped_early == {
        "after_round": 3,
        "reason": "no participant changed any per-coin action from round 2 to round 3",
    }
    assert sorted(Message.objects.filter(debate=debate).values_list("round", flat=True)) == [
        1,
        1,
        2,
        2,
        3,
        3,
    ]
    assert len(llm.requests) == 6 + 2
    skipped = [s for s in debate_plan(debate).steps if s.status == "skipped"]
    assert [(s.kind, s.round) for s in skipped] == [("rebuttal", 4), ("rebuttal", 4)]


def test_the_early_stop_is_off_when_the_strategy_turns_it_off(llm, make_debate):
    debate = run(make_debate)  # the factory's strategies turn it off
    assert debate.stopped_early is None
    assert Message.objects.filter(debate=debate).count() == 4


@pytest.mark.parametrize(
    ("fraction", "level", "skipped"),
    [(1000.0, "auto", True), (0.0, "auto", False), (1000.0, "L2", False), (1000.0, "L1", False)],
)
def test_a_schedule_firing_in_a_quiet_market_is_a_recorded_l0_skip(user, fraction, level, skipped):
    # given a replay schedule whose last debate saw the market an hour before
    from datetime import UTC, datetime

    from debates.services.schedules import schedule_create, schedule_fire
    from tests.debates.test_schedules import schedule_template

    first = datetime(2024, 8, 4, 12, tzinfo=UTC)
    schedule = schedule_create(
        owner=user, data=schedule_template(user, replay_as_of=first, level=level)
    )
    schedule.strategy.quiet_atr_fraction = fraction
    schedule.strategy.save(update_fields=["quiet_atr_fraction"])
    last = schedule_fire(schedule_id=schedule.pk).debate_id
    debate_prepare(debate_id=last)  # its snapshot, as its first step stores it
    Debate.objects.filter(pk=last).update(status="completed")
    # when it fires again
    firing = schedule_fire(schedule_id=schedule.pk)
    # then at level auto a quiet market (moves under 1000 ATRs) is skipped with the
    # figures, and the replay moves on; with a fraction of 0 every firing is debated, and
    # so is every firing of a schedule set to L1 or L2
    schedule.refresh_from_db()
    assert (firing.skipped == "quiet_market") is skipped
    assert schedule.replay_as_of == datetime(2024, 8, 4, 14, tzinfo=UTC)
    if skipped:
        assert firing.reason.startswith("L0: BTCUSDT moved ")
        assert "of its 1h ATR14" in schedule.last_skip_reason
        assert (schedule.run_count, schedule.skip_count) == (1, 1)
        assert schedule.skips_by_reason == {"quiet_market": 1}
    else:
        assert (schedule.run_count, schedule.skip_count) == (2, 0)


def test_the_schedule_shows_its_runs_by_level(api_client, make_debate, user):
    from tests.debates.factories import ScheduleFactory

    schedule = ScheduleFactory(owner=user)
    for level in ("L1", "L1", "L2", ""):
        debate = make_debate(personalities=("bull", "bear"))
        Debate.objects.filter(pk=debate.pk).update(
            origin="schedule", schedule=schedule, level_used=level
        )
    shown = api_client.get(f"/api/schedules/{schedule.pk}").json()
    listed = api_client.get("/api/schedules").json()["results"][0]
    assert shown["runs_by_level"] == listed["runs_by_level"] == {"L1": 2, "L2": 1}
