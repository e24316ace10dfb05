"""Running a backtest: a tick that keeps its debates going, and the watchdog of ticks.

A run is a chain of ``backtests.tick`` tasks, each sent by the one before it. A tick,
under the backtest's row lock: moves a pending backtest to running; counts the steps
whose debates have ended (progress) and reviews them; creates and starts, through the
debate services, the debates of the next steps while fewer than
``BACKTEST_DEBATES_IN_FLIGHT`` are running; once every step's debate has ended,
simulates the portfolio and stores the report. It then sends the next tick,
``BACKTEST_TICK_S`` later. A step's debate advances the run the same way at once when
it ends, and when its votes wait for their book (``backtest_debate_moved``: each step's
debate names the task ``backtests.debate_moved``, which the debate's transitions send),
so the next step goes on without waiting for a tick; the ticks stay the run's clock and
catch a task that was lost.

The debates of a backtest run side by side, within the model-call cap like every
debate; each learns nothing of the backtest, which reads their stored status. At
``book: aware`` (the default) each step's votes see the simulated account at its
instant (``backtests.services.books``): its debate awaits its book, its rounds run
ahead, and its votes start once every earlier step has ended, when the advance gives it
its book, so the votes run in time order. At ``book: blind`` no debate holds an
account and the steps are independent (but at ``weighting: calibrated``, below).

A step's debate is reviewed (``evaluations``, over the backtest's horizon) as soon as it
has ended, by the advance that counts it. The debates of a backtest at ``weighting: calibrated``
read those reviews: a debate weighs its voters by the reviews of the backtest's own
earlier steps whose outcome was known by its instant (its instant plus the horizon), and
so that it reads every one of them, however the debates happened to overlap, a step
starts only once every step whose outcome is known by its instant has ended. With the
horizon one step long (the default), such a backtest debates one step at a time; run
again, it decides the same.

A backtest with a ``baseline`` begins each step's budget-matched baseline once its
debate has ended and been reviewed (``backtests.services.baseline``); the step counts as
done once its baseline has ended too, which advances the run as a debate's end does.

At ``level: auto`` a tick first asks of each next step whether it is quiet (L0, the rule of
a schedule's quiet firing): a quiet step is recorded skipped with its reason, starts no
debate and makes no model call, and counts as done at once.

Each step has one debate (or its recorded skip), whatever happens: its ``BacktestStep``
row is unique per step index and made with the debate in one transaction. A tick carries
the run's token; a tick whose token is no longer the backtest's does nothing, so when the watchdog
(``backtests_resume_stale``: beat, and each worker as it starts) replaces a chain that
stopped (its worker killed, its message lost), the old chain, if it was only late, ends
at its next tick.
"""

from __future__ import annotations

import logging
import secrets
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from arena.exceptions import ApplicationError
from arena.queries import one_or_none
from arena.worker import send_on_commit
from backtests.models import (
    ACTIVE_STATUSES,
    Backtest,
    BacktestStatus,
    BacktestStep,
    BookMode,
    StepSkip,
)
from backtests.services import transitions
from backtests.services.baseline import baselines_move
from backtests.services.books import step_book
from backtests.services.lifecycle import debates_cancel, step_instants
from backtests.services.quiet import QuietSteps
from backtests.services.reports import backtest_report
from debates.models import TERMINAL_STATUSES as DEBATE_TERMINAL
from debates.models import DebateLevel, DebateStatus, Weighting
from debates.services import DebateInput, debate_create, debate_start
from debates.services.books import debate_book_give
from evaluations.services import DEFAULT_FLAT_PCT, ReviewSettings, debates_review, is_due
from strategies.models import MarketSource

logger = logging.getLogger(__name__)


def _send_tick(backtest: Backtest, *, countdown: float) -> None:
    from backtests.tasks import backtest_tick_task

    send_on_commit(backtest_tick_task.si(backtest.pk, backtest.tick_token).set(countdown=countdown))


def backtest_tick(*, backtest_id: int, token: str) -> None:
    """Advance a backtest's run once (see the module docstring) and send the next tick;
    idempotent."""
    with transaction.atomic():
        backtest = _locked(backtest_id)
        if backtest is None or backtest.tick_token != token:
            return
        if _advance(backtest):
            transitions.ticked(backtest)
            _send_tick(backtest, countdown=settings.BACKTEST_TICK_S)


def backtest_debate_moved(*, debate_id: int) -> None:
    """Advance the active backtest whose step's debate ``debate_id`` ended or awaits its
    book, or whose baseline ended, without waiting for the next tick: the next step's
    debate starts, a step's votes get their book, or the step counts as done, at once.
    The tick chain goes on as it was (it also catches a task that was lost); idempotent."""
    backtest_id = one_or_none(  # a debate is the step of one backtest at most
        BacktestStep.objects.values_list("backtest_id", flat=True),
        debate_id=debate_id,
        backtest__status__in=ACTIVE_STATUSES,
    )
    if backtest_id is None:
        return
    with transaction.atomic():
        backtest = _locked(backtest_id)
        if backtest is not None:
            _advance(backtest)


