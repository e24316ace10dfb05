"""The execution step of a debate's plan: what trading does once a consensus is stored.

The debate run sends this step by its task name (``traders.debate_execute``) after the
consensus, so the debates app imports nothing of trading and no trading code runs in
the consensus transaction. The step's outcome is recorded on the debate's plan: done
(an execution was requested), skipped (nothing to execute) or failed (refused).
"""

from __future__ import annotations

import logging

from django.db import transaction

from arena.exceptions import ApplicationError
from debates.engine.plan import DONE, EXECUTION, FAILED, SKIPPED
from debates.engine.types import EXECUTABLE_ACTIONS
from debates.models import Debate, DebateStatus, Decision
from debates.services import debate_step_record
from debates.state import step_outcome
from strategies.models import ExecuteCoins
from traders import events
from traders.services import execution_request, paper_clock_advance

logger = logging.getLogger(__name__)

EXECUTION_KEY = (EXECUTION, None, None)


def debate_execute(*, debate_id: int) -> None:
    """Run the execution step of a completed debate that asked for automatic execution,
    once, and record its outcome on the debate's plan."""
    debate = (
        Debate.objects.filter(pk=debate_id, status=DebateStatus.COMPLETED)
        .select_related("owner", "trader")
        .defer("market_snapshot")
        .first()
    )
    if debate is None or not debate.auto_execute:
        return
    if step_outcome(debate, EXECUTION_KEY) is not None:
        return  # the step ran already
    status, detail = auto_execute(debate=debate)
    debate_step_record(debate_id=debate_id, key=EXECUTION_KEY, status=status, detail=detail)


def executed_decisions(debate: Debate) -> list[Decision]:
    """Return the decisions an automatic execution of ``debate`` acts on, the primary
    first: every executable one, or the primary's alone, as its strategy says
    (``execute_coins``; the primary alone without a strategy)."""
    executable = [
        decision
        for decision in Decision.objects.filter(debate_id=debate.pk).order_by(
            "-is_primary", "symbol"
        )
        if decision.action in EXECUTABLE_ACTIONS
    ]
    strategy = debate.strategy
    if strategy is not None and strategy.execute_coins == ExecuteCoins.ALL:
        return executable
    return [decision for decision in executable if decision.is_primary]


def auto_execute(*, debate: Debate) -> tuple[str, dict]:
    """Execute the decisions of ``debate`` its strategy executes (``executed_decisions``);
    return the step's status and detail.

    A replay's paper trader first has its clock moved to the debate's instant, filling
    the stops and targets prices crossed since, whatever the decision. A hold or wait
    decision executes nothing. A refusal (a stopped trader, say) is announced on the
    debate's stream as an ``error`` event and never undoes the consensus; the step fails
    when every execution was refused.
    """
    trader = debate.trader
    if trader is None:
        return SKIPPED, {"reason": "no trader"}
    if debate.as_of is not None and trader.is_dataset_paper:
        paper_clock_advance(trader_id=trader.pk, to=debate.as_of)
    decisions = executed_decisions(debate)
    if not decisions:
        return SKIPPED, {"reason": "nothing to execute"}
    executions, refusals = [], []
    for decision in decisions:
        try:
            with transaction.atomic():
                execution = execution_request(
                    owner=debate.owner,
                    debate_id=debate.pk,
                    trader_id=trader.pk,
                    symbol=decision.symbol,
                    trigger="auto",
                )
            executions.append(execution.pk)
        except ApplicationError as exc:
            logger.warning("debate %s: automatic execution refused: %s", debate.pk, exc.message)
            with transaction.atomic():
                events.execution_refused(debate.pk, code=exc.code, message=exc.message)
            refusals.append({"symbol": decision.symbol, "code": exc.code, "message": exc.message})
    if not executions:
        return FAILED, {"code": refusals[0]["code"], "message": refusals[0]["message"]}
    detail: dict = {"execution": executions[0]}
    if len(decisions) > 1:
        detail.update(executions=executions, refused=refusals)
    return DONE, detail
