"""Prompt size per debate: total characters sent to the models for 3x3, 5x5 and 6x5.

Each debate runs step by step through the real services with the simulated model
(every participant writes a full answer), on the bundled dataset; every prompt the
services build is measured on its way to the model. Growth must be linear in
rounds x participants: the per-turn figure must stay flat as debates grow.

    python -m bench.prompts
"""

from __future__ import annotations

from bench.common import setup_django

SHAPES = ((3, 3), (5, 5), (6, 5))  # (participants, rounds)
PERSONALITIES = ("bull", "bear", "analyst", "contrarian", "risk_manager", "analyst")


def measure(owner, model, participants: int, rounds: int) -> dict:
    from bench.orchestration import make_debate, run_steps_in_order
    from debates.models import Debate
    from debates.services import calls

    sizes: list[int] = []
    real_complete = calls.complete

    def measured_complete(config, request, **kwargs):
        sizes.append(len(request.system) + len(request.user))
        return real_complete(config, request, **kwargs)

    debate = make_debate(owner, [model] * participants, PERSONALITIES[:participants], rounds)
    calls.complete = measured_complete
    try:
        run_steps_in_order(debate)
    finally:
        calls.complete = real_complete
    turns = participants * rounds
    return {
        "participants": participants,
        "rounds": rounds,
        "calls": len(sizes),
        "total_chars": sum(sizes),
        "largest_prompt": max(sizes),
        "chars_per_turn_slot": round(sum(sizes) / turns),
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
    results = [measure(owner, model, p, r) for p, r in SHAPES]
    print("Prompt characters per debate (simulated model, bundled dataset, 3 coins)")
    for row in results:
        bound = max_prompt_chars(row["rounds"], row["participants"], 3)
        print(
            f"  {row['participants']}x{row['rounds']}: {row['calls']} calls, "
            f"{row['total_chars']:,} chars in all, largest prompt {row['largest_prompt']:,} "
            f"(bound {bound:,}), {row['chars_per_turn_slot']:,} per participant-round"
        )
    return results


if __name__ == "__main__":
    main()
