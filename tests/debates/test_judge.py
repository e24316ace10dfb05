"""The judge's steps against the fake model server: summaries reach later rounds' prompts
instead of the history, a failing judge never fails its debate, three judges give the
median, and weighting by judge turns a tie.

Every step runs in the order a debate's plan runs them (turns, a summary after each
round but the last, votes, the scores, the consensus), called directly in this process.
"""

from __future__ import annotations

import json

import pytest

from debates.models import Debate, DebateStatus, Decision, JudgeCall, JudgeScore, Message
from debates.services import (
    consensus_finalize,
    debate_prepare,
    judge_final_run,
    judge_round_run,
    turn_run,
    vote_run,
)
from debates.services.judge import round_summary_text
from tests.fakes.llm_server import Reply

pytestmark = pytest.mark.django_db(transaction=True)

JUDGE_MODEL = "fake-judge"


def summary_answer(round_number: int) -> str:
    return (
        f"<points>SUMMARY-MARKER-{round_number}: P1 is long on the EMA cross.</points>"
        "<agreements>All three are long.</agreements>"
        "<disagreements>None open.</disagreements>"
    )


def scores_answer(values: dict[str, tuple[int, int, int]]) -> str:
    entries = [
        {
            "participant": label,
            "market_data": market,
            "market_data_reason": f"{label} cites figures.",
            "answers": answers,
            "answers_reason": f"{label} answers.",
            "consistency": consistency,
            "consistency_reason": f"{label} is consistent.",
        }
        for label, (market, answers, consistency) in values.items()
    ]
    return f"<scores>{json.dumps(entries)}</scores>"


def run_in_order(debate: Debate, *, judge: bool = True) -> Debate:
    """Run every step of a pending debate in the order of its plan, in this process."""
    Debate.objects.filter(pk=debate.pk).update(status=DebateStatus.RUNNING, current_round=1)
    assert debate_prepare(debate_id=debate.pk)
    seats = list(debate.participants.order_by("speak_order").values_list("pk", flat=True))
    for round_number in range(1, debate.max_rounds + 1):
        for seat in seats:
            turn_run(
                debate_id=debate.pk, round_number=round_number, participant_id=seat, holder="t"
            )
        if judge and round_number < debate.max_rounds:
            judge_round_run(debate_id=debate.pk, round_number=round_number, holder="t")
    for seat in seats:
        vote_run(debate_id=debate.pk, participant_id=seat, holder="t")
    if judge:
        judge_final_run(debate_id=debate.pk, holder="t")
    consensus_finalize(debate_id=debate.pk)
    return Debate.objects.get(pk=debate.pk)


def turn_prompts(llm, round_number: int) -> list[str]:
    return [
        r.prompt
        for r in llm.requests
        if r.body.get("model") != JUDGE_MODEL and f"round {round_number}/" in r.prompt
    ]


def script_judge(llm, scores: dict[str, tuple[int, int, int]], rounds: int = 3) -> None:
    """Make the fake model server answer the judge of a debate of ``rounds`` rounds: its
    summary of each round but the last (each with its marker), then ``scores``."""
    for round_number in range(1, rounds):
        llm.add_rule(
            Reply.answer(summary_answer(round_number), match=f"Summarise round {round_number}")
        )
    llm.add_rule(Reply.answer(scores_answer(scores), match="Score every participant"))


def judge_requests(llm) -> list:
    return [r for r in llm.requests if r.body.get("model") == JUDGE_MODEL]


