"""The prompt cache's share of one 3x3 debate: how much of each call's input an earlier
call of the same debate already sent, from its first character on.

A provider's prompt cache serves the longest prefix of a call's messages (system text,
then user text) that an earlier call sent. The debate runs step by step through the
real services with the simulated model on the bundled dataset; every call's input is
taken on its way to the model, and for each call the longest common prefix with any
earlier call is counted. The baseline, measured on the same calls in the same run, puts
each call's own part first (the user text, then the system text), the order in which
nothing a seat says before its market data and rules is shared.

    python -m bench.prefix [--judge]

With ``--judge`` the debate has a judge (the simulated model), whose round summaries and
scoring call are counted as calls of the debate too.
"""

from __future__ import annotations

import argparse
import os

from bench.common import setup_django

PERSONALITIES = ("bull", "bear", "analyst")


def _common(a: str, b: str) -> int:
    # Characters are what a prompt cache matches, not path components.
    return len(os.path.commonprefix([a, b]))  # noqa: RUF071


def shared_share(texts: list[str]) -> tuple[int, int]:
    """Return (characters in a prefix an earlier text already held, all characters)."""
    shared = sum(
        max((_common(text, earlier) for earlier in texts[:n]), default=0)
        for n, text in enumerate(texts)
    )
    return shared, sum(len(text) for text in texts)


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge", action="store_true", help="give the debate a judge")
    args = parser.parse_args(argv)
    setup_django()
    from django.contrib.auth import get_user_model

    from bench.orchestration import make_debate, run_steps_in_order
    from debates.models import AIModel, Debate
    from debates.services import calls

    owner, _ = get_user_model().objects.get_or_create(username="bench")
    model, _ = AIModel.objects.get_or_create(
        owner=owner, name="bench simulated", provider="simulated", model_name="simulated-v1"
    )
    sent: list[tuple[str, str]] = []
    real_complete = calls.complete

    def recording_complete(config, request, **kwargs):
        sent.append((request.system, request.user))
        return real_complete(config, request, **kwargs)

    fields = {"judge": {"ai_model": model.pk}} if args.judge else {}
    debate = make_debate(owner, [model] * 3, PERSONALITIES, 3, **fields)
    calls.complete = recording_complete
    try:
        run_steps_in_order(debate)
    finally:
        calls.complete = real_complete
    ours = shared_share([system + user for system, user in sent])
    baseline = shared_share([user + system for system, user in sent])
    result = {
        "judge": args.judge,
        "status": Debate.objects.get(pk=debate.pk).status,
        "calls": len(sent),
        "chars": ours[1],
        "shared_chars": ours[0],
        "shared_share": round(ours[0] / ours[1], 3),
        "baseline_shared_share": round(baseline[0] / baseline[1], 3),
    }
    print(
        f"3x3 debate{' with a judge' if args.judge else ''} ({result['status']}): "
        f"{result['calls']} calls, {ours[1]:,} input chars; "
        f"in a prefix an earlier call sent: {ours[0]:,} ({result['shared_share']:.1%}); "
        f"own part first (baseline): {baseline[0]:,} ({result['baseline_shared_share']:.1%})"
    )
    return result


if __name__ == "__main__":
    main()
