"""Prompt size per debate: total characters sent to the models for 3x3, 5x5 and 6x5,
without a judge (the baseline) and with one, in the same run.

Each debate runs step by step through the real services with the simulated model
(every participant, and the judge, writes a full answer), on the bundled dataset; every
prompt the services build is measured on its way to the model. Without a judge every
turn sees every earlier message, so the total grows with the square of rounds x
participants; with a judge, later rounds carry its summary and the latest positions
instead, so the largest turn prompt must stay flat in rounds.

    python -m bench.prompts
"""

from __future__ import annotations

from collections import defaultdict

from bench.common import setup_django

SHAPES = ((3, 3), (5, 5), (6, 5))  # (participants, rounds)
PERSONALITIES = ("bull", "bear", "analyst", "contrarian", "risk_manager", "analyst")
TARGET_5X5 = 0.35  # of REFERENCE_5X5
REFERENCE_5X5 = 557_168
"""The 5x5 total without a judge when the target was set (issue 25): the target is a
fixed number of characters, 0.35 of it, whatever later changes do to the baseline."""


def measure(owner, model, participants: int, rounds: int, *, judge: bool) -> dict:
    from bench.orchestration import make_debate, run_steps_in_order
    from debates.models import Debate
    from debates.services import calls

    sizes: list[tuple[str, int, int]] = []  # (kind, round, characters)
    real_complete = calls.complete

    def measured_complete(config, request, **kwargs):
        sizes.append((request.kind, request.round, len(request.system) + len(request.user)))
        return real_complete(config, request, **kwargs)

    fields = {"judge": {"ai_model": model.pk}} if judge else {}
    debate = make_debate(
        owner, [model] * participants, PERSONALITIES[:participants], rounds, **fields
    )
    calls.complete = measured_complete
    try:
        run_steps_in_order(debate)
    finally:
        calls.complete = real_complete
    by_round: dict[int, int] = defaultdict(int)
    for kind, round_number, size in sizes:
        if kind == "turn":
            by_round[round_number] = max(by_round[round_number], size)
    debaters = [size for kind, _, size in sizes if not kind.startswith("judge")]
    judged = [size for kind, _, size in sizes if kind.startswith("judge")]
    return {
        "participants": participants,
        "rounds": rounds,
        "judge": judge,
        "calls": len(sizes),
        "judge_calls": len(judged),
        "total_chars": sum(debaters) + sum(judged),
        "participant_chars": sum(debaters),
        "judge_chars": sum(judged),
        "largest_prompt": max(debaters),
        "largest_turn_by_round": [by_round[r] for r in sorted(by_round)],
        "status": Debate.objects.get(pk=debate.pk).status,
    }


def main() -> list[dict]:
    setup_django()
    from django.contrib.auth import get_user_model

    from debates.engine.prompts import max_prompt_chars
    from debates.models import AIModel

    owner, _ = get_user_model().objects.get_or_create(username="bench")
    model, _ = AIModel.objects.get_or_create(
        owner=owner, name="bench simulated", provider="simulated", model_name="simulated-v1"
    )
    results = []
    print("Prompt characters per debate (simulated model, bundled dataset, 3 coins)")
    for participants, rounds in SHAPES:
        base = measure(owner, model, participants, rounds, judge=False)
        judged = measure(owner, model, participants, rounds, judge=True)
        results += [base, judged]
        bound = max_prompt_chars(rounds, participants, 3)
        shape = f"{participants}x{rounds}"
        print(
            f"  {shape} without a judge: {base['calls']} calls, {base['total_chars']:,} chars, "
            f"largest prompt {base['largest_prompt']:,} (bound {bound:,}); largest turn by "
            f"round {_by_round(base)}"
        )
        print(
            f"  {shape} with a judge:    {judged['calls']} calls, "
            f"{judged['total_chars']:,} chars ({judged['participant_chars']:,} to the "
            f"participants, {judged['judge_chars']:,} in {judged['judge_calls']} judge calls), "
            f"largest prompt {judged['largest_prompt']:,}; largest turn by round "
            f"{_by_round(judged)}"
        )
        print(
            f"  {shape} ratio with/without: {judged['total_chars'] / base['total_chars']:.3f} "
            f"in all, {judged['participant_chars'] / base['total_chars']:.3f} to the "
            "participants"
        )
        if shape == "5x5":
            share = judged["total_chars"] / REFERENCE_5X5
            print(
                f"  5x5 with a judge against the reference {REFERENCE_5X5:,}: {share:.3f} in all "
                f"(target at most {TARGET_5X5}: {TARGET_5X5 * REFERENCE_5X5:,.0f} chars; "
                f"{'met' if share <= TARGET_5X5 else 'NOT met'})"
            )
        for row in (base, judged):
            if row["status"] != "completed":
                raise RuntimeError(f"a {shape} debate ended {row['status']}")
    return results


def _by_round(row: dict) -> str:
    return "/".join(f"{size:,}" for size in row["largest_turn_by_round"])


if __name__ == "__main__":
    main()
