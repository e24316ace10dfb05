"""What the debates app does when a row its debates show changes: a strategy (its name
and summary in a debate's detail), an AI model (a seat's or the judge's name), a
schedule deleted (a debate's ``schedule`` becomes null).

A finished debate's detail and list row are stored under its stream's version and its
owner's (``arena.sse.owner_channel``); such a change moves the owner's version once it
commits, through the admin as through the services, so they are made again.
"""

from __future__ import annotations

from typing import Any

from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from arena.sse import channel_touch_on_commit, owner_channel
from debates.models import AIModel, Schedule
from strategies.models import Strategy


@receiver([post_save, post_delete], sender=Strategy)
@receiver(post_save, sender=AIModel)
@receiver(post_delete, sender=Schedule)
def shown_row_changed(sender: Any, instance: Any, **kwargs: Any) -> None:
    channel_touch_on_commit(owner_channel(instance.owner_id))
