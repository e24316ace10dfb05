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
    from django.db import transaction

    from arena.celery import app
    from debates.models import Debate, DebateStatus
    from debates.services import (
        DebateInput,
        calls,
        consensus_finalize,
        debate_create,
        debate_prepare,
        turn_run,
        vote_run,
    )
    from strategies.models import Strategy

    sizes: list[int] = []
    real_complete = calls.complete

    def measured_complete(config, request, **kwargs):
        sizes.append(len(request.system) + len(request.user))
        return real_complete(config, request, **kwargs)

    strategy = Strategy.objects.create(owner=owner, name="bench prompts")
    debate = debate_create(
        owner=owner,
        data=DebateInput(
            name=f"prompts {participants}x{rounds}",
            strategy=strategy.pk,
            symbol="BTCUSDT",
            max_rounds=rounds,
            participants=[
                {"ai_model": model.pk, "personality": p} for p in PERSONALITIES[:participants]
            ],
        ),
    )
    with transaction.atomic():
        Debate.objects.filter(pk=debate.pk).update(status=DebateStatus.RUNNING, current_round=1)
    debate_prepare(debate_id=debate.pk)
    seats = list(debate.participants.order_by("speak_order"))
    calls.complete = measured_complete
    try:
        for round_number in range(1, rounds + 1):
            for seat in seats:
                turn_run(
                    debate_id=debate.pk,
                    round_number=round_number,
                    participant_id=seat.pk,
                    holder="bench",
                )
        for seat in seats:
            vote_run(debate_id=debate.pk, participant_id=seat.pk, holder="bench")
        consensus_finalize(debate_id=debate.pk)
    finally:
        calls.complete = real_complete
        app.control.purge()
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
