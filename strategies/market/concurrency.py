"""Run independent market-data requests side by side, bounded by the source's concurrency."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TypeVar

from strategies.market.exceptions import MarketDataError

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


def run_requests(tasks: Sequence[Callable[[], T]], max_workers: int) -> list[T | MarketDataError]:
    """Run ``tasks`` as ``run_all`` does; return each result or its ``MarketDataError``.

    Any other error is a fault, not missing data: the first one, in task order, is raised.
    """
    outcomes = run_all(tasks, max_workers)
    for outcome in outcomes:
        if isinstance(outcome, Exception) and not isinstance(outcome, MarketDataError):
            raise outcome
    return outcomes  # type: ignore[return-value]  # every error left is a MarketDataError


def _outcome(task: Callable[[], T]) -> T | Exception:
    try:
        return task()
    except Exception as error:
        return error