def test_summaries_reach_the_next_rounds_prompts_and_the_full_history_does_not(
    llm, make_debate, judge_model
):
    # given a 3x3 debate with a judge whose summaries carry a marker per round
    script_judge(llm, {"P1": (8, 7, 9), "P2": (5, 5, 5), "P3": (2, 3, 4)})
    debate = make_debate(rounds=3, judge={"ai_model": judge_model.pk})
    # when it runs
    debate = run_in_order(debate)
    # then it completed, with one summary call per round but the last and one scoring call
    assert debate.status == DebateStatus.COMPLETED
    calls = list(JudgeCall.objects.filter(debate=debate).values_list("kind", "round", "judge"))
    assert calls == [("round_summary", 1, 0), ("round_summary", 2, 0), ("scores", 3, 0)]
    assert [r.body["temperature"] for r in judge_requests(llm)] == [0.4, 0.4, 0.4]
    # and each later turn carries the previous round's summary, not the earlier messages
    for round_number in (2, 3):
        prompts = turn_prompts(llm, round_number)
        assert len(prompts) == 3
        for prompt in prompts:
            assert f"The judge's summary of round {round_number - 1}" in prompt
            assert f"SUMMARY-MARKER-{round_number - 1}" in prompt
            assert f"SUMMARY-MARKER-{round_number - 2}" not in prompt
            assert "## The debate so far" not in prompt
            assert "reasoning: Fake model answer" not in prompt
            assert "## Latest positions of the participants\n[round " in prompt
            assert "Tally of the round: " in prompt
    # and the judge read every turn of the round it summarised
    summary_prompts = [r.prompt for r in judge_requests(llm)][:2]
    assert summary_prompts[0].count("[round 1] P") == 3
    assert "SUMMARY-MARKER-1" in summary_prompts[1]
    # and the scores are stored per participant, normalised to 0..1
    scores = list(
        JudgeScore.objects.filter(debate=debate)
        .order_by("participant__speak_order")
        .values_list("score", "judges", "missing")
    )
    assert scores == [(0.8, 1, ""), (0.5, 1, ""), (0.3, 1, "")]


def test_a_judge_answering_500_leaves_a_completed_debate_with_full_history(
    llm, make_debate, judge_model
):
    # given a judge whose every call fails with a server error
    llm.add_rule(Reply.server_error(match="You are the judge of a debate"))
    debate = make_debate(rounds=3, judge={"ai_model": judge_model.pk})
    # when it runs
    debate = run_in_order(debate)
    # then the debate completed with every turn and decision
    assert debate.status == DebateStatus.COMPLETED
    assert Message.objects.filter(debate=debate, status="ok").count() == 9
    assert Decision.objects.filter(debate=debate).count() == len(debate.symbols)
    # and later rounds got the full history
    for round_number in (2, 3):
        for prompt in turn_prompts(llm, round_number):
            assert "## The debate so far\n[round 1] P1 bull:" in prompt
            assert "judge's summary" not in prompt
    # and the failed calls are stored, and the scores recorded as missing with the reason
    statuses = set(JudgeCall.objects.filter(debate=debate).values_list("status", flat=True))
    assert statuses == {"error"}
    assert round_summary_text(debate_id=debate.pk, round_number=1) == ""
    missing = set(JudgeScore.objects.filter(debate=debate).values_list("score", "missing"))
    assert missing == {(None, "judge call failed: server_error")}
    assert JudgeScore.objects.filter(debate=debate).count() == 3


def test_three_judges_give_the_median_per_item_at_spread_temperatures(
    llm, make_debate, judge_model
):
    # given three scoring answers, the third far off on P1's market data
    for values in (
        {"P1": (6, 8, 9), "P2": (4, 4, 4)},
        {"P1": (7, 8, 9), "P2": (4, 5, 4)},
        {"P1": (1, 8, 9), "P2": (4, 6, 4)},
    ):
        llm.add_rule(Reply.answer(scores_answer(values), match="Score every participant", times=1))
    debate = make_debate(
        personalities=("bull", "bear"), rounds=2, judge={"ai_model": judge_model.pk, "count": 3}
    )
    # when it runs
    debate = run_in_order(debate)
    # then three scoring calls went out at spread temperatures, after one summary call
    assert [r.body["temperature"] for r in judge_requests(llm)] == [0.4, 0.2, 0.7, 1.2]
    # and each item is the median of the three judges, with their agreement
    p1, p2 = JudgeScore.objects.filter(debate=debate).order_by("participant__speak_order")
    assert {name: item["value"] for name, item in p1.items.items()} == {
        "market_data": 6.0,
        "answers": 8.0,
        "consistency": 9.0,
    }
    assert (p1.score, p1.judges) == (pytest.approx(23 / 30, abs=1e-4), 3)
    assert p1.agreement == pytest.approx((0.4 + 1 + 1) / 3, abs=1e-4)
    assert p2.items["answers"] == {"value": 5.0, "reason": "P2 answers."}


