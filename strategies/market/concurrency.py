"""Run independent market-data requests side by side, bounded by the source's concurrency."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

T = TypeVar("T")


def run_all(tasks: Sequence[Callable[[], T]], max_workers: int) -> list[T | Exception]:
    """Run ``tasks``, at most ``max_workers`` at a time, and return each result or error.

    Results come back in task order; an exception a task raised takes its place, so one
    failing request never hides the others. With one worker, tasks run in this thread.
    """
    if max_workers <= 1 or len(tasks) <= 1:
        return [_outcome(task) for task in tasks]
    with ThreadPoolExecutor(
        max_workers=min(max_workers, len(tasks)), thread_name_prefix="market"
    ) as pool:
        return list(pool.map(_outcome, tasks))


def _outcome(task: Callable[[], T]) -> T | Exception:
    try:
        return task()
    except Exception as error:
        return error