def _locked(backtest_id: int) -> Backtest | None:
    """Return the backtest, its row locked for the transaction, or None when it is gone."""
    locked = Backtest.objects.select_for_update(of=("self",)).select_related("strategy")
    return one_or_none(locked, pk=backtest_id)


def _advance(backtest: Backtest) -> bool:
    """Under the backtest's row lock: start a pending backtest, review the steps whose
    debates have ended, begin their budget-matched baselines (``baselines_move``), count
    the steps whose debate and baseline have ended (progress), start the next steps'
    debates while
    fewer than ``BACKTEST_DEBATES_IN_FLIGHT`` run (at ``weighting: calibrated``, those
    whose reviews to read have all been made), give its book to the step whose votes
    await it (``book: aware``), and finish the run once every step has ended. Return
    whether the run goes on (it is still active)."""
    if backtest.status not in ACTIVE_STATUSES:
        return False
    now = timezone.now()
    if backtest.status == BacktestStatus.PENDING:
        transitions.started(backtest)
    steps = list(
        BacktestStep.objects.filter(backtest=backtest)
        .order_by("index")
        .values_list(
            "as_of", "debate_id", "debate__status", "debate__review", "debate__awaits_book"
        )
    )
    running = [
        as_of
        for as_of, _, status, _, _ in steps
        if status is not None and status not in DEBATE_TERMINAL
    ]
    waiting = _awaiting_book(backtest, steps)
    if not _review_ended(backtest, steps, now=now):
        return False
    reviewed = [debate for _, debate, status, _, _ in steps if status in DEBATE_TERMINAL]
    ended = len(steps) - len(running) - baselines_move(backtest, ended=reviewed, now=now)
    if ended != backtest.steps_done:
        transitions.progressed(backtest, steps_done=ended)
    if ended == backtest.steps_total:
        _finish(backtest)
        return False
    goes_on = _start_next(backtest, first=len(steps), running=running)
    if goes_on and waiting is not None:
        index, as_of, debate_id = waiting
        debate_book_give(debate_id=debate_id, book=step_book(backtest, index=index, as_of=as_of))
    return goes_on


def _awaiting_book(backtest: Backtest, steps: list[tuple]) -> tuple[int, datetime, int] | None:
    """Return (index, instant, debate id) of the step whose votes await their book now,
    if any: at ``book: aware``, the first step not ended among ``steps`` (instant,
    debate id, status, review id, awaits its book; in order, read under the lock: every
    step before it has ended and is reviewed by this advance), once its rounds are
    over."""
    if backtest.book != BookMode.AWARE:
        return None
    for index, (as_of, debate_id, status, _, awaits) in enumerate(steps):
        if status in (None, *DEBATE_TERMINAL):
            continue
        return (index, as_of, debate_id) if awaits and status == DebateStatus.VOTING else None
    return None


def _review_settings(backtest: Backtest) -> ReviewSettings:
    strategy = backtest.strategy
    return ReviewSettings(
        backtest.horizon_minutes, strategy.review_flat_pct if strategy else DEFAULT_FLAT_PCT
    )


def _review_ended(backtest: Backtest, steps: list[tuple], *, now: datetime) -> bool:
    """Review the debates of ``steps`` (instant, debate id, status, review id, awaits
    its book) that
    completed and are not reviewed yet, over the backtest's horizon, once they are due
    (a backtest replays the dataset: a step whose horizon passes its end never is). A
    step's debate row another transaction holds is waited for, not skipped: the advance
    that finds every step ended makes the report at once, with every review.

    Return whether the run goes on: a review that cannot be made fails the backtest."""
    try:
        debates_review(
            debate_ids=[
                debate_id
                for as_of, debate_id, status, review_id, _ in steps
                if status == DebateStatus.COMPLETED
                and review_id is None
                and is_due(as_of, MarketSource.DATASET, backtest.horizon_minutes, now=now)
            ],
            settings=_review_settings(backtest),
            wait=True,
        )
    except Exception as exc:
        logger.exception("backtest %s: a step's review could not be made", backtest.pk)
        _fail(backtest, code="review_failed", message=f"{type(exc).__name__}: {exc}")
        return False
    return True


def _start_next(backtest: Backtest, *, first: int, running: list[datetime]) -> bool:
    """Start the debates of the steps from ``first`` while fewer than
    ``BACKTEST_DEBATES_IN_FLIGHT`` run (those of ``running``, their instants); return
    whether the run goes on: a template that no longer makes a debate (a model
    disabled, the strategy deleted) fails the backtest."""
    room = settings.BACKTEST_DEBATES_IN_FLIGHT - len(running)
    if room <= 0:
        return True
    try:
        _start_steps(backtest, first=first, count=room, running=running)
    except ApplicationError as exc:
        _fail(backtest, code="step_refused", message=f"{exc.message} {exc.fields}")
        return False
    return True


