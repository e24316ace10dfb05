"""Publish events from a process of its own, as a worker does (used by the stream tests).

    python -m tests.streams.publisher CHANNEL COUNT [START]

publishes ``COUNT`` ``round_start`` events ``{"round": START + i}`` through
``arena.sse.publish_on_commit``, each in its own transaction.
"""

from __future__ import annotations

import sys


def main(argv: list[str]) -> None:
    """Publish the events named by the command line."""
    import django

    django.setup()
    from django.db import transaction

    from arena.sse import publish_on_commit

    channel, count = argv[0], int(argv[1])
    start = int(argv[2]) if len(argv) > 2 else 0
    for index in range(start, start + count):
        with transaction.atomic():
            publish_on_commit(channel, "round_start", {"round": index})


if __name__ == "__main__":
    main(sys.argv[1:])
