"""What the debates app tells the apps above it, which it does not import.

``debate_ended`` is sent once the transaction that announced a debate's terminal state
(completed, failed, cancelled) commits, with ``debate_id``, ``status`` and ``as_of``
(the replayed instant, None for a live debate); it may be
sent again for the same debate (a later step of a completed debate announces its state
again), so a receiver must be idempotent. Receivers run in the process that ended the
debate, after the commit: they should be short (send a task, say).
"""

from django.dispatch import Signal

debate_ended = Signal()
