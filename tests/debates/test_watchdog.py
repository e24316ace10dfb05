"""The stale-debate watchdog: it resumes the active debates that stopped progressing."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from debates.models import Debate
from debates.services import debate_start, debates_resume_stale, runs
from tests.settings_read import setting_in_process

pytestmark = pytest.mark.django_db


@pytest.fixture
def sent(monkeypatch) -> list:
    """The canvases sent to the workers, kept here instead."""
    kept: list = []
    monkeypatch.setattr(runs, "send_on_commit", kept.append)
    return kept


def _quiet_for(debate: Debate, seconds: float) -> None:
    Debate.objects.filter(pk=debate.pk).update(
        progressed_at=timezone.now() - timedelta(seconds=seconds)
    )


def test_a_debate_quiet_for_longer_than_the_setting_is_resumed_once(
    settings, make_debate, sent
) -> None:
    settings.DEBATE_STALE_AFTER_S = 12
    stalled, lively = make_debate(), make_debate()
    for debate in (stalled, lively):
        debate_start(debate_id=debate.pk)
    _quiet_for(stalled, 20)
    _quiet_for(lively, 5)
    sent.clear()

    assert debates_resume_stale() == [stalled.pk]
    assert len(sent) == 1  # the stalled debate's remaining steps
    # its resume counts as progress: the next look leaves it alone
    assert debates_resume_stale() == []


def test_the_default_waits_45_seconds(make_debate, sent) -> None:
    debate = make_debate()
    debate_start(debate_id=debate.pk)
    _quiet_for(debate, 30)
    assert debates_resume_stale() == []
    _quiet_for(debate, 50)
    assert debates_resume_stale() == [debate.pk]


def test_a_finished_debate_is_never_resumed(make_debate, sent) -> None:
    debate = make_debate()
    Debate.objects.filter(pk=debate.pk).update(status="cancelled")
    _quiet_for(debate, 3600)
    assert debates_resume_stale() == []


def test_a_completed_debate_whose_execution_step_never_ran_is_resumed_with_it_alone(
    make_debate, sent
) -> None:
    # given two completed debates that execute automatically, quiet for an hour: the
    # worker of one died between its consensus and its execution step; the other's
    # execution step recorded its outcome
    lost, executed = make_debate(), make_debate()
    Debate.objects.filter(pk__in=[lost.pk, executed.pk]).update(
        status="completed", auto_execute=True
    )
    Debate.objects.filter(pk=executed.pk).update(step_outcomes={"execution": {"status": "done"}})
    for debate in (lost, executed):
        _quiet_for(debate, 3600)
    # when the watchdog looks, only the first is resumed, with its execution step alone
    assert debates_resume_stale() == [lost.pk]
    (canvas,) = sent
    assert [task.task for task in canvas.tasks] == ["traders.debate_execute"]
    assert canvas.tasks[0].args == (lost.pk,)


def test_beat_looks_every_third_of_the_setting() -> None:
    schedule = "settings.CELERY_BEAT_SCHEDULE['debates-resume-stale']['schedule']"
    assert setting_in_process(schedule, DEBATE_STALE_AFTER_S="12") == "4"
