"""What the debate run asks of trading once a consensus is stored."""


def auto_execute(*, debate_id: int) -> None:
    """Execute the primary decision of a debate that asked for automatic execution.

    Execution is not built yet: nothing is sent to any exchange, and the debate's
    decisions stay unexecuted.
    """