def _reads_a_running_step(backtest: Backtest, as_of: datetime, running: list[datetime]) -> bool:
    """Return whether the debate of the step at ``as_of`` would read the review of a step
    still ``running`` (their instants): at ``weighting: calibrated`` a debate reads the
    reviews of the steps whose outcome (their instant plus the horizon) is known by its
    instant, so it starts only once those have ended and so are reviewed."""
    horizon = timedelta(minutes=backtest.horizon_minutes)
    return backtest.weighting == Weighting.CALIBRATED and any(
        at + horizon <= as_of for at in running
    )


def _start_steps(backtest: Backtest, *, first: int, count: int, running: list[datetime]) -> None:
    """Create and start the debates of steps ``first``.. (at most ``count``, and none
    that would read the review of a step still running: those of ``running``, the
    instants of the steps running, and those started here); at ``level: auto`` record a
    quiet step as skipped (L0) instead, which takes no room."""
    running = list(running)
    instants = step_instants(backtest.start, backtest.end, backtest.interval_minutes)
    quiet = QuietSteps(backtest, first) if backtest.level == DebateLevel.AUTO else None
    index, started = first, 0
    while started < count and index < backtest.steps_total:
        as_of = instants[index]
        if _reads_a_running_step(backtest, as_of, running):
            break
        reason = quiet.skip(as_of) if quiet is not None else None
        if reason is not None:
            BacktestStep.objects.create(
                backtest=backtest,
                index=index,
                as_of=as_of,
                skipped=StepSkip.QUIET_MARKET,
                skip_reason=reason,
            )
            index += 1
            continue
        data = DebateInput(
            name=f"{backtest.name[:150]} · step {index + 1}/{backtest.steps_total} "
            f"· {as_of:%Y-%m-%d %H:%M}",
            strategy=backtest.strategy_id,
            participants=list(backtest.participants),
            symbol=backtest.symbol,
            max_rounds=backtest.max_rounds,
            prompt_variant=backtest.prompt_variant,
            as_of=as_of,
            cache=backtest.cache,
            level=backtest.level,
            weighting=backtest.weighting,
            backtest_id=backtest.pk,
        )
        # The backtest's own quota (running backtests) admits its steps' debates, and
        # each tells the backtest it ended, or awaits its book, through the task it names.
        debate = debate_create(
            owner=backtest.owner,
            data=data,
            quota=False,
            caller_task="backtests.debate_moved",
            awaits_book=backtest.book == BookMode.AWARE,
        )
        BacktestStep.objects.create(backtest=backtest, index=index, as_of=as_of, debate=debate)
        debate_start(debate_id=debate.pk)
        running.append(as_of)
        index, started = index + 1, started + 1


def _finish(backtest: Backtest) -> None:
    """Store the report of a backtest whose every step has ended (and is reviewed), and
    complete it."""
    now = timezone.now()
    try:
        report = backtest_report(backtest=backtest, finished_at=now)
    except Exception as exc:
        logger.exception("backtest %s: the report could not be made", backtest.pk)
        _fail(backtest, code="report_failed", message=f"{type(exc).__name__}: {exc}")
        return
    headline = {
        rule["key"]: {
            name: rule["metrics"][name] for name in ("final_equity", "total_return", "max_drawdown")
        }
        for rule in report["rules"]
    }
    # Beside the rules: what the outcome reviews say, for the list and the admin.
    headline["evaluation"] = {
        "flip_rate": report["ledger"]["flip_rate"],
        "flip_accuracy": report["ledger"]["flip_accuracy"],
        "final_accuracy": report["ledger"]["final_accuracy"],
        "round1_accuracy": report["ledger"]["round1_accuracy"],
        "contaminated": report["leakage"]["contaminated"],
        "warnings": len(report["monitors"]["warnings"]),
    }
    transitions.completed(backtest, report=report, headline=headline, now=now)


def _fail(backtest: Backtest, *, code: str, message: str) -> None:
    """Fail a running backtest (under its row lock) with the reason."""
    logger.warning("backtest %s failed: %s", backtest.pk, message)
    if transitions.failed(backtest, code=code, message=message):
        debates_cancel(backtest)


def backtests_resume_stale(*, older_than: timedelta | None = None) -> list[int]:
    """Give a new tick chain to every active backtest whose ticks stopped for
    ``older_than`` (``BACKTEST_STALE_AFTER_S`` by default); return their ids."""
    cutoff = timezone.now() - (
        timedelta(seconds=settings.BACKTEST_STALE_AFTER_S) if older_than is None else older_than
    )
    resumed = []
    stale = Backtest.objects.filter(
        Q(ticked_at__lt=cutoff) | Q(ticked_at__isnull=True, created_at__lt=cutoff),
        status__in=ACTIVE_STATUSES,
    )
    for backtest_id, token in stale.values_list("pk", "tick_token"):
        backtest = Backtest(pk=backtest_id, tick_token=token)
        with transaction.atomic():
            if not transitions.chain_replaced(backtest, token=token, fresh=secrets.token_hex(8)):
                continue
            logger.warning("resuming backtest %s with a new tick chain", backtest_id)
            _send_tick(backtest, countdown=0)
        resumed.append(backtest_id)
    return resumed