def test_weighting_by_judge_turns_a_scripted_tie(llm, make_debate, judge_model, user):
    # given two participants split long against short at the same confidence
    for label, action in (("P1", "open_long"), ("P2", "open_short")):
        text = json.dumps(
            [
                {"symbol": symbol, "action": action, "confidence": 80, "leverage": 3}
                for symbol in ("BTCUSDT", "ETHUSDT", "SOLUSDT")
            ]
        )
        llm.add_rule(
            Reply.answer(
                f"<reasoning>{label}.</reasoning><decision>{text}</decision>",
                match=f"labelled {label} are your own",
            )
        )
    llm.add_rule(
        Reply.answer(
            scores_answer({"P1": (9, 9, 9), "P2": (3, 3, 3)}), match="Score every participant"
        )
    )
    results = {}
    for weighting in ("confidence", "judge"):
        debate = make_debate(
            personalities=("bull", "bear"),
            rounds=2,
            judge={"ai_model": judge_model.pk},
            weighting=weighting,
        )
        # when each runs
        debate = run_in_order(debate)
        results[weighting] = Decision.objects.get(debate=debate, is_primary=True)
    # then by confidence it is no consensus, and by judge the better-judged side wins
    assert results["confidence"].action == "wait"
    assert results["confidence"].reason.startswith("no consensus: open_long and open_short tie")
    assert results["judge"].action == "open_long"
    assert results["judge"].scores == {"open_long": 0.72, "open_short": 0.24}


def test_each_judge_step_calls_once_however_often_it_runs(llm, make_debate, judge_model):
    # given a debate run through, with its judge
    debate = run_in_order(make_debate(rounds=2, judge={"ai_model": judge_model.pk}))
    before = len(judge_requests(llm))
    # when the judge's steps run again (a redelivered task, a resumed plan)
    judge_round_run(debate_id=debate.pk, round_number=1, holder="again")
    Debate.objects.filter(pk=debate.pk).update(status=DebateStatus.VOTING)
    judge_final_run(debate_id=debate.pk, holder="again")
    # then no call went out and nothing was stored twice
    assert (before, len(judge_requests(llm))) == (2, 2)
    assert JudgeCall.objects.filter(debate=debate).count() == 2
    assert JudgeScore.objects.filter(debate=debate).count() == 3


def test_without_a_judge_the_judge_steps_do_nothing(llm, make_debate):
    # given a debate with no judge
    debate = make_debate(rounds=2)
    # when it runs with the judge's steps in its plan
    debate = run_in_order(debate)
    # then no judge call went out, and the debate completed as before
    assert debate.status == DebateStatus.COMPLETED
    assert len(llm.requests) == 3 * 2 + 3
    assert not JudgeCall.objects.filter(debate=debate).exists()
    assert not JudgeScore.objects.filter(debate=debate).exists()


def test_a_judge_in_json_schema_mode_is_asked_under_the_judges_schemas(
    llm, make_debate, judge_model
):
    # given a judge model decoding under a JSON schema, answering in that form
    judge_model.output_mode = "json_schema"
    judge_model.save()
    summary = {"points": "JSON-POINTS", "agreements": "all long", "disagreements": "none"}
    llm.add_rule(Reply.answer(json.dumps(summary), match="Summarise round 1"))
    llm.add_rule(
        Reply.answer(
            json.dumps(
                {
                    "scores": [
                        {"participant": "P1", "market_data": 4, "answers": 4, "consistency": 4}
                    ]
                }
            ),
            match="Score every participant",
        )
    )
    debate = run_in_order(make_debate(rounds=2, judge={"ai_model": judge_model.pk}))
    # then each call named its own schema and the answers were read
    formats = [r.body["response_format"]["json_schema"] for r in judge_requests(llm)]
    assert [f["name"] for f in formats] == ["judge_summary_answer", "judge_scores_answer"]
    assert formats[0]["schema"]["required"] == ["points", "agreements", "disagreements"]
    assert formats[1]["schema"]["properties"]["scores"]["minItems"] == 3
    assert "JSON-POINTS" in round_summary_text(debate_id=debate.pk, round_number=1)
    scores = JudgeScore.objects.filter(debate=debate).order_by("participant__speak_order")
    assert [score.score for score in scores] == [0.4, None, None]
    assert scores[1].missing == "no judge scored this participant"
