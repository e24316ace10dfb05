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


def auto_execute(*, debate: Debate) -> tuple[str, dict]:
    """Execute the primary decision of ``debate``; return the step's status and detail.

    A replay's paper trader first has its clock moved to the debate's instant, filling
    the stops and targets prices crossed since, whatever the decision. A hold or wait
    decision executes nothing. A refusal (a stopped trader, say) is announced on the
    debate's stream as an ``error`` event and never undoes the consensus.
    """
    trader = debate.trader
    if trader is None:
        return SKIPPED, {"reason": "no trader"}
    if debate.as_of is not None and trader.is_dataset_paper:
        paper_clock_advance(trader_id=trader.pk, to=debate.as_of)
    primary = Decision.objects.filter(debate_id=debate.pk, is_primary=True).first()
    if primary is None or primary.action not in EXECUTABLE_ACTIONS:
        return SKIPPED, {"reason": "nothing to execute"}
    try:
        with transaction.atomic():
            execution = execution_request(
                owner=debate.owner, debate_id=debate.pk, trader_id=trader.pk, trigger="auto"
            )
    except ApplicationError as exc:
        logger.warning("debate %s: automatic execution refused: %s", debate.pk, exc.message)
        with transaction.atomic():
            events.execution_refused(debate.pk, code=exc.code, message=exc.message)
        return FAILED, {"code": exc.code, "message": exc.message}
    return DONE, {"execution": execution.pk}
