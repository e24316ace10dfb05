"""What trading does when a trader is deleted: the debates that named it show no trader
(``Debate.trader`` becomes null), so the owner's channel version moves
(``debates.receivers`` says why) and their stored renderings are made again."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete
from django.dispatch import receiver

from arena.sse import channel_touch_on_commit, owner_channel
from traders.models import Trader


@receiver(post_delete, sender=Trader)
def trader_deleted(sender: Any, instance: Trader, **kwargs: Any) -> None:
    channel_touch_on_commit(owner_channel(instance.owner_id))
