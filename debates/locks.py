"""Row locks of the debates app: every ``select_for_update`` of a debate goes through here.

A step that records its result takes its debate's row first, so what the run holds is
read exactly and two steps never both close a round; a cancel or a transition waits for
it. Call these inside ``transaction.atomic()``. SQLite has no row locks (Django leaves
the clause out there); its transactions let one writer in at a time anyway.
"""

from __future__ import annotations

from django.db.models import QuerySet

from arena.queries import one_or_none
from debates.models import Debate
from debates.state import STATE_COLUMNS


def lock_debate(
    *, debate_id: int, status: str | None = None, also: tuple[str, ...] = ()
) -> Debate | None:
    """Lock a debate's row for the transaction and return its state (``STATE_COLUMNS``),
    with the columns ``also`` (``strategy__...`` ones read from its strategy, whose row
    is not locked), or None when it is gone, or is not ``status`` when one is given.

    The lock is ``FOR NO KEY UPDATE``: it keeps out every other step and transition of
    the debate, not the inserts of rows that refer to it.
    """
    related = sorted({name.split("__")[0] for name in also if "__" in name})
    if related:
        debates = Debate.objects.select_for_update(no_key=True, of=("self",))
        debates = debates.select_related(*related)
    else:
        debates = Debate.objects.select_for_update(no_key=True)
    debates = debates.only(*STATE_COLUMNS, *also)
    if status is not None:
        debates = debates.filter(status=status)
    return one_or_none(debates, pk=debate_id)


def lock_debates_for_delete(debates: QuerySet[Debate]) -> list[int]:
    """Lock the rows of ``debates`` for the transaction, in primary-key order, and return
    their ids.

    The lock is ``FOR UPDATE``, which a delete takes anyway: it also keeps out the
    inserts of rows that refer to them (a turn, a ballot), so what is read of their
    children before they are deleted is all there is.
    """
    return list(debates.select_for_update().order_by("pk").values_list("pk", flat=True))
