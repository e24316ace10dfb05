"""The debate state machine: which transitions exist and which actions each state allows.

Transitions are applied as compare-and-set updates by ``debates.services``; this module
only states the rules, so that services, the API and the admin read them from one place.
"""

from __future__ import annotations

from debates.engine.types import EXECUTABLE_ACTIONS
from debates.models import ACTIVE_STATUSES, TERMINAL_STATUSES, Debate, DebateStatus

# The columns of a debate's state (SPEC 5.6): all that ``available_actions`` and a
# ``status`` event read of a debate, with its decisions.
STATE_COLUMNS = ("status", "phase", "current_round", "current_speaker", "error")

# The states each action may start from (SPEC 5.6).
ACTION_SOURCES: dict[str, tuple[str, ...]] = {
    "start": (DebateStatus.PENDING,),
    "cancel": (DebateStatus.PENDING, *ACTIVE_STATUSES),
    "retry": (DebateStatus.FAILED,),
    "execute": (DebateStatus.COMPLETED,),
    "delete": (DebateStatus.PENDING, *TERMINAL_STATUSES),
}


def available_actions(debate: Debate) -> list[str]:
    """Return the actions a client may take now, in a stable order.

    ``execute`` is offered when the debate is completed and one of its decisions is
    executable and not executed yet.
    """
    actions = [name for name, sources in ACTION_SOURCES.items() if debate.status in sources]
    if "execute" in actions and not _has_unexecuted_executable_decision(debate):
        actions.remove("execute")
    return actions


def _has_unexecuted_executable_decision(debate: Debate) -> bool:
    for decision in debate.decisions.all():
        if decision.action in EXECUTABLE_ACTIONS and not hasattr(decision, "execution"):
            return True
    return False
