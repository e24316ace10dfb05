"""What backtests do when a debate tells it ended (``debates.signals``)."""

from __future__ import annotations

from typing import Any

from django.dispatch import receiver

from backtests import services
from debates.signals import debate_ended


@receiver(debate_ended, dispatch_uid="backtests.debate_ended")
def on_debate_ended(sender: Any, debate_id: int, as_of: Any = None, **kwargs: Any) -> None:
    """Advance the backtest whose step the debate was, if any: a step always replays an
    instant, so a live debate's end reads nothing."""
    if as_of is not None:
        services.debate_ended(debate_id=debate_id)
