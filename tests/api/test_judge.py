"""The judge settings of a debate through the API: created, shown in the detail, and
refused with a 400 naming the field (nothing written) when wrong."""

import pytest

from debates.models import Debate, Participant
from tests.api.conftest import debate_body, refusal
from tests.debates.factories import (
    AIModelFactory,
    DebateFactory,
    JudgeCallFactory,
    JudgeScoreFactory,
    ParticipantFactory,
)

pytestmark = pytest.mark.django_db


def test_create_with_a_judge_shows_it_in_the_detail_and_it_is_no_voter(api, seeded):
    # given a body with a judge of three calls, weighing votes by its scores
    judge = seeded["models"][0]
    body = debate_body(seeded, judge={"ai_model": judge.pk, "count": 3}, weighting="judge")
    # when it is posted
    response = api.post("/api/debates", body, format="json")
    # then the debate stores the judge, and the detail shows it with nothing judged yet
    assert response.status_code == 201
    detail = response.json()
    assert detail["weighting"] == "judge"
    assert detail["judge"] == {
        "ai_model": judge.pk,
        "ai_model_name": judge.name,
        "simulated": True,
        "count": 3,
        "summaries": [],
        "scores": [],
        "calls": [],
    }
    debate = Debate.objects.get()
    assert (debate.judge_model_id, debate.judge_count, debate.weighting) == (judge.pk, 3, "judge")
    assert len(detail["participants"]) == 2


def test_a_debate_without_a_judge_shows_none(api, seeded):
    # given / when
    response = api.post("/api/debates", debate_body(seeded, judge=None), format="json")
    # then
    assert response.status_code == 201
    assert (response.json()["judge"], response.json()["weighting"]) == (None, "confidence")


@pytest.mark.parametrize(
    ("change", "fields"),
    [
        (
            lambda s, o: {"judge": {"ai_model": AIModelFactory(owner=o).pk}},
            lambda b: {"judge.ai_model": [f"No such AI model: {b['judge']['ai_model']}."]},
        ),
        (
            lambda s, o: {
                "judge": {
                    "ai_model": AIModelFactory(
                        owner=s["strategy"].owner, name="Off", enabled=False
                    ).pk
                }
            },
            {"judge.ai_model": ["AI model 'Off' is disabled."]},
        ),
        (
            lambda s, o: {"judge": {"ai_model": s["models"][0].pk, "count": 2}},
            {"judge.count": ["Must be 1 or 3."]},
        ),
        (
            lambda s, o: {"judge": {"ai_model": s["models"][0].pk, "count": "3"}},
            {"judge.count": ["A valid integer is required."]},
        ),
        (
            lambda s, o: {"judge": {"model": s["models"][0].pk}},
            {"judge.model": ["Unknown field."], "judge.ai_model": ["This field is required."]},
        ),
        (
            lambda s, o: {"judge": 5},
            {"judge": ["Invalid data. Expected a dictionary, but got int."]},
        ),
        (lambda s, o: {"weighting": "judge"}, {"weighting": ["Weighting by judge needs a judge."]}),
        (
            lambda s, o: {"weighting": "loudest"},
            {"weighting": ["'loudest' is not one of: confidence, judge, calibrated."]},
        ),
    ],
    ids=[
        "other-users-model",
        "disabled-model",
        "count-two",
        "count-as-string",
        "misspelt-key",
        "not-an-object",
        "judge-weighting-without-judge",
        "unknown-weighting",
    ],
)
def test_bad_judge_settings_are_refused_naming_the_field_and_nothing_is_written(
    api, seeded, other_user, change, fields
):
    # given a body with one thing wrong in its judge settings
    body = debate_body(seeded, **change(seeded, other_user))
    # when it is posted
    response = api.post("/api/debates", body, format="json")
    # then it is refused, naming the field, and nothing is written
    assert response.status_code == 400
    expected = fields(body) if callable(fields) else fields
    assert response.json() == refusal(expected)
    assert (Debate.objects.count(), Participant.objects.count()) == (0, 0)


def test_the_detail_shows_summaries_scores_and_calls_without_prompts(api, user):
    # given a debate whose judge summarised round 1, failed round 2, and scored P1
    debate = DebateFactory(owner=user, judge_model=AIModelFactory(owner=user), max_rounds=3)
    participant = ParticipantFactory(debate=debate, speak_order=0)
    JudgeCallFactory(debate=debate, system="SYSTEM-PROMPT", user="USER-PROMPT")
    JudgeCallFactory(
        debate=debate,
        round=2,
        status="error",
        content="",
        parse_status="none",
        result=None,
        error={"code": "server_error", "message": "The model's server failed (HTTP 500)."},
    )
    JudgeScoreFactory(participant=participant)
    # when the detail is read
    judge = api.get(f"/api/debates/{debate.pk}").json()["judge"]
    # then
    assert judge["summaries"] == [
        {
            "round": 1,
            "status": "partial",
            "text": "Points made: P1 is long.",
            "tally": {"BTCUSDT": {"open_long": 1}},
            "missing": "",
        },
        {
            "round": 2,
            "status": "error",
            "text": "",
            "tally": {},
            "missing": "the judge call failed: server_error",
        },
    ]
    assert judge["scores"] == [
        {
            "participant": participant.pk,
            "score": 0.7,
            "items": {
                name: {"value": 7.0, "reason": "one sentence"}
                for name in ("market_data", "answers", "consistency")
            },
            "agreement": None,
            "judges": 1,
            "missing": "",
        }
    ]
    assert [(c["kind"], c["round"], c["status"]) for c in judge["calls"]] == [
        ("round_summary", 1, "ok"),
        ("round_summary", 2, "error"),
    ]
    assert "SYSTEM-PROMPT" not in str(judge) and "USER-PROMPT" not in str(judge)
