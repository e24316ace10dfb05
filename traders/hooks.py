"""What the debate run asks of trading once a consensus is stored."""

from __future__ import annotations

import logging

from django.db import transaction

from arena.exceptions import ApplicationError
from debates.engine.types import EXECUTABLE_ACTIONS
from debates.models import Debate, Decision
from traders import events
from traders.services import execution_request

logger = logging.getLogger(__name__)


def auto_execute(*, debate_id: int) -> None:
    """Execute the primary decision of a debate that asked for automatic execution.

    Runs inside the consensus transaction: the execution is recorded with the consensus
    and its submission is enqueued once both commit. A hold or wait decision executes
    nothing. A refusal (a stopped trader, say) is announced on the debate's stream as an
    ``error`` event and never undoes the consensus.
    """
    debate = (
        Debate.objects.filter(pk=debate_id).select_related("owner").defer("market_snapshot").first()
    )
    if debate is None or not debate.auto_execute or debate.trader_id is None:
        return
    primary = Decision.objects.filter(debate_id=debate_id, is_primary=True).first()
    if primary is None or primary.action not in EXECUTABLE_ACTIONS:
        return
    try:
        with transaction.atomic():
            execution_request(
                owner=debate.owner,
                debate_id=debate_id,
                trader_id=debate.trader_id,
                trigger="auto",
            )
    except ApplicationError as exc:
        logger.warning("debate %s: automatic execution refused: %s", debate_id, exc.message)
        events.execution_refused(debate_id, code=exc.code, message=exc.message)
